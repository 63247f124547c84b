"""onnxruntime-compatible InferenceSession on top of the native sdx engine."""
from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

import numpy as np

from . import _sdx

_NP_TO_SDX = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.float16): "float16",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.bool_): "bool",
}
_SDX_TO_NP: dict[str, Any] = {v: k for k, v in _NP_TO_SDX.items()}

# Types numpy lacks come from ml_dtypes (a dependency of onnx) when available.
_ML_DTYPES = {
    "bfloat16": "bfloat16",
    "float8e4m3fn": "float8_e4m3fn",
    "float8e4m3fnuz": "float8_e4m3fnuz",
    "float8e5m2": "float8_e5m2",
    "float8e5m2fnuz": "float8_e5m2fnuz",
    "float8e8m0": "float8_e8m0fnu",
}
try:  # pragma: no cover - depends on the environment
    import ml_dtypes

    for sdx_name, ml_name in _ML_DTYPES.items():
        if hasattr(ml_dtypes, ml_name):
            dt = np.dtype(getattr(ml_dtypes, ml_name))
            _NP_TO_SDX[dt] = sdx_name
            _SDX_TO_NP[sdx_name] = dt
except ImportError:  # pragma: no cover
    pass
_RAW_FALLBACK = {"bfloat16": np.uint16}


class NodeArg:
    """Name, type string and shape of a model input or output (as onnxruntime.NodeArg)."""

    def __init__(self, name: str, type: str, shape: list):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """Model-level metadata (as onnxruntime.ModelMetadata)."""

    def __init__(self, d: dict):
        self.producer_name = d["producer_name"]
        self.producer_version = d["producer_version"]
        self.graph_name = d["graph_name"]
        self.domain = d["domain"]
        self.description = d["description"]
        self.version = d["version"]
        self.custom_metadata_map = dict(d["custom_metadata_map"])


# The session options (src/runtime/session_options.inc): one dict per option with its Python name, C++
# field, environment variable, type, default, accepted values and help.
_OPTION_TABLE: list[dict] = _sdx.session_option_table()
_OPTION_KINDS = {"bool": bool, "int": int, "int64": int, "double": float, "string": str, "execution mode": str,
                 "string list": list}


class SessionOptions:
    """Options for an InferenceSession. Fields mirror onnxruntime's where they mean the same.

    Every sdx option of the options table (README "Options"; `sdx._sdx.session_option_table()`) is an
    attribute with the table's default, e.g. `execution_mode` ("AUTO"; "SLOT_BY_SLOT" is the reference
    path; a mode this build lacks falls back with a warning), `warmup_runs`, `intra_op_num_threads`,
    `inter_op_num_threads` (> 1: independent steps run at the same time), `optimizer_skip` (pass names),
    `optimizer_fp16`, `optimizer_int8`, `jit_enabled`, `jit_cache_dir`. Their environment variables
    (SDX_*) win over them. onnxruntime's `log_severity_level` (0 verbose .. 4 fatal) sets sdx's
    `log_level` (0 errors .. 3 verbose) when assigned; `graph_optimization_level` is accepted and ignored.
    """

    def __init__(self) -> None:
        for row in _OPTION_TABLE:
            default = row["default"]
            setattr(self, row["name"], list(default) if isinstance(default, list) else default)
        self._log_severity_level: Any = None
        self.graph_optimization_level = None  # accepted for compatibility

    @property
    def log_severity_level(self) -> Any:
        """onnxruntime's verbosity (0 verbose .. 4 fatal); once assigned it wins over `log_level`."""
        if self._log_severity_level is not None:
            return self._log_severity_level
        return 3 - self.log_level if isinstance(self.log_level, int) else 2

    @log_severity_level.setter
    def log_severity_level(self, value: Any) -> None:
        self._log_severity_level = value

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

    def _to_dict(self) -> dict:
        d = {row["name"]: self._field(row["name"], _OPTION_KINDS[row["type"]]) for row in _OPTION_TABLE}
        if self._log_severity_level is not None:
            # onnxruntime: 0 verbose .. 4 fatal; sdx: 0 errors .. 3 verbose
            d["log_level"] = min(3, max(0, 3 - self._field("log_severity_level", int)))
        return d


