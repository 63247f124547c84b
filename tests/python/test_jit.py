"""The kernel JIT from Python: options, report and introspection fields, `sdx inspect --jit`, and the
acceptance check that a second process finds every kernel in the disk cache and runs no compiler."""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sdx
from models import elementwise_chain


_chain = elementwise_chain


def _options(cache, compiler="", enabled=True):
    o = sdx.SessionOptions()
    o.jit_enabled = enabled
    o.jit_cache_dir = str(cache)
    o.jit_compiler = compiler
    return o


def _have_compiler():
    return shutil.which("c++") or shutil.which("g++")


def _recording_compiler(tmp_path):
    real = _have_compiler()
    log = tmp_path / "compiler.log"
    script = tmp_path / "recording-c++"
    script.write_text(f"#!/bin/sh\necho \"$@\" >> '{log}'\nexec '{real}' \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script), log


@pytest.mark.skipif(not _have_compiler(), reason="no C++ compiler")
def test_fused_chain_is_bitwise_identical_and_reported(tmp_path):
    model = _chain().SerializeToString()
    jit = sdx.InferenceSession(model, _options(tmp_path))
    plain = sdx.InferenceSession(model, _options(tmp_path, enabled=False))
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    jit.run(None, {"x": x})  # warmup
    jit.run(None, {"x": x})  # the signature again: freeze (the kernels compile) and capture
    assert jit.wait_for_jit(120)
    for i in range(4):
        x[0, 0] = i
        (got,), rep = jit.run_with_report(None, {"x": x})
        (want,) = plain.run(None, {"x": x})
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert rep["jit_segments"] == 1 and rep["jit_fused_segments"] == 1 and rep["jit_fused_steps"] == 24
    info = jit.introspect({"x": x})
    assert info["jit"] == "on"
    assert [s["state"] for s in info["jit_segments"]] == ["FUSED"]
    assert "FUSED" in info["text"] and info["jit_text"].startswith("jit: 1 segment")
    stats = jit.jit_stats()
    assert stats["enabled"] and stats["cache_dir"] == str(tmp_path / "v1")


def test_missing_compiler_still_runs_correctly(tmp_path):
    model = _chain().SerializeToString()
    plain = sdx.InferenceSession(model, _options(tmp_path, enabled=False))
    x = np.random.default_rng(2).standard_normal((1, 16)).astype(np.float32)
    (want,) = plain.run(None, {"x": x})
    for compiler in ("/bin/false", str(tmp_path / "no-such-compiler")):
        sess = sdx.InferenceSession(model, _options(tmp_path, compiler))
        for _ in range(4):
            (got,), rep = sess.run_with_report(None, {"x": x})
            assert np.array_equal(got, want)
        sess.wait_for_jit(60)
        info = sess.introspect({"x": x})
        (seg,) = info["jit_segments"]
        assert seg["state"] == "FAILED" and compiler in seg["status"]


_SECOND_PROCESS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onnx
    import sdx
    model, cache, compiler = sys.argv[1:4]
    o = sdx.SessionOptions()
    o.jit_cache_dir = cache
    o.jit_compiler = compiler
    sess = sdx.InferenceSession(model, o)
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)
    for _ in range(3):
        (y,), rep = sess.run_with_report(None, {"x": x})
    sess.wait_for_jit(120)
    (y,), rep = sess.run_with_report(None, {"x": x})
    print(json.dumps({"stats": sess.jit_stats(), "fused": rep["jit_fused_segments"], "segments": rep["jit_segments"],
                      "y": y.view(np.uint32).tolist()}))
