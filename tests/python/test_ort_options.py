"""SessionOptions and RunOptions as onnxruntime defines them (python/sdx/_options.py): strict attributes,
honest warnings for fields sdx cannot honour, the enums, config entries and the optimization level."""
import warnings

import numpy as np
import pytest

import sdx
from ort_models import mul_model


def test_unknown_attributes_raise_attribute_error():
    so = sdx.SessionOptions()
    with pytest.raises(AttributeError, match="warmup_run"):
        so.warmup_run = 3  # a typo of warmup_runs
    with pytest.raises(AttributeError, match="intra_op_threads"):
        so.intra_op_threads = 2
    ro = sdx.RunOptions()
    with pytest.raises(AttributeError, match="log_severity"):
        ro.log_severity = 1


def test_unhonoured_fields_warn_once_naming_the_field():
    so = sdx.SessionOptions()
    with pytest.warns(RuntimeWarning, match="enable_mem_pattern"):
        so.enable_mem_pattern = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sdx.SessionOptions().enable_mem_pattern = False  # once per process
        sdx.SessionOptions().enable_mem_pattern = True   # the default never warns


def test_enums_and_defaults():
    so = sdx.SessionOptions()
    assert so.graph_optimization_level == sdx.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.execution_mode == sdx.ExecutionMode.ORT_SEQUENTIAL
    so.execution_mode = sdx.ExecutionMode.ORT_PARALLEL
    assert so.execution_mode == sdx.ExecutionMode.ORT_PARALLEL
    assert so._to_dict()["inter_op_num_threads"] >= 2
    so.execution_mode = "SLOT_BY_SLOT"  # sdx's own modes stay assignable
    assert so._to_dict()["execution_mode"] == "SLOT_BY_SLOT"


def test_graph_optimization_level_maps_onto_the_optimizer():
    passes = {name: cat.lower() for _, name, cat in sdx._sdx.optimizer_passes()}
    so = sdx.SessionOptions()
    so.graph_optimization_level = sdx.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert so._to_dict()["optimizer_enabled"] is False
    so.graph_optimization_level = sdx.GraphOptimizationLevel.ORT_ENABLE_BASIC
    skipped = set(so._to_dict()["optimizer_skip"])
    assert skipped and all(passes[p] in ("fusion", "layout", "precision") for p in skipped)
    assert {p for p, c in passes.items() if c == "fusion"} <= skipped
    so.graph_optimization_level = sdx.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    assert {passes[p] for p in so._to_dict()["optimizer_skip"]} == {"layout"}
    so.graph_optimization_level = 99
    d = so._to_dict()
    assert d["optimizer_enabled"] and not d["optimizer_skip"]
    so.graph_optimization_level = sdx.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = sdx.InferenceSession(mul_model().SerializeToString(), so)
    assert sess.optimization_report()["enabled"] is False


def test_config_entries():
    so = sdx.SessionOptions()
    with pytest.warns(RuntimeWarning, match="'CONFIG_KEY' is kept but has no effect"):
        so.add_session_config_entry("CONFIG_KEY", "CONFIG_VAL")
    assert so.get_session_config_entry("CONFIG_KEY") == "CONFIG_VAL"
    with pytest.raises(RuntimeError, match="does not have configuration with key: NOPE"):
        so.get_session_config_entry("NOPE")
    so.add_session_config_entry("sdx.warmup_runs", "3")  # sdx options by config key
    assert so.warmup_runs == 3
    with pytest.raises(ValueError, match="'sdx.warmup_runz'.*not an sdx option"):
        so.add_session_config_entry("sdx.warmup_runz", "3")
    with pytest.raises(ValueError, match="is not a bool"):
        so.add_session_config_entry("sdx.jit_enabled", "maybe")
    with pytest.raises(ValueError, match="load_model_format 'ORT'"):
        so.add_session_config_entry("session.load_model_format", "ORT")


def test_run_options_config_entries_and_logid():
    ro = sdx.RunOptions()
    ro.logid = "thread1"
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with pytest.raises(RuntimeError, match="key: x"):
        ro.get_run_config_entry("x")
    sess = sdx.InferenceSession(mul_model().SerializeToString())
    (y,) = sess.run([], {"X": np.ones((3, 2), np.float32)}, ro)
    assert y.shape == (3, 2)
    with pytest.raises(TypeError, match="run_options must be an sdx.RunOptions"):
        sess.run([], {"X": np.ones((3, 2), np.float32)}, {"terminate": True})


def test_custom_op_libraries_are_refused():
    with pytest.raises(RuntimeError, match="does not load onnxruntime custom-op libraries"):
        sdx.SessionOptions().register_custom_ops_library("./libcustom_op_library.so")


def test_star_import_shadows_no_builtin():
    import builtins

    assert not [n for n in sdx.__all__ if hasattr(builtins, n)]
    ns: dict = {}
    exec("from sdx import *", ns)
    assert "NotImplemented" not in ns and sdx.NotImplemented is not builtins.NotImplemented
