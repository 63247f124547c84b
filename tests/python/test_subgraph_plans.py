"""If/Loop/Scan bodies as plans of their own (runtime/body_session.h, SessionOptions.subgraph_plans): the
same results as interpreting them, an If on a shape-derived condition captured with the steps after it,
and the fallbacks (a branch whose output shape changes, a loop whose carried value grows)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx

OPSET = [helper.make_opsetid("", 17)]


def _session(model, subgraph_plans=True):
    opts = sdx.SessionOptions()
    opts.subgraph_plans = subgraph_plans
    return sdx.InferenceSession(model.SerializeToString(), opts)


def _const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def _shape_if_model():
    """y = MatMul(If(N == 1, Relu(x * w), x - w), m): the condition comes from x's shape (silero's pattern)."""
    w = np.linspace(-1, 1, 4, dtype=np.float32)
    m = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["t0"]), helper.make_node("Relu", ["t0"], ["t"])], "then", [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Equal", ["n", "one"], ["c"]),
        helper.make_node("If", ["c"], ["b"], then_branch=then_g, else_branch=else_g),
        helper.make_node("MatMul", ["b", "m"], ["y"]),
    ]
    g = helper.make_graph(nodes, "shape_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                          [_const("w", w), _const("m", m), _const("zero", np.int64(0)), _const("one", np.int64(1))])
    ref = lambda x: (np.maximum(x * w, 0) if x.shape[0] == 1 else x - w) @ m
    return helper.make_model(g, opset_imports=OPSET), ref


def test_if_on_a_shape_condition_replays_with_the_steps_after_it():
    model, ref = _shape_if_model()
    sess, interp = _session(model), _session(model, subgraph_plans=False)
    rng = np.random.default_rng(0)
    for n in (1, 2):
        for i in range(4):
            x = rng.standard_normal((n, 4)).astype(np.float32)
            (y,), rep = sess.run_with_report(None, {"x": x})
            np.testing.assert_allclose(y, ref(x), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(y, interp.run(None, {"x": x})[0], rtol=1e-6, atol=1e-7)
        # The If is no gap once its condition is fixed by the shapes: nothing after it runs eagerly.
        assert rep["phase"] == "REPLAYING" and rep["fallback_reason"] is None, rep
        assert rep["gap_steps"] == 0 and rep["slot_by_slot_steps"] == 0, rep


def test_if_on_a_data_condition_takes_either_branch():
    model, _ = _shape_if_model()
    # The same branches on a condition fed by the caller: a gap, each call picks its branch.
    g = model.graph
    iff = [n for n in g.node if n.op_type == "If"][0]
    iff.input[0] = "cond"
    del g.node[:3]
    g.input.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    sess, interp = _session(model), _session(model, subgraph_plans=False)
    rng = np.random.default_rng(1)
    for i in range(8):
        x = rng.standard_normal((2, 4)).astype(np.float32)
        feeds = {"x": x, "cond": np.array(i % 3 == 0)}
        np.testing.assert_allclose(sess.run(None, feeds)[0], interp.run(None, feeds)[0], rtol=1e-6, atol=1e-7)


def test_branch_whose_output_shape_changes_stops_replaying_and_stays_right():
    # then: NonZero(x) on a shape-fixed condition: the If looks capturable, but its output's shape follows
    # the data. A replay that sees a new shape falls back; every result stays right.
    then_g = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"])], "then", [],
                               [helper.make_tensor_value_info("nz", TensorProto.INT64, None)])
    else_g = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz2"])], "else", [],
                               [helper.make_tensor_value_info("nz2", TensorProto.INT64, None)])
    nodes = [
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Greater", ["n", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["b"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["b", "one"], ["y"]),
    ]
    g = helper.make_graph(nodes, "nz_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
                          [_const("zero", np.int64(0)), _const("one", np.int64(1))])
    sess = _session(helper.make_model(g, opset_imports=OPSET))
    rng = np.random.default_rng(2)
    for i in range(8):
        x = (rng.random(6) < (0.2 + 0.1 * i)).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.stack(np.nonzero(x)) + 1)


def _loop_model(grow):
    """Loop M times: v = v * 0.5 + x (fixed shape), or with grow, v = Concat(v, x) (a new shape each time)."""
    if grow:
        body_nodes = [helper.make_node("Concat", ["v_in", "x"], ["v_out"], axis=0)]
    else:
        body_nodes = [helper.make_node("Mul", ["v_in", "half"], ["h"]), helper.make_node("Add", ["h", "x"], ["v_out"])]
    body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)], "loop",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []),
         helper.make_tensor_value_info("v0", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, None)], [_const("half", np.float32(0.5))])
    return helper.make_model(g, opset_imports=OPSET)


@pytest.mark.parametrize("grow", [False, True])
def test_loop_body_plans_match_the_interpreter(grow):
    model = _loop_model(grow)
    sess, interp = _session(model), _session(model, subgraph_plans=False)
    rng = np.random.default_rng(3)
    for trips in (1, 5, 40):
        x = rng.standard_normal(3).astype(np.float32)
        v0 = rng.standard_normal(3).astype(np.float32)
        feeds = {"M": np.array(trips, dtype=np.int64), "v0": v0, "x": x}
        (v,) = sess.run(None, feeds)
        want = v0
        for _ in range(trips):
            want = np.concatenate([want, x]) if grow else want * np.float32(0.5) + x
        np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(v, interp.run(None, feeds)[0])


@pytest.mark.parametrize("grow", [False, True])
def test_subgraph_reports_say_whether_each_body_replays(grow):
    """InferenceSession.subgraph_reports(): a fixed-shape loop body replays its plan per iteration; a body whose
    carried value grows goes back to the interpreter and says why."""
    sess = _session(_loop_model(grow))
    feeds = {"M": np.array(40, dtype=np.int64), "v0": np.ones(3, np.float32), "x": np.ones(3, np.float32)}
    sess.run(None, feeds)
    (r,) = sess.subgraph_reports()
    assert (r["body"], r["attribute"], r["owner_op"]) == ("body", "body", "Loop")
    if grow:
        assert not r["plan"] and "input shapes changed on" in r["why"], r
        assert r["calls"] == 16 and r["replays"] == 0  # the churn window, then interpreted
    else:
        assert r["plan"] and r["why"] == "", r
        assert r["calls"] == 40 and r["new_plans"] == 1 and r["replays"] >= 37, r
    assert _session(_loop_model(grow), subgraph_plans=False).subgraph_reports() == []


def test_option_is_read_from_the_environment(monkeypatch):
    assert sdx.SessionOptions().subgraph_plans is True
    model, ref = _shape_if_model()
    monkeypatch.setenv("SDX_SUBGRAPH_PLANS", "0")
    sess = sdx.InferenceSession(model.SerializeToString())
    x = np.ones((2, 4), dtype=np.float32)
    for _ in range(3):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref(x), rtol=1e-5)
    monkeypatch.setenv("SDX_SUBGRAPH_PLANS", "maybe")
    with pytest.raises(Exception, match="SDX_SUBGRAPH_PLANS"):
        sdx.InferenceSession(model.SerializeToString())