def _check_feed(input_feed: Any, output_names: Any = None) -> None:
    """TypeError naming the argument for what the engine cannot read (onnxruntime raises the same kind)."""
    if not isinstance(input_feed, dict):
        raise TypeError(f"sdx: input_feed must be a dict mapping input names to arrays, not {type(input_feed).__name__}")
    for name in input_feed:
        if not isinstance(name, str):
            raise TypeError(f"sdx: input_feed keys must be input names (str); got {type(name).__name__} {name!r:.60}")
    if output_names is not None:
        if isinstance(output_names, (str, bytes)) or not hasattr(output_names, "__iter__"):
            raise TypeError(f"sdx: output_names must be None or a list of output names, not {output_names!r:.60}")
        for name in output_names:
            if not isinstance(name, str):
                raise TypeError(f"sdx: output_names must hold output names (str); got {type(name).__name__} {name!r:.60}")


def _encode(name: str, value: Any) -> tuple:
    if value is None:
        return ("none", None, None, None)
    if isinstance(value, (list, tuple)) and (len(value) == 0 or isinstance(value[0], np.ndarray)):
        items = [_encode(name, v) for v in value]
        return ("sequence", items, items[0][2] if items else "float", None)
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.dtype.kind in ("U", "S", "O"):
        flat = [x.decode() if isinstance(x, bytes) else str(x) for x in arr.reshape(-1).tolist()]
        return ("strings", flat, "string", list(arr.shape))
    if arr.dtype.byteorder not in ("=", "|") and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))  # the engine reads native byte order
    dtype_name = _NP_TO_SDX.get(arr.dtype)
    if dtype_name is None:
        raise _sdx.InvalidArgument(f"input '{name}': numpy element type {arr.dtype} is not supported")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    raw = arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, np.uint8)
    return ("tensor", raw, dtype_name, list(arr.shape))


def _decode(item: tuple) -> Any:
    kind, payload, dtype_name, shape = item
    if kind == "none":
        return None
    if kind == "sequence":
        return [_decode(x) for x in payload]
    if kind == "strings":
        return np.array(payload, dtype=object).reshape(shape)
    np_dtype = _SDX_TO_NP.get(dtype_name) or _RAW_FALLBACK.get(dtype_name) or np.uint8
    if dtype_name not in _SDX_TO_NP:
        return payload  # packed sub-byte types: raw bytes
    return payload.view(np_dtype).reshape(shape)


