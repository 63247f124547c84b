"""`.sdx` bundles (sdx.compile_bundle, `sdx compile`): a loaded bundle skips the optimizer and the warmup,
gives the cold session's outputs bit for bit, and every damaged, truncated, foreign or hostile bundle is
refused with an error that says what is wrong."""
import struct

import numpy as np
import pytest

import sdx
from models import bert_encoder, cnn_bn, gpt_decoder_step, mlp_model


def _feeds(sess, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in i.shape]
        feeds[i.name] = np.zeros(shape, np.int64) if "int64" in i.type else rng.standard_normal(shape).astype(np.float32)
    return feeds


def _checksum(data: bytes) -> int:
    """The bundle checksum: XXH3-64 (seed 0), from the system's xxHash library (libsdx links the same one)."""
    import ctypes
    import ctypes.util

    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.XXH3_64bits.restype = ctypes.c_uint64
    return lib.XXH3_64bits(data, len(data))


def _reseal(body: bytes) -> bytes:
    """A bundle body (everything before the trailer) with a valid checksum and end marker."""
    return body + struct.pack("<Q", _checksum(body)) + b"SDXBEND!"


MODELS = {
    "mlp": lambda: mlp_model(),
    "bert": lambda: bert_encoder(layers=2, seq=16, hidden=64, heads=2, ffn=128),
    "gpt_step": lambda: gpt_decoder_step(layers=2, past=8, hidden=64, heads=2, ffn=128),
    "cnn": lambda: cnn_bn(stages=(8, 16), image=16),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bundle_replays_from_the_first_call_with_the_cold_outputs(name, tmp_path):
    data = MODELS[name]().SerializeToString()
    cold = sdx.InferenceSession(data)
    feeds = _feeds(cold)
    path = tmp_path / f"{name}.sdx"
    path.write_bytes(sdx.compile_bundle(data, [feeds]))
    warm = sdx.InferenceSession(str(path))
    assert warm.optimization_report()["enabled"] is False  # the bundle holds the optimizer's output
    for _ in range(3):
        ref = cold.run(None, feeds)
    for call in range(3):
        outs, rep = warm.run_with_report(None, feeds)
        # No warmup run and no capture run: the first call binds the recorded plan and replays it.
        assert rep["execution_mode"] == "CPU_REPLAY" and rep["phase"] == "REPLAYING", (call, rep["phase"])
        for got, want in zip(outs, ref):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want, equal_nan=True), call


def test_a_step_without_a_bound_form_is_captured_by_running_the_first_call(tmp_path):
    """Binding a recorded plan without a run (at load) needs every step bound (or a view shaped by
    constants); NonZero's output shape depends on its input's values, so the first call captures by
    running, the diagnostics say which step, and the second call replays with the cold session's outputs."""
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["nz"]),
         helper.make_node("Abs", ["x"], ["y"])],
        "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, None),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    bundle = sdx.compile_bundle(data, [{"x": x}])
    import sdx.diagnostics as diag

    diag.enable("CAPTURE", "SUMMARY")
    try:
        sess = sdx.InferenceSession(bundle)
        _, rep = sess.run_with_report(None, {"x": x})
        messages = diag.report()["categories"]["CAPTURE"]
    finally:
        diag.disable()
    assert rep["execution_mode"] != "CPU_REPLAY", rep
    assert "CAPTURE_NEEDS_RUN" in messages["counts"] and "NonZero" in str(messages), messages
    outs, rep = sess.run_with_report(None, {"x": x})
    assert rep["execution_mode"] == "CPU_REPLAY", rep
    for got, want in zip(outs, sdx.InferenceSession(data).run(None, {"x": x})):
        np.testing.assert_array_equal(got, want)


def test_other_shapes_still_warm_up_and_bytes_load_too(tmp_path):
    data = mlp_model().SerializeToString()
    b = sdx.compile_bundle(data, [{"x": np.ones((3, 4), np.float32)}])
    sess = sdx.InferenceSession(b)  # bytes, told apart from ONNX by the magic
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    _, rep = sess.run_with_report(None, {"x": x})
    assert rep["phase"] == "WARMUP"  # a signature the bundle does not hold: one warmup run (it freezes if it recurs)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], sdx.InferenceSession(data).run(None, {"x": x})[0])


