"""The debugger and the replay checker from Python: breakpoints by slot index and value name with numpy
values, refused breakpoints, and check_replay's report on a healthy model and on one producing -inf."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import sdx


def _chain(middle="Sigmoid"):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"), helper.make_node(middle, ["a"], ["b"], name="mid"),
             helper.make_node("Neg", ["b"], ["y"], name="neg")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    o = sdx.SessionOptions()
    o.optimizer_enabled = False
    return sdx.InferenceSession(m.SerializeToString(), o)


def test_breakpoints_by_name_and_slot():
    s = _chain()
    x = np.array([[-1, 0, 1, 2]], np.float32)
    plan = s.introspect({"x": x})
    slot_of = {row["name"]: row["index"] for row in plan["slots"]}
    hits = []
    out = s.debug({"x": x}, ["b", slot_of["a"]], lambda slot, name, op, node, v: hits.append((slot, name, op, node, v)))
    assert [h[1] for h in hits] == ["a", "b"]
    assert hits[0][0] == slot_of["a"] and hits[0][2:4] == ("Relu", "relu")
    np.testing.assert_array_equal(hits[0][4], np.maximum(x, 0))
    assert hits[1][2] == "Sigmoid" and isinstance(hits[1][4], np.ndarray)
    np.testing.assert_allclose(out[0], -1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)
    with pytest.raises(sdx.SdxError, match="no value named 'zz'"):
        s.debug({"x": x}, ["zz"], print)
    with pytest.raises(sdx.InvalidArgument, match="graph input"):
        s.debug({"x": x}, ["x"], print)


def test_check_replay_reports():
    ok = _chain().check_replay({"x": np.array([[-1, 0, 1, 2]], np.float32)})
    assert ok["replayed"] and not ok["diverged"] and ok["compared"] == 3 and not ok["nonfinite"]
    assert "matches slot by slot" in ok["summary"]
    inf = _chain("Log").check_replay({"x": np.array([[-1, 0, 1, 2]], np.float32)})  # log(relu(-1)) = -inf
    assert inf["nonfinite"] and inf["first_nonfinite"]["value"] == "b" and inf["first_nonfinite"]["op"] == "Log"
    assert inf["reference_nonfinite"] and not inf["diverged"]
