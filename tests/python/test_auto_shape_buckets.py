"""Padding on by default where it is safe (issue 21): a session with no shape_buckets option switches the
varying dims that analysis/row_padding.h proves independent rows to automatic buckets once callers have
brought more input-shape signatures than the plan cache keeps plans (it evicts or passivates); a dim the model mixes keeps its exact shapes and the session says why."""
import numpy as np
import onnx
from onnx import TensorProto, helper

import sdx
import sdx.diagnostics


def _model(mix_rows: bool) -> onnx.ModelProto:
    """x [batch, 16] -> MatMul W -> Relu -> Softmax over the features (rows independent), or (mix_rows) minus
    the max over the batch (a ReduceMax along it: rows mixed)."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 8], np.random.default_rng(0).normal(size=128).tolist())
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["r"])]
    if mix_rows:
        nodes += [helper.make_node("ReduceMax", ["r"], ["m"], axes=[0], keepdims=1),
                  helper.make_node("Sub", ["r", "m"], ["s"])]
    else:
        nodes += [helper.make_node("Identity", ["r"], ["s"])]
    nodes += [helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "rows", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = sdx.SessionOptions()
    opts.auto_shape_buckets = False
    return sdx.InferenceSession(model.SerializeToString(), opts).run(None, {"x": x})[0]


def test_row_dims_are_proven_or_refused_with_the_node():
    assert sdx.InferenceSession(_model(False).SerializeToString())._native.row_dims() == {"batch": ""}
    why = sdx.InferenceSession(_model(True).SerializeToString())._native.row_dims()["batch"]
    assert "ReduceMax" in why and "mixes positions along it" in why, why


def test_a_varying_batch_switches_to_automatic_buckets_and_gives_the_exact_results():
    model = _model(False)
    opts = sdx.SessionOptions()
    opts.auto_shape_buckets = True
    opts.plan_cache_max_count = 8  # buckets once a 9th size evicts a plan, at most 8 sizes: later ones are padded
    sess = sdx.InferenceSession(model.SerializeToString(), opts)
    rng = np.random.default_rng(1)
    sizes = [1, 3, 2, 5, 4, 7, 6, 9, 8, 3, 11, 2, 13, 5, 1, 10, 12]
    for i, b in enumerate(sizes):
        x = rng.normal(size=(b, 16)).astype(np.float32)
        y = sess.run(None, {"x": x})[0]
        assert y.shape == (b, 8)
        np.testing.assert_allclose(y, _reference(model, x), rtol=1e-5, atol=1e-6)
        if i < 7:
            assert sess._native.shape_buckets() is None, i  # exact shapes until the 8th signature
    buckets = sess._native.shape_buckets()
    assert buckets is not None and "batch in automatic buckets" in buckets["buckets"], buckets
    assert "none chosen yet" not in buckets["buckets"], buckets  # chosen from the sizes seen before
    assert buckets["status"].startswith("checked"), buckets


def test_a_dim_the_model_mixes_keeps_exact_shapes_and_says_why():
    model = _model(True)
    sdx.diagnostics.enable("FALLBACK")
    try:
        sdx.diagnostics.reset()
        opts = sdx.SessionOptions()
        opts.auto_shape_buckets = True
        sess = sdx.InferenceSession(model.SerializeToString(), opts)
        rng = np.random.default_rng(2)
        for b in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]:
            x = rng.normal(size=(b, 16)).astype(np.float32)
            np.testing.assert_allclose(sess.run(None, {"x": x})[0], _reference(model, x), rtol=1e-5, atol=1e-6)
        assert sess._native.shape_buckets() is None
        said = sdx.diagnostics.report()["categories"]["FALLBACK"]["last"].get("SHAPES_VARY", "")
        assert "'batch' keeps exact shapes" in said and "ReduceMax" in said, said
    finally:
        sdx.diagnostics.disable()


def _fallback_said(sess_opts, sizes) -> tuple:
    """(the session's shape buckets, the last SHAPES_VARY and SHAPES_BUCKETED details) after calls at `sizes`."""
    sdx.diagnostics.enable("FALLBACK")
    try:
        sdx.diagnostics.reset()
        sess = sdx.InferenceSession(_model(False).SerializeToString(), sess_opts)
        for b in sizes:
            sess.run(None, {"x": np.ones((b, 16), np.float32)})
        last = sdx.diagnostics.report()["categories"]["FALLBACK"]["last"]
        return sess._native.shape_buckets(), last.get("SHAPES_VARY", ""), last.get("SHAPES_BUCKETED", "")
    finally:
        sdx.diagnostics.disable()


def test_by_default_buckets_come_when_the_plan_cache_evicts_and_are_announced():
    # The default plan cache keeps 32 plans: 32 sizes run at exact shapes (a plan each is cheaper than padded
    # rows); a new size that makes the cache evict a plan switches the proven dim to automatic buckets (at most
    # 16 sizes).
    buckets, vary, bucketed = _fallback_said(None, range(1, 33))
    assert buckets is None
    assert "padding proven exact (independent rows) for 'batch'" in vary, vary
    assert "once the plan cache has to evict or passivate plans" in vary, vary
    assert bucketed == ""
    buckets, vary, bucketed = _fallback_said(None, range(1, 36))
    assert buckets is not None and "at most 16 chosen" in buckets["buckets"], buckets
    assert "switched to automatic buckets" in bucketed and "batch=auto:16" in bucketed, bucketed


def test_auto_shape_buckets_off_keeps_exact_shapes_and_says_what_is_proven():
    opts = sdx.SessionOptions()
    opts.auto_shape_buckets = False
    buckets, vary, bucketed = _fallback_said(opts, range(1, 40))
    assert buckets is None and bucketed == ""
    assert "padding proven exact (independent rows) for 'batch'" in vary, vary
    assert "SessionOptions.auto_shape_buckets pads them" in vary, vary


_CACHED_CHILD = r"""
import json, sys
import numpy as np
import sdx
import sdx.diagnostics
sdx.diagnostics.enable("CACHE")
sess = sdx.InferenceSession(sys.argv[1])
for _ in range(3):  # warm-up, freeze, capture: the capture writes the entry
    sess.run(None, {"x": np.ones((2, 16), np.float32)})
rows = sess._native.row_dims()
del sess  # joins the cache writer
counts = sdx.diagnostics.report().get("categories", {}).get("CACHE", {}).get("counts", {})
print(json.dumps({"rows": rows, "hit": counts.get("PLAN_CACHE_HIT", 0)}))
"""


def test_a_session_from_the_disk_plan_cache_keeps_the_proof_of_the_graph_as_loaded(tmp_path):
    # The cached entry holds the optimized graph (MatMul + Relu fused: an op with no row rule); the proof made
    # before the optimizer travels in the entry's manifest (src/api/bundle_row_proof.h).
    import os
    import subprocess
    import sys
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="1", SDX_DISK_PLAN_CACHE_DIR=str(tmp_path / "cache"))
    for mix_rows in (False, True):
        path = tmp_path / f"rows_{mix_rows}.onnx"
        path.write_bytes(_model(mix_rows).SerializeToString())
        runs = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _CACHED_CHILD, str(path)], capture_output=True, text=True,
                               env=env, cwd="/", timeout=300)
            assert r.returncode == 0, r.stderr
            runs.append(__import__("json").loads(r.stdout.strip().splitlines()[-1]))
        cold, warm = runs
        assert cold["hit"] == 0 and warm["hit"] == 1, runs  # the second session came from the entry
        assert warm["rows"] == cold["rows"], runs
        if mix_rows:
            assert "ReduceMax" in warm["rows"]["batch"], runs
        else:
            assert warm["rows"] == {"batch": ""}, runs


