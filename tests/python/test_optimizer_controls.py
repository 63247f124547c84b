"""The optimizer's controls from Python, the environment and the CLI."""
import os
import subprocess
import sys

import onnx
from onnx import TensorProto, helper

import sdx


def _model():
    nodes = [helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Identity", ["a"], ["b"]),
             helper.make_node("Relu", ["b"], ["y"]), helper.make_node("Neg", ["x"], ["dead"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_report_and_options():
    rep = sdx.InferenceSession(_model().SerializeToString()).optimization_report()
    assert rep["enabled"] and rep["rewrites_per_pass"]["remove_identities"] == 2
    assert rep["ops_before"] == {"Identity": 2, "Relu": 1, "Neg": 1} and rep["ops_after"] == {"Relu": 1}
    assert len(rep["log"]) == sum(rep["rewrites_per_pass"].values())

    opts = sdx.SessionOptions()
    opts.optimizer_enabled = False
    rep = sdx.InferenceSession(_model().SerializeToString(), opts).optimization_report()
    assert not rep["enabled"] and rep["ops_after"] == rep["ops_before"] and not rep["log"]

    # A pass is skipped by its table name or its DSP alias; the report names it by table name.
    for spelling in ("remove_identities", "IdentityFunctionOptimizations"):
        opts = sdx.SessionOptions()
        opts.optimizer_skip = [spelling]
        rep = sdx.InferenceSession(_model().SerializeToString(), opts).optimization_report()
        assert "remove_identities" not in rep["rewrites_per_pass"]
        assert rep["skipped"] == ["remove_identities"] and rep["ops_after"]["Identity"] == 2


def _inspect(tmp_path, env):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    return subprocess.run([sys.executable, "-m", "sdx", "inspect", str(path), "--optimized"], capture_output=True,
                          text=True, cwd="/", env={**os.environ, **env}, timeout=120)


def test_environment_controls_through_the_cli(tmp_path):
    r = _inspect(tmp_path, {"SDX_OPTIMIZER_LOG_APPLIED": "1"})
    assert r.returncode == 0, r.stderr
    logged = [line for line in r.stderr.splitlines() if line.startswith("sdx optimizer: ")]
    assert sum("remove_identities: Identity(x) -> x" in line for line in logged) == 2
    assert sum("eliminate_dead_nodes" in line for line in logged) == 1
    assert len(logged) == 3  # exactly the rewrites performed
    assert "rewrites per pass:" in r.stdout and "ops before -> after:" in r.stdout

    r = _inspect(tmp_path, {"SDX_OPTIMIZER_ENABLED": "0", "SDX_OPTIMIZER_LOG_APPLIED": "1"})
    assert r.returncode == 0 and "optimizer: disabled" in r.stdout
    assert "sdx optimizer:" not in r.stderr

    for spelling in ("remove_identities", "IdentityFunctionOptimizations"):
        r = _inspect(tmp_path, {"SDX_OPTIMIZER_SKIP": spelling, "SDX_OPTIMIZER_LOG_APPLIED": "1"})
        assert r.returncode == 0 and "skipped remove_identities" in r.stdout
        assert "remove_identities:" not in r.stderr