class InferenceSession:
    """Drop-in for onnxruntime.InferenceSession (CPU).

    >>> sess = sdx.InferenceSession("model.onnx")
    >>> outputs = sess.run(None, {"x": x})
    """

    def __init__(self, path_or_bytes: str | bytes | os.PathLike, sess_options: SessionOptions | None = None,
                 providers: Sequence[Any] | None = None, provider_options: Any = None, **kwargs: Any) -> None:
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sdx: sess_options must be an sdx.SessionOptions, not {type(sess_options).__name__}")
        self._options = sess_options or SessionOptions()
        if not isinstance(path_or_bytes, (str, bytes, bytearray, memoryview, os.PathLike)):
            raise TypeError("sdx: path_or_bytes must be a model path (str or os.PathLike) or the model's bytes, "
                            f"not {type(path_or_bytes).__name__}")
        model = bytes(path_or_bytes) if isinstance(path_or_bytes, (bytes, bytearray, memoryview)) else os.fspath(path_or_bytes)
        if isinstance(model, bytes) and not isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            model = os.fsdecode(model)
        self._model_path = model if isinstance(model, str) else None
        self._sess = _sdx.Session(model, self._options._to_dict())
        self._inputs = [NodeArg(*x) for x in self._sess.inputs()]
        self._outputs = [NodeArg(*x) for x in self._sess.outputs()]
        self._input_names = [x.name for x in self._inputs]
        self._output_index = {x.name: i for i, x in enumerate(self._outputs)}
        # The positional fast path takes plain tensors only.
        self._positional = all(x.type.startswith("tensor(") for x in self._inputs)

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Initializers that are also graph inputs; feeding one overrides its stored value."""
        return [NodeArg(*x) for x in self._sess.overridable_initializers()]

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._sess.metadata())

    def get_providers(self) -> list[str]:
        return ["CPUExecutionProvider"]

    def get_session_options(self) -> SessionOptions:
        return self._options

    def run(self, output_names: Iterable[str] | None, input_feed: dict[str, Any], run_options: Any = None) -> list:
        # One native call when every input is a C-contiguous array of a numpy type (None: it is not).
        if output_names is not None and type(output_names) is not list and type(output_names) is not tuple:
            return self._run(output_names, input_feed, False)  # other iterables, and the errors, take the long way
        r = self._sess.run_feed(input_feed, output_names)
        if type(r) is list:
            return r
        if r is not None:  # ("general", outputs): some hold what numpy cannot, decoded here
            values = r[1]
            values[:] = [_decode(v) if type(v) is tuple else v for v in values]
            return values
        return self._run(output_names, input_feed, False)

    def run_with_report(self, output_names: Iterable[str] | None, input_feed: dict[str, Any]) -> tuple[list, dict]:
        """run(), plus the execution report of the call: slot_count, execution_mode actually used
        (SLOT_BY_SLOT or CPU_REPLAY), phase, replay_count, call_count, avg_latency_us,
        peak_memory_bytes, captured/gap/slot_by_slot step counts and fallback_reason; mode_requested and
        mode_fallback_reason (why the session runs another mode than the one asked for, or None)."""
        return self._run(output_names, input_feed, True)

    def optimization_report(self) -> dict:
        """What the graph optimizer did at load: rewrites_per_pass {pass: count}, skipped, ops_before and
        ops_after histograms, log [(pass, "before -> after", node)], iterations, text."""
        return self._sess.optimization_report()

    def jit_stats(self) -> dict:
        """Kernel JIT counters: enabled, cache_dir, requests, disk_cache_hits, compiled, failed and
        compiler_runs (compiler processes started, --version queries included)."""
        return self._sess.jit_stats()

    def wait_for_jit(self, timeout_s: float = 120.0) -> bool:
        """Waits until no JIT compile is in flight; False when timeout_s passed first."""
        return self._sess.wait_for_jit(float(timeout_s))

    def cache_stats(self) -> dict:
        """Plan cache figures: entries, frozen_bytes, evictions, passivations, buffer pool hits/misses."""
        return self._sess.cache_stats()

    def _run(self, output_names: Iterable[str] | None, input_feed: dict[str, Any], want_report: bool) -> Any:
        _check_feed(input_feed, output_names)
        if self._positional and len(input_feed) == len(self._input_names):
            # Fast path: arrays in input order straight to the engine (no per-call encoding).
            try:
                arrays = [input_feed[n] for n in self._input_names]
                outs = [self._output_index[n] for n in output_names] if output_names else []
            except KeyError:
                arrays = None  # unknown names: the general path reports them
            if arrays is not None:
                r = self._sess.run_arrays(arrays, outs, want_report)
                if r is not None:
                    if type(r) is tuple and len(r) == 2 and r[0] == "general":
                        r = r[1]
                        values = r[0] if want_report else r
                        values[:] = [_decode(v) if type(v) is tuple else v for v in values]
                    return r
        feeds = [(name, _encode(name, value)) for name, value in input_feed.items()]
        names = list(output_names) if output_names else []
        values = [_decode(x) for x in self._sess.run(feeds, names)]
        if want_report:
            return values, {"execution_mode": "SLOT_BY_SLOT", "fallback_reason": "inputs other than plain tensors"}
        return values

    def debug(self, input_feed: dict[str, Any], breakpoints: Iterable[int | str],
              callback: Any) -> list:
        """Runs once slot by slot (the debugger forces it) and calls callback(slot, name, op, node, value)
        right after the step producing each breakpoint's value; `breakpoints` are plan slot indices (as
        introspect() reports them) or value names; `value` is a numpy array. Returns the outputs."""
        _check_feed(input_feed)
        feeds = [(name, _encode(name, value)) for name, value in input_feed.items()]

        def hit(slot, name, op, node, value):
            callback(slot, name, op, node, _decode(value) if type(value) is tuple else value)

        return [_decode(x) for x in self._sess.debug(feeds, list(breakpoints), hit)]

    def check_replay(self, input_feed: dict[str, Any], atol: float = 0.0) -> dict:
        """Runs the captured plan and the slot-by-slot reference side by side on input_feed and names the
        first slot whose values differ (bit for bit, or beyond atol) and the first holding NaN/Inf: replayed,
        compared, skipped, diverged, first_divergence {slot, step, value, op, node}, max_abs_diff,
        first_index, nonfinite, first_nonfinite, reference_nonfinite, summary."""
        _check_feed(input_feed)
        feeds = [(name, _encode(name, value)) for name, value in input_feed.items()]
        return self._sess.check_replay(feeds, float(atol))

    def introspect(self, input_feed: dict[str, Any]) -> dict:
        """Runs once on input_feed (a warmup) and returns the execution plan: per slot its kind,
        producer, liveness, type, bytes, memory color/offset; and the memory figures
        (naive one-buffer-per-slot bytes vs planned bytes)."""
        _check_feed(input_feed)
        feeds = [(name, _encode(name, value)) for name, value in input_feed.items()]
        return self._sess.introspect(feeds)

    def graph_text(self) -> str:
        """The loaded graph, one node per line."""
        return self._sess.graph_text()
