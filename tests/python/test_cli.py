import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx

from models import mlp_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sdx_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "sdx", *args], capture_output=True, text=True, cwd=cwd or "/")


def test_run_random_inputs(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    r = sdx_cli("run", str(path), "--input", "x=5x4", "--repeat", "5")
    assert r.returncode == 0, r.stderr
    assert "output probs: float32[5, 2]" in r.stdout
    assert "p50" in r.stdout and "p90" in r.stdout


def test_run_npy_input(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    x = np.ones((2, 4), np.float32)
    np.save(tmp_path / "x.npy", x)
    out_dir = tmp_path / "out"
    r = sdx_cli("run", str(path), "--input", f"x={tmp_path / 'x.npy'}", "--repeat", "1", "--save-outputs", str(out_dir))
    assert r.returncode == 0, r.stderr
    assert np.load(out_dir / "probs.npy").shape == (2, 2)


def test_run_bad_input_name(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    r = sdx_cli("run", str(path), "--input", "nope=1x4")
    assert r.returncode != 0
    assert "no input 'nope'" in (r.stdout + r.stderr)


def test_inspect(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    r = sdx_cli("inspect", str(path))
    assert r.returncode == 0, r.stderr
    assert "MatMul" in r.stdout and "unsupported ops: none" in r.stdout
    assert "ai.onnx 17" in r.stdout


def test_inspect_lists_unsupported(tmp_path):
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], name="frob")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = tmp_path / "u.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    r = sdx_cli("inspect", str(path))
    assert r.returncode == 1
    assert "Frobnicate (opset 17): 'frob'" in r.stdout


def test_run_reports_engine_errors_cleanly(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x08\x01garbage")
    r = sdx_cli("run", str(path))
    assert r.returncode == 2
    assert "error:" in r.stderr and "Traceback" not in r.stderr


def test_inspect_plan(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    r = sdx_cli("inspect", str(path), "--plan", "--shape", "x=8x4")
    assert r.returncode == 0, r.stderr
    assert re.search(r"plan: [1-5] steps", r.stdout)  # 5 nodes, fewer once MatMul+Add+Relu is one sdx.Linear
    assert "float[8, 8]" in r.stdout  # hidden activations recorded with the given batch
    assert "one buffer per slot" in r.stdout


def test_inspect_check_replay(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    r = sdx_cli("inspect", str(path), "--check-replay", "--shape", "x=8x4")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "replay matches slot by slot" in r.stdout and "values compared" in r.stdout


def test_introspect_from_python():
    import sdx

    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    info = sess.introspect({"x": np.ones((16, 4), np.float32)})
    names = {s["name"]: s for s in info["slots"]}
    assert names["h2"]["type"] == "float[16, 8]" and names["h2"]["bytes"] == 16 * 8 * 4
    assert names["probs"]["output"] and names["logits"]["output"]
    assert info["planned_bytes"] <= info["naive_bytes"]
