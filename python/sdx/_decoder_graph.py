"""A with-past decoder's graph, read for the decode loop: the values that hold each step's new K/V (what the
model concatenates after past_key_values.N.key/value to make present.N.*), exposed as extra graph outputs so
that a bucketed decode step (sdx.generate's kv_bucket) copies out [1, H, 1, D] per layer instead of the
whole present.* [1, H, P + 1, D] (2 x 8 MiB per step at P = 1024 for a 4-layer d-256 model).

    edited, presents, news = with_new_kv_outputs("gpt2.onnx")   # None when the graph is not of that form
    sess = sdx.InferenceSession(edited)                         # news[i]: the new K/V of presents[i]
"""
from __future__ import annotations

import os
from typing import Any

NEW_KV_PREFIX = "sdx_new_kv."


def with_new_kv_outputs(path: str | os.PathLike) -> tuple[bytes, list, list] | None:
    """(the model's bytes with one more output per present.*: the Concat input after its past; the present
    names; the new outputs' names in the same order). None when onnx is missing, the model keeps weights in
    external files (they do not travel in bytes), or a present.* is not Concat(past, new) on the KV axis."""
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(os.fspath(path), load_external_data=False)
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        return None
    present_names = [o.name for o in model.graph.output if o.name.startswith("present.")]
    if not present_names:
        return None
    producer = {o: n for n in model.graph.node for o in n.output}
    outputs = {o.name: o for o in model.graph.output}
    names = []
    for present in present_names:
        node = producer.get(present)
        if node is None or node.op_type != "Concat" or len(node.input) != 2 or present not in outputs:
            return None
        if not node.input[0].startswith("past_key_values.") or not _axis_is(node, 2):
            return None
        name = NEW_KV_PREFIX + present
        names.append(name)
        model.graph.node.append(onnx.helper.make_node("Identity", [node.input[1]], [name], name=name))
        elem = outputs[present].type.tensor_type.elem_type
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, elem, None))
    return model.SerializeToString(), present_names, names


def _axis_is(node: Any, axis: int) -> bool:
    for a in node.attribute:
        if a.name == "axis":
            return a.i in (axis, axis - 4)
    return False