""")


@pytest.mark.skipif(not _have_compiler(), reason="no C++ compiler")
def test_second_process_finds_every_kernel_in_the_disk_cache(tmp_path):
    path = tmp_path / "chain.onnx"
    path.write_bytes(_chain(40).SerializeToString())
    compiler, log = _recording_compiler(tmp_path)
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SDX_JIT_")}

    def run():
        out = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, str(path), str(cache), compiler],
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = run()
    assert first["stats"]["compiled"] >= 1 and first["fused"] == first["segments"] == 1
    runs = log.read_text().count("\n")
    second = run()
    assert second["stats"]["compiler_runs"] == 0
    assert second["stats"]["disk_cache_hits"] == second["stats"]["requests"] == 1
    assert second["fused"] == 1
    assert log.read_text().count("\n") == runs  # the compiler did not run in the second process
    assert second["y"] == first["y"]
    assert list((cache / "v1").glob("*.tmp.*")) == []


@pytest.mark.skipif(not _have_compiler(), reason="no C++ compiler")
def test_cli_inspect_jit(tmp_path):
    path = tmp_path / "chain.onnx"
    path.write_bytes(_chain().SerializeToString())
    env = dict(os.environ, SDX_JIT_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "sdx", "inspect", str(path), "--jit"], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "jit: 1 segment" in out.stdout and "FUSED" in out.stdout and "jit cache:" in out.stdout
    env["SDX_JIT_COMPILER"] = "/bin/false"
    env["SDX_JIT_CACHE_DIR"] = str(tmp_path / "cache2")
    out = subprocess.run([sys.executable, "-m", "sdx", "inspect", str(path), "--jit"], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "FAILED" in out.stdout and "/bin/false" in out.stdout


@pytest.mark.skipif(not _have_compiler(), reason="no C++ compiler")
@pytest.mark.skipif(not hasattr(sdx._sdx, "_test_set_slowdown"),
                    reason="release build: the test-only slowdown hook is compiled out")
def test_a_kernel_slower_than_its_steps_stays_out_and_times_are_reported(tmp_path):
    """jit_keep_only_faster (on by default): the replay that checks a kernel's bits also times it against
    the steps it replaces. A 24-step chain fuses, its kernel faster; slowed 200x by the test hook (which slows
    the kernel wherever it runs), it is REJECTED with both times, and the unfused steps keep running."""
    model = _chain().SerializeToString()
    x = np.random.default_rng(2).standard_normal((1, 16)).astype(np.float32)

    def segment(slowdown):
        sess = sdx.InferenceSession(model, _options(tmp_path))
        sdx._sdx._test_set_slowdown("sdx.JitSegment", slowdown)
        try:
            sess.run(None, {"x": x})  # warmup
            sess.run(None, {"x": x})  # freeze (the kernel compiles) and capture
            assert sess.wait_for_jit(120)
            for _ in range(3):
                _, rep = sess.run_with_report(None, {"x": x})
            (seg,) = sess.introspect({"x": x})["jit_segments"]  # a context of its own, checked the same way
        finally:
            sdx._sdx._test_set_slowdown("sdx.JitSegment", 1.0)
        return seg, rep

    seg, rep = segment(1.0)
    assert seg["state"] == "FUSED" and rep["jit_fused_segments"] == 1, seg["status"]
    assert 0 < seg["fused_us"] <= seg["unfused_us"]
    assert "us fused" in seg["status"] and "us unfused" in seg["status"]
    seg, rep = segment(200.0)
    assert seg["state"] == "REJECTED" and rep["jit_fused_segments"] == 0, seg["status"]
    assert "slower fused" in seg["status"] and seg["fused_us"] > seg["unfused_us"] > 0
    off = _options(tmp_path)
    off.jit_keep_only_faster = False
    sess = sdx.InferenceSession(model, off)
    sdx._sdx._test_set_slowdown("sdx.JitSegment", 200.0)
    try:
        sess.run(None, {"x": x})
        assert sess.wait_for_jit(120)
        for _ in range(2):
            _, rep = sess.run_with_report(None, {"x": x})
    finally:
        sdx._sdx._test_set_slowdown("sdx.JitSegment", 1.0)
    assert rep["jit_fused_segments"] == 1  # off: the bitwise check alone decides