def test_compile_checks_its_inputs():
    data = mlp_model().SerializeToString()
    with pytest.raises(ValueError, match="missing inputs"):
        sdx.compile_bundle(data, [{}])
    with pytest.raises(ValueError, match="at least one input set"):
        sdx.compile_bundle(data, [])
    with pytest.raises(sdx.InvalidArgument, match="input 'x'"):
        sdx.compile_bundle(data, [{"x": np.ones((3, 5), np.float32)}])


@pytest.fixture(scope="module")
def bundle():
    return sdx.compile_bundle(mlp_model().SerializeToString(), [{"x": np.ones((2, 4), np.float32)}])


def test_every_truncation_is_refused(bundle):
    for n in list(range(0, 64)) + list(range(64, len(bundle), max(1, len(bundle) // 97))):
        with pytest.raises(sdx.SdxError, match="truncated|damaged|not an sdx bundle|not a valid ONNX|model is empty"):
            sdx.InferenceSession(bundle[:n])


def test_flipped_bytes_are_refused(bundle):
    for i in range(0, len(bundle), max(1, len(bundle) // 211)):
        bad = bytearray(bundle)
        bad[i] ^= 0x5A
        with pytest.raises(sdx.SdxError):
            sdx.InferenceSession(bytes(bad))


def test_another_format_version_and_another_sdx_are_refused(bundle):
    body = bytearray(bundle[:-16])
    body[8:12] = struct.pack("<I", 1)  # the first format (no weights or packed sections)
    with pytest.raises(sdx.FailedPrecondition, match="format version 1.*reads version 4"):
        sdx.InferenceSession(_reseal(bytes(body)))
    # A version-3 file (XXH64 checksums of 1 MiB pieces) is named by its version, not reported as damaged.
    body[8:12] = struct.pack("<I", 3)
    with pytest.raises(sdx.FailedPrecondition, match="format version 3.*reads version 4"):
        sdx.InferenceSession(bytes(body) + bundle[-16:])
    body = bundle[:-16].replace(b"sdx_version=" + sdx.__version__.encode(), b"sdx_version=9.9.9")
    with pytest.raises(sdx.FailedPrecondition, match="compiled by sdx 9.9.9"):
        sdx.InferenceSession(_reseal(body))


def test_hostile_lengths_are_refused(bundle):
    body = bytearray(bundle[:-16])
    body[24:32] = struct.pack("<Q", 2**63)  # the first section claims 8 EiB
    with pytest.raises(sdx.InvalidProtobuf, match="remain"):
        sdx.InferenceSession(_reseal(bytes(body)))
    body = bytearray(bundle[:-16])
    body[12:16] = struct.pack("<I", 2**31)  # two billion sections
    with pytest.raises(sdx.InvalidProtobuf, match="section count"):
        sdx.InferenceSession(_reseal(bytes(body)))


def test_a_file_named_sdx_that_is_onnx_still_loads(tmp_path):
    path = tmp_path / "model.sdx"
    path.write_bytes(mlp_model().SerializeToString())
    sdx.InferenceSession(str(path)).run(None, {"x": np.ones((1, 4), np.float32)})


def test_cli_compile_run_inspect(tmp_path):
    import subprocess
    import sys

    import onnx

    src = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(src))
    out = tmp_path / "mlp.sdx"
    env = dict(__import__("os").environ)
    cli = [sys.executable, "-m", "sdx"]
    r = subprocess.run(cli + ["compile", str(src), "-o", str(out), "--shape", "x=3,4", "--next-shape-set", "--shape",
                              "x=5,4"], capture_output=True, text=True, cwd="/", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "2 frozen plan(s)" in r.stderr and out.read_bytes().startswith(b"SDXBUNDL")
    r = subprocess.run(cli + ["run", str(out), "--input", "x=3x4", "--repeat", "2"], capture_output=True, text=True,
                       cwd="/", env=env, timeout=300)
    assert r.returncode == 0 and "CPU_REPLAY" in r.stdout, r.stdout + r.stderr
    r = subprocess.run(cli + ["inspect", str(out)], capture_output=True, text=True, cwd="/", env=env, timeout=300)
    assert r.returncode == 0 and "x: tensor(float)" in r.stdout, r.stdout + r.stderr
    bad = tmp_path / "bad.sdx"
    bad.write_bytes(out.read_bytes()[:-5])
    r = subprocess.run(cli + ["run", str(bad)], capture_output=True, text=True, cwd="/", env=env, timeout=300)
    assert r.returncode == 2 and "truncated" in r.stderr, r.stderr
