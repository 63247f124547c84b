"""Diagnostics from Python and through the SDX_DIAGNOSTICS_* environment variables (report written at exit)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import sdx
import sdx.diagnostics as diag


def _model():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def test_enable_report_and_errors(tmp_path):
    diag.reset()
    diag.enable(["FALLBACK", "COLORING"], "DETAILED")
    try:
        s = sdx.InferenceSession(_model())
        for n in (1, 1, 2):
            s.run(None, {"x": np.ones((n, 4), np.float32)})
        r = diag.report()["categories"]
        assert r["FALLBACK"]["counts"]["NEW_SHAPE_SIGNATURE"] == 2
        assert "x [2, 4]" in r["FALLBACK"]["events"][-1]["detail"]
        assert r["COLORING"]["counts"]["COLORING_DONE"] == 1  # [1, 4] froze on its second call; [2, 4] ran once
        diag.write(str(tmp_path / "d.json"))
        assert json.loads((tmp_path / "d.json").read_text())["categories"]["FALLBACK"]["level"] == "DETAILED"
    finally:
        diag.disable("all")
        diag.reset()
    with pytest.raises(sdx.InvalidArgument, match="COLORING"):
        diag.enable("BOGUS")
    with pytest.raises(sdx.InvalidArgument):
        diag.enable("FALLBACK", "LOUD")


def test_environment_writes_the_report_at_exit(tmp_path):
    out = tmp_path / "report.json"
    model = tmp_path / "m.onnx"
    model.write_bytes(_model())
    env = dict(os.environ, SDX_DIAGNOSTICS_ENABLED="1", SDX_DIAGNOSTICS_CATEGORIES="FALLBACK,CAPTURE",
               SDX_DIAGNOSTICS_LEVEL="DETAILED", SDX_DIAGNOSTICS_JSON_OUTPUT=str(out))
    code = ("import numpy as np, sdx, sys; s = sdx.InferenceSession(sys.argv[1]);"
            "[s.run(None, {'x': np.ones((3, 4), np.float32)}) for _ in range(4)]")
    r = subprocess.run([sys.executable, "-c", code, str(model)], env=env, capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    cats = json.loads(out.read_text())["categories"]
    assert set(cats) == {"FALLBACK", "CAPTURE"}
    assert cats["FALLBACK"]["counts"]["NEW_SHAPE_SIGNATURE"] == 1 and cats["CAPTURE"]["counts"]["CAPTURED"] == 1
