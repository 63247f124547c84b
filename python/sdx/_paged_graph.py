"""The paged rewrite of a with-past decoder (issue 21): the model as exported, with its past KV read from a
shared pool of slots (a paged KV cache, _kv_pool.py) instead of a past tensor per sequence, so a standard
exported decoder runs on the pool unchanged.

    edited = paged_decoder("gpt2.onnx")          # None when the graph is not of that form
    sess = sdx.InferenceSession(edited.model)    # inputs: input_ids, attention_mask, [position_ids],
                                                 # sdx_kv_cache.N.key/value [H, slots, D], sdx_slot_map [B, P],
                                                 # [sdx_logit_rows [R]]

What changes, per past_key_values.N.key / .value input [batch, H, past, D]:
  - the input becomes sdx_kv_cache.N.key [H, kv_slots, D] (the pool's array for that layer and kind);
  - Concat(past, new, axis 2) becomes sdx.PagedConcat(cache, sdx_slot_map, new) under the same output name:
    the same [batch, H, past + seq, D] tensor, its past rows read from the slots sdx_slot_map names (one
    int64 per past token, [batch, past]; -1: an empty slot, zeros; -2 - j: this call's new token j, so the
    tokens of a prompt can be rows of their own, a packed prefill: _paged_decode.py);
  - the past's shape, read by the mask arithmetic (Shape -> Gather), comes from sdx_slot_map's shape (batch
    and past) and the fixed H and D.
The engine then fuses the exporter's attention over PagedConcat into sdx.PagedAttention, which reads the pool
in place (no gathered tensor, no copy of the past per step), and the pool arrays, passed at the same
address every step, are read where they are (no input copy). Each step's new K/V are extra outputs
(sdx_new_kv.present.N.*), written into the pool by the caller; present.* stay (gathered when requested).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ._decoder_graph import NEW_KV_PREFIX

CACHE_PREFIX = "sdx_kv_cache."
SLOT_MAP = "sdx_slot_map"
LOGIT_ROWS = "sdx_logit_rows"     # input [R] int64: positions of the flattened [B * S] tokens to take logits of
ROW_LOGITS = "sdx_logits_rows"    # output [R, vocab]: the LM head on those positions only
_PAST = re.compile(r"past_key_values\.(\d+)\.(key|value)$")


@dataclass
class PagedGraph:
    model: bytes          # the rewritten model
    cache_names: list     # per past_key_values input, in the model's input order: its pool input
    past_names: list      # the past_key_values inputs they replace
    new_kv_names: list    # per past input: the output holding the step's new K/V [B, H, S, D]
    heads: int
    head_dim: int
    row_logits: bool = False  # the model has LOGIT_ROWS -> ROW_LOGITS (its logits are MatMul(hidden, W))


def paged_decoder(path: str | os.PathLike) -> "PagedGraph | None":
    """The paged form of the decoder at `path`, or None when onnx is missing, weights are external, or a past
    input is read by something other than Concat(past, new) on axis 2 and Shape (-> Gather of a constant
    index)."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        return None
    model = onnx.load(os.fspath(path), load_external_data=False)
    g = model.graph
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in g.initializer):
        return None
    pasts = [i for i in g.input if _PAST.match(i.name)]
    if not pasts:
        return None
    dims = pasts[0].type.tensor_type.shape.dim
    if len(dims) != 4 or not dims[1].HasField("dim_value") or not dims[3].HasField("dim_value"):
        return None
    heads, head_dim = dims[1].dim_value, dims[3].dim_value
    consts = {t.name: t for t in g.initializer}
    consts.update({n.output[0]: a.t for n in g.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"})
    readers: dict = {}
    for n in g.node:
        for name in n.input:
            readers.setdefault(name, []).append(n)
    produced = {o for n in g.node for o in n.output}
    if SLOT_MAP in produced or any(i.name == SLOT_MAP for i in g.input):
        return None

    new_nodes: list = []
    replaced: dict = {}   # id(node) -> [replacement nodes]
    removed: set = set()
    cache_names, past_names, new_kv = [], [], []
    fresh = _Names(produced | {i.name for i in g.input} | set(consts))
    slot_shape = fresh("sdx_slot_map_shape")
    new_nodes.append(helper.make_node("Shape", [SLOT_MAP], [slot_shape], name=slot_shape))
    for past in pasts:
        cache = CACHE_PREFIX + past.name[len("past_key_values."):]
        concat = None
        for n in readers.get(past.name, []):
            if n.op_type == "Concat" and list(n.input[:1]) == [past.name] and len(n.input) == 2 and _axis(n) in (2, -2):
                if concat is not None:
                    return None
                concat = n
                replaced[id(n)] = [helper.make_node("PagedConcat", [cache, SLOT_MAP, n.input[1]], list(n.output),
                                                    name=(n.name or cache) + "/paged", domain="sdx")]
            elif n.op_type == "Shape" and not n.attribute:
                subs = _shape_readers(n, readers, consts, slot_shape, heads, head_dim, fresh, helper, TensorProto)
                if subs is None:
                    return None
                for gather, nodes in subs:
                    replaced[id(gather)] = nodes
                removed.add(id(n))
            else:
                return None
        if concat is None:
            return None
        name = NEW_KV_PREFIX + concat.output[0]
        if name not in produced:  # a model _decoder_graph.py already gave these outputs keeps its own
            new_nodes.append(helper.make_node("Identity", [concat.input[1]], [name], name=name))
        cache_names.append(cache)
        past_names.append(past.name)
        new_kv.append(name)

    nodes = []
    for n in g.node:
        if id(n) in removed:
            continue
        nodes.extend(replaced.get(id(n), [n]))
    del g.node[:]
    g.node.extend(new_nodes[:1] + nodes + new_nodes[1:])
    inputs = []
    slot_map_added = False
    for i in g.input:
        m = _PAST.match(i.name)
        if not m:
            inputs.append(i)
            continue
        d = i.type.tensor_type.shape.dim
        inputs.append(helper.make_tensor_value_info(CACHE_PREFIX + i.name[len("past_key_values."):],
                                                    i.type.tensor_type.elem_type, [heads, "kv_slots", head_dim]))
        if not slot_map_added:
            inputs.append(helper.make_tensor_value_info(SLOT_MAP, TensorProto.INT64, [_dim(d[0]), _dim(d[2])]))
            slot_map_added = True
    del g.input[:]
    g.input.extend(inputs)
    outputs = {o.name: o for o in g.output}
    for past, name in zip(past_names, new_kv):
        if name in outputs:
            continue
        present = name[len(NEW_KV_PREFIX):]
        elem = outputs[present].type.tensor_type.elem_type if present in outputs else TensorProto.FLOAT
        g.output.append(helper.make_tensor_value_info(name, elem, None))
    rows = _add_row_logits(g, helper, TensorProto, fresh)
    if not any(o.domain == "sdx" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("sdx", 1))
    return PagedGraph(model.SerializeToString(), cache_names, past_names, new_kv, heads, head_dim, rows)


def _add_row_logits(g: Any, helper: Any, tp: Any, fresh: "_Names") -> bool:
    """When logits = MatMul(hidden [B, S, d], W): an input LOGIT_ROWS [R] and an output ROW_LOGITS =
    MatMul(Gather(Flatten(hidden) [B * S, d], LOGIT_ROWS), W) [R, vocab], so a call computes the LM head for the
    positions it samples from (each prompt's last), not for every position (on GPT-2 small, the head is 77 MFLOP
    a position). The decode loop checks it against logits once."""
    producer = next((n for n in g.node if "logits" in n.output), None)
    out = next((o for o in g.output if o.name == "logits"), None)
    if producer is None or producer.op_type != "MatMul" or out is None or \
            len(out.type.tensor_type.shape.dim) not in (0, 3):
        return False
    flat, picked = fresh("sdx_hidden_tokens"), fresh("sdx_hidden_rows")
    g.node.extend([
        helper.make_node("Flatten", [producer.input[0]], [flat], name=flat, axis=2),
        helper.make_node("Gather", [flat, LOGIT_ROWS], [picked], name=picked, axis=0),
        helper.make_node("MatMul", [picked, producer.input[1]], [ROW_LOGITS], name=ROW_LOGITS)])
    g.input.append(helper.make_tensor_value_info(LOGIT_ROWS, tp.INT64, ["logit_rows"]))
    g.output.append(helper.make_tensor_value_info(ROW_LOGITS, tp.FLOAT, None))
    return True


class _Names:
    def __init__(self, taken: set) -> None:
        self.taken = set(taken)

    def __call__(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


def _shape_readers(shape: Any, readers: dict, consts: dict, slot_shape: str, heads: int, head_dim: int,
                   fresh: _Names, helper: Any, tp: Any) -> list | None:
    """Replacements for the readers of Shape(past): each must be Gather(shape, constant scalar index) on axis
    0; index 0 / 2 read sdx_slot_map's shape (batch / past), 1 / 3 are the fixed heads / head_dim."""
    from onnx import numpy_helper

    out = []
    for r in readers.get(shape.output[0], []):
        if r.op_type != "Gather" or r.input[0] != shape.output[0] or r.input[1] not in consts or _axis(r) not in (0, None):
            return None
        idx = numpy_helper.to_array(consts[r.input[1]])
        if idx.ndim != 0 or int(idx) not in (0, 1, 2, 3, -4, -3, -2, -1):
            return None
        i = int(idx) % 4
        if i in (0, 2):
            c = fresh("sdx_slot_map_dim")
            nodes = [helper.make_node("Constant", [], [c], name=c,
                                      value=helper.make_tensor(c, tp.INT64, [], [0 if i == 0 else 1])),
                     helper.make_node("Gather", [slot_shape, c], list(r.output), name=r.name or c, axis=0)]
        else:
            nodes = [helper.make_node("Constant", [], list(r.output), name=r.name or fresh("sdx_kv_dim"),
                                      value=helper.make_tensor(r.output[0], tp.INT64, [], [heads if i == 1 else head_dim]))]
        out.append((r, nodes))
    return out


def _axis(node: Any) -> int | None:
    for a in node.attribute:
        if a.name == "axis":
            return a.i
    return None


def _dim(d: Any) -> Any:
    return d.dim_value if d.HasField("dim_value") else (d.dim_param or None)


class _Arg:
    def __init__(self, name: str, shape: list, type: str) -> None:
        self.name, self.shape, self.type = name, shape, type


def paged_info(sess: Any) -> "PagedGraph | None":
    """The PagedGraph a session was made from (model None), read off its inputs and outputs; None when the
    session is not a paged decoder's."""
    inputs = sess.get_inputs() if hasattr(sess, "get_inputs") else []
    if not any(a.name == SLOT_MAP for a in inputs):
        return None
    caches = [a for a in inputs if a.name.startswith(CACHE_PREFIX)]
    outs = {a.name for a in sess.get_outputs()}
    pasts = ["past_key_values." + a.name[len(CACHE_PREFIX):] for a in caches]
    news = [NEW_KV_PREFIX + "present." + a.name[len(CACHE_PREFIX):] for a in caches]
    if not caches or any(n not in outs for n in news) or len(caches[0].shape) != 3:
        return None
    return PagedGraph(b"", [a.name for a in caches], pasts, news, caches[0].shape[0], caches[0].shape[2],
                      ROW_LOGITS in outs)


class OriginalIO:
    """A paged decoder's session seen with the inputs of the model it was made from (past_key_values.N.*
    [batch_size, H, past_sequence_length, D] in place of the pool inputs and the slot map), for DecoderLayout."""

    def __init__(self, sess: Any) -> None:
        self.sess = sess

    def get_inputs(self) -> list:
        out = []
        for a in self.sess.get_inputs():
            if a.name in (SLOT_MAP, LOGIT_ROWS):
                continue
            if a.name.startswith(CACHE_PREFIX):
                a = _Arg("past_key_values." + a.name[len(CACHE_PREFIX):],
                         ["batch_size", a.shape[0], "past_sequence_length", a.shape[2]], a.type)
            out.append(a)
        return out

    def get_outputs(self) -> list:
        return self.sess.get_outputs()
