"""The plan lifecycle from Python: warmup, capture, replay; the execution report; the fast path."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import sdx
from models import mlp_model, mlp_reference


def _slow(model):
    opts = sdx.SessionOptions()
    opts.execution_mode = "SLOT_BY_SLOT"
    return sdx.InferenceSession(model.SerializeToString(), opts)


def test_lifecycle_report_and_bitwise_replay():
    model = mlp_model()
    sess = sdx.InferenceSession(model.SerializeToString())
    ref = _slow(model)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    phases, modes = [], []
    for i in range(5):
        x[0, 0] = i  # new values every call, same shapes
        outs, rep = sess.run_with_report(None, {"x": x})
        phases.append(rep["phase"])
        modes.append(rep["execution_mode"])
        for got, want in zip(outs, ref.run(None, {"x": x})):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want)  # replay is bitwise identical to slot by slot
        np.testing.assert_allclose(outs[1], mlp_reference(x)[1], rtol=1e-5, atol=1e-5)
    assert phases == ["WARMUP", "CAPTURED", "REPLAYING", "REPLAYING", "REPLAYING"]  # frozen as call 2 began
    assert modes == ["SLOT_BY_SLOT", "SLOT_BY_SLOT", "CPU_REPLAY", "CPU_REPLAY", "CPU_REPLAY"]
    assert rep["replay_count"] == 3 and rep["call_count"] == 5
    assert rep["fallback_reason"] is None
    assert rep["slot_count"] > 0 and rep["peak_memory_bytes"] > 0 and rep["avg_latency_us"] > 0
    assert rep["captured_steps"] > 0 and rep["gap_steps"] == 0
    # Returned arrays are copies: the next replay must not change them.
    kept = outs[0].copy()
    sess.run(None, {"x": x * 2})
    assert np.array_equal(outs[0], kept)


def test_new_shapes_get_their_own_plans_and_the_cache_counts_them():
    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    for batch in (1, 2, 3, 1, 2, 3, 1, 2, 3):
        x = np.ones((batch, 4), np.float32) * batch
        (probs, logits) = sess.run(None, {"x": x})
        np.testing.assert_allclose(logits, mlp_reference(x)[1], rtol=1e-5, atol=1e-5)
    stats = sess.cache_stats()
    assert stats["entries"] == 3 and stats["frozen_bytes"] > 0 and stats["evictions"] == 0
    opts = sdx.SessionOptions()
    opts.plan_cache_max_count = 2
    small = sdx.InferenceSession(mlp_model().SerializeToString(), opts)
    for batch in (1, 2, 3, 4):
        small.run(None, {"x": np.ones((batch, 4), np.float32)})
    assert small.cache_stats()["entries"] == 2 and small.cache_stats()["evictions"] == 2


def test_fast_path_agrees_with_the_general_path_for_every_dtype():
    for np_type, onnx_type in [(np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
                               (np.int32, TensorProto.INT32), (np.int64, TensorProto.INT64),
                               (np.float16, TensorProto.FLOAT16), (np.uint8, TensorProto.UINT8),
                               (np.bool_, TensorProto.BOOL)]:
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"]), helper.make_node("Identity", ["t"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", onnx_type, [2, 3])],
                              [helper.make_tensor_value_info("y", onnx_type, [2, 3])])
        sess = sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
        x = (np.arange(6).reshape(2, 3) % 3).astype(np_type)
        for _ in range(4):
            (y,) = sess.run(None, {"x": x})
            assert y.dtype == x.dtype and np.array_equal(y, x)
        # Non-contiguous and list inputs take the general path and still work.
        (y,) = sess.run(None, {"x": np.asfortranarray(x)})
        assert np.array_equal(y, x)


def test_fast_path_errors_name_the_input():
    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    with pytest.raises(sdx.InvalidArgument, match="input 'x': expected element type float"):
        sess.run(None, {"x": np.ones((2, 4), np.float64)})
    with pytest.raises(sdx.InvalidArgument, match="input 'x': dimension 1 must be 4"):
        sess.run(None, {"x": np.ones((2, 5), np.float32)})
    with pytest.raises(sdx.InvalidArgument, match="unknown input name 'y'"):
        sess.run(None, {"y": np.ones((2, 4), np.float32)})
    with pytest.raises(sdx.InvalidArgument, match="unknown output name 'nope'"):
        sess.run(["nope"], {"x": np.ones((2, 4), np.float32)})


def test_slot_by_slot_mode_never_replays():
    sess = _slow(mlp_model())
    x = np.ones((2, 4), np.float32)
    for _ in range(4):
        _, rep = sess.run_with_report(None, {"x": x})
    assert rep["execution_mode"] == "SLOT_BY_SLOT"


def test_introspection_reports_states_and_phases():
    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    info = sess.introspect({"x": np.ones((2, 4), np.float32)})
    assert info["phase"] == "REPLAYING"
    assert info["captured_steps"] == info["steps"]
    rows = [r for r in info["slots"] if r["kind"] == "intermediate"]
    assert rows and all(r["state"] == "REPLAYING" and r["node_phase"] == "CAPTURED" for r in rows)
    assert all(isinstance(r["wiring"], list) for r in rows)


@pytest.mark.parametrize("mode", ["CUDA_GRAPHS", "triton", "2"])
def test_gpu_mode_falls_back_and_says_so(mode, monkeypatch, capfd):
    # SDX_EXECUTION_MODE names a mode this build has no backend for: the session runs CPU_REPLAY, warns
    # once on stderr, and every report names the requested mode and the reason.
    monkeypatch.setenv("SDX_EXECUTION_MODE", mode)
    model = mlp_model()
    sess = sdx.InferenceSession(model.SerializeToString())
    assert "sdx: warning: execution mode" in capfd.readouterr().err
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    for _ in range(3):
        outs, rep = sess.run_with_report(None, {"x": x})
    assert rep["mode_requested"] == ("TRITON" if mode == "triton" else "CUDA_GRAPHS")
    assert rep["execution_mode"] == "CPU_REPLAY"
    assert "no CUDA backend" in rep["mode_fallback_reason"] and "running CPU_REPLAY" in rep["mode_fallback_reason"]
    monkeypatch.delenv("SDX_EXECUTION_MODE")
    for got, want in zip(outs, _slow(model).run(None, {"x": x})):
        assert np.array_equal(got, want)


def test_misspelt_mode_is_an_error(monkeypatch):
    monkeypatch.setenv("SDX_EXECUTION_MODE", "BOGUS")
    with pytest.raises(sdx.InvalidArgument, match="SDX_EXECUTION_MODE='BOGUS' is not an execution mode.*CUDA_GRAPHS"):
        sdx.InferenceSession(mlp_model().SerializeToString())
    monkeypatch.delenv("SDX_EXECUTION_MODE")
    rep = sdx.InferenceSession(mlp_model().SerializeToString()).run_with_report(None, {"x": np.zeros((3, 4), np.float32)})[1]
    assert rep["mode_requested"] == "AUTO" and rep["mode_fallback_reason"] is None
