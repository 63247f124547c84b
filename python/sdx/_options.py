"""SessionOptions and RunOptions, with onnxruntime's fields and sdx's option table.

    so = sdx.SessionOptions()
    so.graph_optimization_level = sdx.GraphOptimizationLevel.ORT_ENABLE_BASIC   # onnxruntime's field
    so.warmup_runs = 2                                                          # sdx's option table
    so.add_session_config_entry("sdx.jit_enabled", "0")                         # an sdx option by config key
    so.warmup_run = 3          # AttributeError: a typo is an error, as in onnxruntime

Every attribute is either an sdx option (README "Options"), an onnxruntime field sdx honours, or an
onnxruntime field sdx cannot honour: assigning a non-default value to one of those warns once per
process, naming the field and why.
"""
from __future__ import annotations

import enum
import os
import warnings
from typing import Any, Sequence

import numpy as np

from . import _sdx
from ._module_info import default_severity


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels, mapped onto sdx's pass categories: DISABLE_ALL runs no pass; BASIC the
    cleanup, constant and algebraic passes; EXTENDED adds the fusions; LAYOUT and ALL every pass."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """ORT_PARALLEL runs independent steps at the same time (sdx's inter_op_num_threads > 1)."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


# Pass categories each level leaves out (sdx._sdx.optimizer_passes() gives every pass's category).
_LEVEL_SKIPS = {GraphOptimizationLevel.ORT_ENABLE_BASIC: ("fusion", "layout", "precision"),
                GraphOptimizationLevel.ORT_ENABLE_EXTENDED: ("layout",)}

# The session options table (src/runtime/session_options.inc): one dict per option with its Python name,
# C++ field, environment variable, type, default, accepted values and help.
OPTION_TABLE: list[dict] = _sdx.session_option_table()
_TABLE_BY_NAME = {row["name"]: row for row in OPTION_TABLE}
_OPTION_KINDS = {"bool": bool, "int": int, "int64": int, "double": float, "string": str, "execution mode": str,
                 "string list": list}

# onnxruntime fields sdx honours, with onnxruntime's defaults (execution_mode and the thread counts are
# also sdx options; see _to_dict).
_ORT_FIELDS: dict[str, Any] = {
    "enable_profiling": False, "profile_file_prefix": "onnxruntime_profile_",
    "graph_optimization_level": GraphOptimizationLevel.ORT_ENABLE_ALL, "log_verbosity_level": 0, "logid": "",
    "optimized_model_filepath": "", "use_deterministic_compute": False,
}
# onnxruntime fields sdx accepts but cannot honour: default, and why (warned once when set otherwise).
_UNHONOURED: dict[str, tuple[Any, str]] = {
    "enable_cpu_mem_arena": (True, "sdx plans every buffer of a frozen plan ahead of time and has no arena"),
    "enable_mem_pattern": (True, "sdx always plans memory from the shapes it records (it cannot be turned off)"),
    "enable_mem_reuse": (True, "sdx's memory planner always reuses buffers whose lifetimes do not overlap"),
    "execution_order": (ExecutionOrder.DEFAULT, "sdx orders steps by its own plan"),
}

# Session config keys sdx reads (others are kept and returned by get_session_config_entry, and warned
# about once: onnxruntime's execution providers read keys sdx does not have).
_CONFIG_HONOURED = {
    "session.optimized_model_external_initializers_file_name",
    "session.optimized_model_external_initializers_min_size_in_bytes",
    "session.record_ep_graph_assignment_info",
    "session.load_model_format", "session.save_model_format",
}
_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _option_from_string(row: dict, text: str) -> Any:
    """An sdx option's value from a config entry's string."""
    kind = _OPTION_KINDS[row["type"]]
    try:
        if kind is bool:
            if text.lower() in ("1", "true", "on", "yes"):
                return True
            if text.lower() in ("0", "false", "off", "no"):
                return False
            raise ValueError(text)
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        if kind is list:
            return [x for x in text.split(",") if x]
        return text
    except ValueError:
        raise ValueError(f"sdx: config entry 'sdx.{row['name']}' = '{text}' is not a {row['type']}; "
                         f"expected {row['accepts']}") from None


class SessionOptions:
    """Options for an InferenceSession: onnxruntime's fields (same names and defaults) and sdx's option
    table (README "Options"). Unknown attributes raise AttributeError. sdx's own execution modes
    ("AUTO", "CPU_REPLAY", "SLOT_BY_SLOT") may be assigned to `execution_mode` as strings; onnxruntime's
    ExecutionMode values choose sequential or parallel steps. SDX_* environment variables win over
    these fields."""

    def __init__(self) -> None:
        d = self.__dict__
        for row in OPTION_TABLE:
            default = row["default"]
            d[row["name"]] = list(default) if isinstance(default, list) else default
        d["execution_mode"] = ExecutionMode.ORT_SEQUENTIAL
        d["log_severity_level"] = 2
        for name, default in _ORT_FIELDS.items():
            d[name] = default
        for name, (default, _) in _UNHONOURED.items():
            d[name] = default
        d["_log_severity_set"] = False
        d["_config"] = {}
        d["_initializers"] = {}
        d["_external_files"] = {}
        d["_free_dims"] = []

    _NAMES = frozenset(list(_TABLE_BY_NAME) + list(_ORT_FIELDS) + list(_UNHONOURED) + ["execution_mode", "log_severity_level"])

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in SessionOptions._NAMES:
            raise AttributeError(f"'SessionOptions' object has no attribute '{name}' (sdx: not an onnxruntime field "
                                 "nor an sdx option; see README 'Options')")
        if name in _UNHONOURED and value != _UNHONOURED[name][0]:
            warn_once(f"SessionOptions.{name}", f"sdx: SessionOptions.{name}={value!r} has no effect: {_UNHONOURED[name][1]}")
        if name == "log_severity_level":
            self.__dict__["_log_severity_set"] = True
        if name == "graph_optimization_level":
            value = GraphOptimizationLevel(int(value))
        self.__dict__[name] = value

    # -- config entries
    def add_session_config_entry(self, key: str, value: str) -> None:
        key, value = str(key), str(value)
        if key.startswith("sdx."):
            row = _TABLE_BY_NAME.get(key[4:])
            if row is None:
                raise ValueError(f"sdx: config entry '{key}': '{key[4:]}' is not an sdx option; the options are "
                                 + ", ".join(_TABLE_BY_NAME))
            setattr(self, row["name"], _option_from_string(row, value))
        elif key not in _CONFIG_HONOURED:
            warn_once(f"config:{key}", f"sdx: session config entry '{key}' is kept but has no effect in sdx")
        if key == "session.load_model_format" and value.upper() != "ONNX":
            raise ValueError(f"sdx: session.load_model_format '{value}': sdx loads ONNX models and .sdx bundles")
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise RuntimeError(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    # -- model edits applied at load
    def add_initializer(self, name: str, ort_value: Any) -> None:
        """Replaces the model's initializer `name` with this value (an OrtValue or array)."""
        self._initializers[str(name)] = _array_of(ort_value, name)

    def add_external_initializers(self, names: Sequence[str], ort_values: Sequence[Any]) -> None:
        """Supplies initializers whose data the model keeps outside it (external data), by name."""
        if len(names) != len(ort_values):
            raise ValueError(f"sdx: add_external_initializers: {len(names)} names but {len(ort_values)} values")
        for name, value in zip(names, ort_values):
            self.add_initializer(name, value)

    def add_external_initializers_from_files_in_memory(self, names: Sequence[str], buffers: Sequence[Any],
                                                       lengths: Sequence[int]) -> None:
        """Supplies the contents of external data files by the file names the model gives them."""
        if not (len(names) == len(buffers) == len(lengths)):
            raise ValueError("sdx: add_external_initializers_from_files_in_memory: names, buffers and lengths differ "
                             f"in length ({len(names)}, {len(buffers)}, {len(lengths)})")
        for name, buf, length in zip(names, buffers, lengths):
            data = bytes(memoryview(buf).cast("B"))
            if int(length) > len(data) or int(length) < 0:
                raise ValueError(f"sdx: external file '{name}': length {length} but the buffer holds {len(data)} bytes")
            self._external_files[str(name)] = data[: int(length)]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        self._add_free_dim("name", dim_name, dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        self._add_free_dim("denotation", dim_denotation, dim_value)

    def _add_free_dim(self, kind: str, key: str, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 0:
            raise ValueError(f"sdx: free dimension override {key!r} must be a non-negative int, not {value!r}")
        self._free_dims.append((kind, str(key), int(value)))

    def register_custom_ops_library(self, library_path: str) -> None:
        raise RuntimeError(f"sdx: cannot load custom op library '{library_path}': sdx does not load onnxruntime "
                           "custom-op libraries (its kernels come from its own registry; sdx.supported_ops() lists them)")

    # -- to the engine
    def _field(self, name: str, kind: type) -> Any:
        value = getattr(self, name)
        if kind is bool:
            if isinstance(value, (bool, int, np.bool_)):
                return bool(value)
        elif kind is int:
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                return int(value)
        elif kind is float:
            if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                return float(value)
        elif kind is str:
            if isinstance(value, (str, os.PathLike)):
                return os.fspath(value)
        elif kind is list:
            if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
                return list(value)
            raise TypeError(f"sdx: SessionOptions.{name} must be a list of str, not {value!r:.60}")
        raise TypeError(f"sdx: SessionOptions.{name} must be {kind.__name__}, not {type(value).__name__} {value!r:.60}")

    def _copy_for_streams(self) -> "SessionOptions":
        """These options for the session of a decoder's paged form (_kv_streams.py): kv_streams off there."""
        other = SessionOptions()
        for name, value in self.__dict__.items():
            other.__dict__[name] = dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) \
                else value
        other.__dict__["kv_streams"] = False
        other.__dict__["optimized_model_filepath"] = ""
        return other

    def _to_dict(self) -> dict:
        """sdx's option table as the engine takes it, with onnxruntime's fields mapped onto it."""
        d = {}
        for row in OPTION_TABLE:
            if row["name"] == "execution_mode":
                continue
            d[row["name"]] = self._field(row["name"], _OPTION_KINDS[row["type"]])
        mode = self.execution_mode
        if isinstance(mode, str):
            d["execution_mode"] = mode
        elif isinstance(mode, (int, np.integer)) and int(mode) in (0, 1):
            d["execution_mode"] = _TABLE_BY_NAME["execution_mode"]["default"]
            if int(mode) == ExecutionMode.ORT_PARALLEL and d["inter_op_num_threads"] <= 1:
                d["inter_op_num_threads"] = max(2, os.cpu_count() or 2)
        else:
            raise TypeError(f"sdx: SessionOptions.execution_mode must be an ExecutionMode or an sdx mode name, not {mode!r:.60}")
        # onnxruntime: 0 verbose .. 4 fatal; sdx: 0 errors .. 3 verbose. Without either field set, the
        # default logger's severity (set_default_logger_severity) decides.
        if self._log_severity_set:
            d["log_level"] = min(3, max(0, 3 - self._field("log_severity_level", int)))
        elif d["log_level"] == _TABLE_BY_NAME["log_level"]["default"]:
            d["log_level"] = min(3, max(0, 3 - default_severity()))
        level = self.graph_optimization_level
        if level == GraphOptimizationLevel.ORT_DISABLE_ALL:
            d["optimizer_enabled"] = False
        elif level in _LEVEL_SKIPS:
            cats = _LEVEL_SKIPS[level]
            d["optimizer_skip"] = sorted(set(d["optimizer_skip"]) | {name for _, name, cat in _sdx.optimizer_passes()
                                                                     if cat.lower() in cats})
        if self.use_deterministic_compute:
            d["jit_enabled"] = False  # JIT kernels swap in mid-session and may round differently
        return d

    def _edits(self) -> dict | None:
        """What the loader changes in the model: free dims, initializers, external files (None: nothing)."""
        if not (self._initializers or self._external_files or self._free_dims):
            return None
        return {"initializers": dict(self._initializers), "external_files": dict(self._external_files),
                "free_dims": list(self._free_dims)}


def _array_of(value: Any, name: str) -> np.ndarray:
    from ._ortvalue import OrtValue

    arr = value.numpy() if isinstance(value, OrtValue) else np.asarray(value)
    if not isinstance(arr, np.ndarray) or arr.dtype.kind in ("U", "S", "O"):
        raise TypeError(f"sdx: initializer '{name}' must be a numeric tensor (an OrtValue or numpy array)")
    return np.ascontiguousarray(arr)


class RunOptions:
    """Per-call options (onnxruntime.RunOptions). Setting `terminate` from another thread stops a run in
    progress between two steps: run() raises sdx.Fail ("Exiting due to terminate flag being set to
    true."). Run config entries are kept; "memory.enable_memory_arena_shrinkage" is accepted (sdx's plans
    hold no arena to shrink)."""

    _FIELDS = {"log_severity_level": 2, "log_verbosity_level": 0, "logid": "", "only_execute_path_to_fetches": False,
               "synchronize_execution_providers": True}

    def __init__(self) -> None:
        for name, default in RunOptions._FIELDS.items():
            self.__dict__[name] = default
        self.__dict__["_flag"] = _sdx.TerminateFlag()
        self.__dict__["_config"] = {}
        self.__dict__["_adapters"] = []

    @property
    def terminate(self) -> bool:
        return self._flag.get()

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._flag.set(bool(value))

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "terminate":
            object.__setattr__(self, name, value)
            return
        if name not in RunOptions._FIELDS:
            raise AttributeError(f"'RunOptions' object has no attribute '{name}'")
        self.__dict__[name] = value

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise RuntimeError(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]

    def add_active_adapter(self, adapter: Any) -> None:
        from ._lora import LoraAdapter

        if not isinstance(adapter, LoraAdapter):
            raise TypeError(f"sdx: add_active_adapter needs a LoraAdapter, not {type(adapter).__name__}")
        self._adapters.append(adapter)


def get_default_session_options() -> SessionOptions:
    return SessionOptions()
