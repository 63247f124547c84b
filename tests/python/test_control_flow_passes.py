"""The optimizer across control-flow boundaries, end to end: inline_constant_ifs (an If on a constant
condition, or one that folds to a constant, becomes its taken branch) and hoist_loop_invariants (Loop body
work no iteration changes runs once, before the Loop). Models are built with onnx.helper; outputs equal
onnxruntime's with the optimizer on and off, and the rewrites show in the optimization report and in
`sdx inspect --optimized -v`, under the passes' names."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx

ort = pytest.importorskip("onnxruntime")

OPSET = [helper.make_opsetid("", 17)]
H = 8


def _session(model, optimizer=True):
    opts = sdx.SessionOptions()
    opts.optimizer_enabled = optimizer
    return sdx.InferenceSession(model.SerializeToString(), opts)


def _ort(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _const_node(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name + "_v"))


def _check(model, feeds, rtol=1e-5, atol=1e-6, empty_outputs=()):
    """Runs sdx optimized, sdx unoptimized and onnxruntime on feeds; returns the optimized session's report.
    Outputs in empty_outputs are only checked to be empty against onnxruntime (sdx's Loop gives a 0-iteration
    scan output the shape [0], onnxruntime [0, *body dims]: the Loop kernel's, not the optimizer's), and
    equal between the two sdx sessions."""
    want = _ort(model).run(None, feeds)
    opt, plain = _session(model), _session(model, optimizer=False)
    runs = {}
    for sess, what in ((opt, "optimized"), (plain, "unoptimized")):
        got = runs[what] = sess.run(None, feeds)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            if k in empty_outputs:
                assert g.size == 0 and w.size == 0, what
                continue
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)
    for a, b in zip(runs["optimized"], runs["unoptimized"]):
        assert a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)
    return opt.optimization_report()


def _if_model():
    """y = Tanh(If(sr == 16000, net(x), x * 0.5)) with sr a constant (the exporter writes it as a Constant node
    and compares it to a Constant), net(x) = Relu(x @ W + b) inside the branch with W, b as branch Constant
    nodes, an outer-scope read of `bias` and a nested If on x's first dimension (not constant: N is symbolic)
    that reads a branch value."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((H, H)).astype(np.float32)
    b = rng.standard_normal(H).astype(np.float32)
    f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, None)  # noqa: E731
    inner_then = helper.make_graph([helper.make_node("Add", ["r", "x"], ["it"])], "inner_then", [], [f("it")])
    inner_else = helper.make_graph([helper.make_node("Sub", ["r", "x"], ["ie"])], "inner_else", [], [f("ie")])
    then_g = helper.make_graph(
        [_const_node("W", w), _const_node("B", b),
         helper.make_node("MatMul", ["x", "W"], ["mm"]),
         helper.make_node("Add", ["mm", "B"], ["mb"]),
         helper.make_node("Add", ["mb", "bias"], ["mbb"]),  # `bias`: the main graph's initializer
         helper.make_node("Relu", ["mbb"], ["r"]),
         helper.make_node("Shape", ["x"], ["xs"]),
         _const_node("i0", np.int64(0)),
         helper.make_node("Gather", ["xs", "i0"], ["n"], axis=0),
         _const_node("one", np.int64(1)),
         helper.make_node("Equal", ["n", "one"], ["is1"]),
         helper.make_node("If", ["is1"], ["net"], then_branch=inner_then, else_branch=inner_else)],
        "then", [], [f("net")])
    else_g = helper.make_graph([_const_node("half", np.float32(0.5)), helper.make_node("Mul", ["x", "half"], ["e"])],
                               "else", [], [f("e")])
    nodes = [_const_node("sr", np.array([16000], np.int64)),
             _const_node("sr16k", np.array([16000], np.int64)),
             helper.make_node("Equal", ["sr", "sr16k"], ["is16k_1"]),
             _const_node("ax0", np.array([0], np.int64)),
             helper.make_node("Squeeze", ["is16k_1", "ax0"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["branch"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Tanh", ["branch"], ["y"])]
    g = helper.make_graph(nodes, "const_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", H])],
                          [numpy_helper.from_array(rng.standard_normal(H).astype(np.float32), "bias")])
    return helper.make_model(g, opset_imports=OPSET)


def test_an_if_on_a_folded_constant_is_inlined():
    model = _if_model()
    rng = np.random.default_rng(1)
    for n in (1, 3):  # the nested If takes each branch
        rep = _check(model, {"x": rng.standard_normal((n, H)).astype(np.float32)})
    assert rep["rewrites_per_pass"]["inline_constant_ifs"] == 1
    assert rep["ops_before"]["If"] == 1 and rep["ops_after"]["If"] == 1  # the nested one, now in the main graph
    assert rep["ops_after"].get("Mul", 0) == 0  # the else branch is gone
    # The same model with the optimizer off keeps the If (the count is the pass's, not the loader's).
    assert _session(model, optimizer=False).optimization_report()["rewrites_per_pass"]["inline_constant_ifs"] == 0


def test_an_if_on_an_input_is_left_alone():
    model = _if_model()
    g = model.graph
    # sr becomes a graph input: the condition is known only at run time.
    del g.node[0]
    g.input.append(helper.make_tensor_value_info("sr", TensorProto.INT64, [1]))
    x = np.random.default_rng(2).standard_normal((2, H)).astype(np.float32)
    for sr in (16000, 8000):
        rep = _check(model, {"x": x, "sr": np.array([sr], np.int64)})
    assert rep["rewrites_per_pass"]["inline_constant_ifs"] == 0
    assert rep["ops_after"]["If"] == 1


def _loop_model(trip_count):
    """h_T of h' = Tanh(h @ (W * scale) + Sigmoid(s) + i) over `trip_count` steps (a Constant, or None: the
    graph input `m`), with hs the scan of h'; W * scale and Sigmoid(s) are loop-invariant, Reshape(s, shp)
    too but can fail (shp is a graph input), and i, h are not."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((H, H)) / np.sqrt(H)).astype(np.float32)
    f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)  # noqa: E731
    body = helper.make_graph(
        [helper.make_node("Mul", ["W", "scale"], ["ws"]),        # invariant; W, scale from the outer scope
         helper.make_node("Sigmoid", ["s"], ["ss"]),             # invariant, cannot fail
         helper.make_node("Reshape", ["s", "shp"], ["sr"]),      # invariant, can fail
         helper.make_node("ReduceSum", ["sr"], ["srs"], keepdims=0),
         helper.make_node("MatMul", ["h", "ws"], ["hw"]),        # reads the carried h
         helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),  # reads the iteration number
         helper.make_node("Add", ["hw", "ss"], ["a"]),
         helper.make_node("Add", ["a", "fi"], ["a2"]),
         helper.make_node("Add", ["a2", "srs"], ["a3"]),
         helper.make_node("Tanh", ["a3"], ["h_next"]),
         helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Identity", ["h_next"], ["h_scan"])],
        "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []), f("h", [1, H])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), f("h_next", [1, H]), f("h_scan", [1, H])])
    nodes = [_const_node("true", np.array(True)),
             helper.make_node("Loop", ["m", "true", "h0"], ["h_last", "hs"], body=body)]
    inputs = [f("h0", [1, H]), f("s", [1, H]), f("scale", [1, H]),
              helper.make_tensor_value_info("shp", TensorProto.INT64, [2])]
    if trip_count is None:
        inputs.append(helper.make_tensor_value_info("m", TensorProto.INT64, []))
    else:
        nodes.insert(0, _const_node("m", np.int64(trip_count)))
    g = helper.make_graph(nodes, "loop", inputs, [f("h_last", [1, H]), f("hs", None)],
                          [numpy_helper.from_array(w, "W")])
    return helper.make_model(g, opset_imports=OPSET)


def _loop_feeds(shp=(H, 1), m=None):
    rng = np.random.default_rng(4)
    feeds = {"h0": rng.standard_normal((1, H)).astype(np.float32), "s": rng.standard_normal((1, H)).astype(np.float32),
             "scale": rng.standard_normal((1, H)).astype(np.float32), "shp": np.array(shp, np.int64)}
    if m is not None:
        feeds["m"] = np.array(m, np.int64)
    return feeds


def test_loop_invariants_are_hoisted_when_the_loop_surely_runs():
    model = _loop_model(6)
    rep = _check(model, _loop_feeds(), rtol=1e-5, atol=1e-5)
    assert rep["rewrites_per_pass"]["hoist_loop_invariants"] == 4  # Mul, Sigmoid, Reshape, ReduceSum
    # They now run in the main graph (the main graph's histogram), once per call.
    for op in ("Mul", "Sigmoid", "Reshape", "ReduceSum"):
        assert rep["ops_after"].get(op, 0) == 1, op
    assert any(p == "hoist_loop_invariants" and "Sigmoid" in what for p, what, _ in rep["log"])


def test_a_loop_that_may_not_run_gets_only_what_cannot_fail():
    model = _loop_model(None)
    # m = 0 with a Reshape that would fail: onnxruntime and sdx both run (the body never does).
    rep = _check(model, _loop_feeds(shp=(3, 3), m=0), empty_outputs=(1,))
    assert rep["rewrites_per_pass"]["hoist_loop_invariants"] == 2  # Mul, Sigmoid
    assert rep["ops_after"].get("Reshape", 0) == 0  # still in the body
    _check(model, _loop_feeds(m=4), rtol=1e-5, atol=1e-5)


def test_inspect_names_the_passes(tmp_path):
    path = tmp_path / "loop.onnx"
    path.write_bytes(_loop_model(6).SerializeToString())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-m", "sdx", "inspect", str(path), "--optimized", "-v"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "hoist_loop_invariants" in out.stdout
    lines = [line for line in out.stdout.splitlines() if "hoist_loop_invariants" in line]
    assert any("hoisted out of the Loop body" in line for line in lines), out.stdout
