"""`sdx bench` on a tiny model: output format, JSON fields, onnxruntime comparison and precision variants."""
import importlib.util
import json
import os
import subprocess
import sys

import onnx
import pytest

from models import mlp_model

HAVE_ORT = importlib.util.find_spec("onnxruntime") is not None


def sdx_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sdx", *args], capture_output=True, text=True, cwd="/", env=env)


@pytest.fixture
def tiny_model(tmp_path):
    model = mlp_model()
    model.ir_version = 8  # loadable by onnxruntime releases that stop at IR 10
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    return str(path)


def test_bench_prints_latency_and_writes_json(tiny_model, tmp_path):
    out = tmp_path / "bench.json"
    r = sdx_cli("bench", tiny_model, "--shape", "x=3x4", "--warmup", "2", "--runs", "7", "--threads", "1",
                "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "inputs: x float32[3, 4]" in r.stdout
    header = next(line for line in r.stdout.splitlines() if line.startswith("engine"))
    assert all(word in header for word in ("p50", "p90", "mean"))
    assert any(line.startswith("sdx ") for line in r.stdout.splitlines())
    assert "timing 7 runs" in r.stderr  # progress goes to stderr
    d = json.loads(out.read_text())
    for key in ("model", "threads", "warmup", "runs", "block", "inputs", "engines", "ratios_p50", "accuracy",
                "samples_us", "versions", "execution_mode", "load_ms"):
        assert key in d, key
    assert d["threads"] == 1 and d["runs"] == 7 and d["warmup"] == 2
    assert d["inputs"] == {"x": {"dtype": "float32", "shape": [3, 4]}}
    assert list(d["engines"]) == ["sdx"]
    s = d["engines"]["sdx"]
    assert s["calls"] == 7 and 0 < s["min_us"] <= s["p50_us"] <= s["p90_us"]
    assert len(d["samples_us"]["sdx"]) == 7


@pytest.mark.skipif(not HAVE_ORT, reason="onnxruntime is not installed")
def test_bench_compare_onnxruntime(tiny_model, tmp_path):
    out = tmp_path / "bench.json"
    r = sdx_cli("bench", tiny_model, "--compare-onnxruntime", "--runs", "6", "--warmup", "1", "--threads", "1",
                "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "ratio p50 sdx/onnxruntime:" in r.stdout
    assert "accuracy sdx vs onnxruntime: max abs" in r.stdout
    d = json.loads(out.read_text())
    assert set(d["engines"]) == {"sdx", "onnxruntime"}
    assert d["ratios_p50"]["sdx/onnxruntime"] > 0
    err = d["accuracy"]["sdx vs onnxruntime"]
    assert err["max_abs"] < 1e-4 and err["max_rel"] < 1e-3
    assert "onnxruntime" in d["versions"]


def test_bench_compare_without_onnxruntime_fails_clearly(tiny_model, tmp_path):
    # A stand-in package that fails to import, as if onnxruntime were not installed.
    fake = tmp_path / "no_ort" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('onnxruntime hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(fake.parent), os.environ.get("PYTHONPATH")) if p))
    r = sdx_cli("bench", tiny_model, "--compare-onnxruntime", "--runs", "2", env=env)
    assert r.returncode != 0
    assert "--compare-onnxruntime needs the onnxruntime package" in r.stderr
    assert "Traceback" not in r.stderr


def test_bench_fp16_reports_accuracy_against_fp32(tiny_model, tmp_path):
    out = tmp_path / "bench.json"
    r = sdx_cli("bench", tiny_model, "--fp16", "--runs", "4", "--warmup", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "accuracy sdx-fp16 vs sdx: max abs" in r.stdout
    d = json.loads(out.read_text())
    assert set(d["engines"]) == {"sdx", "sdx-fp16"}
    err = d["accuracy"]["sdx-fp16 vs sdx"]
    assert {"max_abs", "max_rel", "rel_l2"} <= set(err)
    assert err["max_abs"] < 1e-2  # fp16 weights of a tiny MLP stay close to fp32
    assert d["ratios_p50"]["sdx-fp16/sdx"] > 0


def test_bench_int8(tiny_model):
    import sdx

    r = sdx_cli("bench", tiny_model, "--int8", "--runs", "3", "--warmup", "1")
    if hasattr(sdx.SessionOptions(), "optimizer_int8"):
        assert r.returncode == 0, r.stderr
        assert "accuracy sdx-int8 vs sdx: max abs" in r.stdout
    else:
        assert r.returncode != 0
        assert "no int8 weight quantization" in r.stderr


def test_bench_rejects_bad_runs(tiny_model):
    r = sdx_cli("bench", tiny_model, "--runs", "0")
    assert r.returncode != 0 and "--runs" in r.stderr


def test_bench_unknown_input_name(tiny_model):
    r = sdx_cli("bench", tiny_model, "--shape", "nope=1x4")
    assert r.returncode != 0 and "no input 'nope'" in (r.stdout + r.stderr)