def test_heads_folded_into_the_batch_are_proven_and_padding_them_is_exact():
    # x [batch, 6, 10, 8] -> Reshape [-1, 10, 8] ("6*batch": the heads folded into the batch, as exporters write
    # attention) -> MatMul -> Softmax -> Reshape [-1, 6, 10, 8]: rows stay whole, the batch the outer factor.
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 8], np.random.default_rng(2).normal(size=64).tolist())
    fold = helper.make_tensor("fold", TensorProto.INT64, [3], [-1, 10, 8])
    unfold = helper.make_tensor("unfold", TensorProto.INT64, [4], [-1, 6, 10, 8])
    nodes = [helper.make_node("Reshape", ["x", "fold"], ["f"]), helper.make_node("MatMul", ["f", "w"], ["m"]),
             helper.make_node("Softmax", ["m"], ["p"], axis=-1), helper.make_node("Reshape", ["p", "unfold"], ["y"])]
    g = helper.make_graph(nodes, "heads", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6, 10, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6, 10, 8])], [w, fold, unfold])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    assert sdx.InferenceSession(model)._native.row_dims() == {"batch": ""}
    opts = sdx.SessionOptions()
    opts.shape_buckets = ["batch=4"]
    padded = sdx.InferenceSession(model, opts)
    exact_opts = sdx.SessionOptions()
    exact_opts.auto_shape_buckets = False
    exact = sdx.InferenceSession(model, exact_opts)
    rng = np.random.default_rng(3)
    for b in (1, 3, 2, 5):
        x = rng.normal(size=(b, 6, 10, 8)).astype(np.float32)
        y = padded.run(None, {"x": x})[0]
        assert y.shape == (b, 6, 10, 8)
        np.testing.assert_allclose(y, exact.run(None, {"x": x})[0], rtol=1e-6, atol=1e-7)
    assert padded._native.shape_buckets()["status"].startswith("checked"), padded._native.shape_buckets()
