"""The session option table (src/runtime/session_options.inc) is the one source of sdx.SessionOptions'
attributes and defaults, of the dict the native module reads, and of the README's options table (checked
by tools/options_table.py: every option has its row, with the same variable and default)."""
import importlib.util
import os
import pathlib

import numpy as np
import pytest

import sdx
from sdx import _sdx
from models import relu_model

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("options_table", ROOT / "tools" / "options_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TABLE = _sdx.session_option_table()
SWITCHES = _sdx.session_option_switches()
README = (ROOT / "README.md").read_text()


def test_readme_options_table_matches_the_table():
    assert _tool().problems(TABLE, SWITCHES, README) == []


def test_a_row_without_readme_row_fails_the_check():
    extra = dict(TABLE[0], name="brand_new_option", field="brand_new_option", env="SDX_BRAND_NEW", default=7)
    found = _tool().problems(TABLE + [extra], SWITCHES, README)
    assert any("brand_new_option (SDX_BRAND_NEW) has no row" in p for p in found), found


def test_a_changed_default_or_variable_fails_the_check():
    tool = _tool()
    row = next(r for r in TABLE if r["name"] == "warmup_runs")
    changed = [dict(r, default=2) if r is row else r for r in TABLE]
    assert any("default of warmup_runs" in p for p in tool.problems(changed, SWITCHES, README))
    renamed = [dict(r, env="SDX_WARMUP_RUNS") if r is row else r for r in TABLE]
    found = tool.problems(renamed, SWITCHES, README)
    assert any("warmup_runs (SDX_WARMUP_RUNS) has no row" in p for p in found), found
    assert any("SDX_WARMUP_ITERATIONS names no option" in p for p in found), found


def test_rows_that_are_not_options_must_be_known():
    tool = _tool()
    stray = README.replace("| — | `SDX_NO_WINOGRAD=1` |", "| — | `SDX_NO_SUCH_SWITCH=1` |")
    assert stray != README
    assert any("SDX_NO_SUCH_SWITCH" in p for p in tool.problems(TABLE, SWITCHES, stray))
    # An option marked as not one.
    marked = README.replace("| `warmup_runs` |", "| — |")
    assert any("marks SDX_WARMUP_ITERATIONS as not a session option" in p for p in tool.problems(TABLE, SWITCHES, marked))


def test_the_tool_prints_a_row_per_option():
    rows = _tool().markdown_rows(TABLE, SWITCHES)
    assert len(rows) == len(TABLE) + len(SWITCHES)
    assert any(r.startswith("| `optimizer_max_iterations` / `optimizer.max_iterations` | `SDX_OPTIMIZER_MAX_ITERATIONS` | 3 |")
               for r in rows)


def test_session_options_defaults_come_from_the_table():
    so = sdx.SessionOptions()
    for row in TABLE:
        # execution_mode is onnxruntime's field (ORT_SEQUENTIAL), standing for sdx's default mode.
        want = sdx.ExecutionMode.ORT_SEQUENTIAL if row["name"] == "execution_mode" else row["default"]
        assert getattr(so, row["name"]) == want, row["name"]
        assert row["type"] in ("bool", "int", "int64", "double", "string", "string list", "execution mode")
        assert row["help"] and row["env"].startswith("SDX_")
    d = so._to_dict()
    assert set(d) == {row["name"] for row in TABLE}
    assert d["log_level"] == 1 and so.log_severity_level == 2 and d["execution_mode"] == "AUTO"
    assert so.graph_optimization_level == sdx.GraphOptimizationLevel.ORT_ENABLE_ALL
    # The list default is the instance's own.
    so.optimizer_skip.append("X")
    assert sdx.SessionOptions().optimizer_skip == []


def test_log_severity_level_maps_to_log_level():
    so = sdx.SessionOptions()
    so.log_severity_level = 0  # onnxruntime's verbose
    assert so._to_dict()["log_level"] == 3
    so.log_severity_level = 4  # fatal
    assert so._to_dict()["log_level"] == 0 and so.log_severity_level == 4
    so = sdx.SessionOptions()
    so.log_level = 2
    assert so._to_dict()["log_level"] == 2
    so.log_severity_level = "loud"
    with pytest.raises(TypeError, match="SessionOptions.log_severity_level must be int"):
        so._to_dict()


@pytest.mark.parametrize("name,value,want", [
    ("warmup_runs", "two", "must be int"),
    ("optimizer_enabled", "yes", "must be bool"),
    ("plan_cache_memory_fraction", "half", "must be float"),
    ("jit_compiler", 3, "must be str"),
    ("optimizer_skip", ["A", 3], "must be a list of str"),
])
def test_wrong_types_are_type_errors_naming_the_option(name, value, want):
    so = sdx.SessionOptions()
    setattr(so, name, value)
    with pytest.raises(TypeError, match=f"SessionOptions.{name} {want}"):
        sdx.InferenceSession(relu_model().SerializeToString(), so)
    # The native module checks the dict it is given the same way.
    with pytest.raises(TypeError, match=f"SessionOptions.{name} {want}"):
        _sdx.Session(relu_model().SerializeToString(), {name: value})


def test_out_of_range_values_are_value_errors_naming_the_option():
    so = sdx.SessionOptions()
    so.plan_cache_memory_fraction = 1.5
    with pytest.raises(ValueError, match=r"plan_cache_memory_fraction=1.5 is out of range; expected a number in \(0, 1\]"):
        sdx.InferenceSession(relu_model().SerializeToString(), so)
    so = sdx.SessionOptions()
    so.execution_mode = "warp_drive"
    with pytest.raises(sdx.InvalidArgument, match="execution_mode=warp_drive is not an execution mode"):
        sdx.InferenceSession(relu_model().SerializeToString(), so)
    with pytest.raises(ValueError, match="unknown session option 'warmup'"):
        _sdx.Session(relu_model().SerializeToString(), {"warmup": 2})


def test_floors_raise_low_values():
    so = sdx.SessionOptions()
    so.warmup_runs = 0
    so.inter_op_num_threads = 0  # onnxruntime's default: sdx runs one wave at a time
    sess = sdx.InferenceSession(relu_model().SerializeToString(), so)
    x = np.array([[-1.0, 2.0, -3.0]], np.float32)
    assert np.array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))


def test_malformed_variable_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv("SDX_WARMUP_ITERATIONS", "abc")
    with pytest.raises(sdx.InvalidArgument, match="SDX_WARMUP_ITERATIONS='abc' is not an integer; expected an integer >= 1"):
        sdx.InferenceSession(relu_model().SerializeToString())
    monkeypatch.setenv("SDX_WARMUP_ITERATIONS", "3")
    monkeypatch.setenv("SDX_JIT_ENABLED", "maybe")
    with pytest.raises(sdx.InvalidArgument, match="SDX_JIT_ENABLED='maybe' is not a boolean"):
        sdx.InferenceSession(relu_model().SerializeToString())
    monkeypatch.delenv("SDX_JIT_ENABLED")
    sdx.InferenceSession(relu_model().SerializeToString())
