"""onnxruntime-compatible InferenceSession on top of the native sdx engine."""
from __future__ import annotations

import json
import os
import threading
import weakref
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from . import _sdx
from ._options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions, warn_once
from ._ortvalue import OrtValue, OrtValueVector, cpu_memory_info
from ._kv_streams import KVStreams
from ._profiler import SessionProfiler
from ._types import NP_TO_SDX, SDX_TO_NP, SUB_BYTE_BITS, pack_sub_byte, sdx_name_of_numpy, unpack_sub_byte
from . import _providers

# Kept for the modules that read them from here (feeds.py).
_SDX_TO_NP = SDX_TO_NP
_NP_TO_SDX = NP_TO_SDX


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
        self.graph_description = ""
        self.domain = d["domain"]
        self.description = d["description"]
        self.version = d["version"]
        self.custom_metadata_map = dict(d["custom_metadata_map"])


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


def _elem_of(type_str: str | None) -> str | None:
    """'float' of 'tensor(float)', 'seq(tensor(float))', 'optional(tensor(float))'; None for other types."""
    while type_str and "(" in type_str:
        head, _, rest = type_str.partition("(")
        type_str = rest[:-1]
        if head == "tensor":
            return type_str
    return None


def _as_array(name: str, value: Any, declared: str | None) -> np.ndarray:
    """A numpy array of a feed value: OrtValues and arrays as they are; lists and scalars converted to the
    input's declared element type, as onnxruntime does."""
    if isinstance(value, OrtValue):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return value
    elem = _elem_of(declared)
    if elem == "string":
        return np.array(value, dtype=object)
    dtype = SDX_TO_NP.get(elem) if elem else None
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise _sdx.InvalidArgument(f"input '{name}': cannot convert {type(value).__name__} to "
                                   f"{declared or 'a tensor'}: {e}") from None


def _encode(name: str, value: Any, declared: str | None = None) -> tuple:
    if value is None:
        return ("none", None, None, None)
    if isinstance(value, OrtValue) and value.is_tensor_sequence():
        value = value.numpy()
    if isinstance(value, (list, tuple)) and (declared or "").startswith(("seq(", "optional(seq(")):
        inner = _elem_of(declared)
        items = [_encode(name, v, f"tensor({inner})" if inner else None) for v in value]
        return ("sequence", items, items[0][2] if items else (inner or "float"), None)
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (np.ndarray, OrtValue)) and declared is None:
        items = [_encode(name, v) for v in value]
        return ("sequence", items, items[0][2], None)
    arr = _as_array(name, value, declared)
    if arr.dtype.kind in ("U", "S", "O", "V") and arr.dtype not in NP_TO_SDX:
        flat = [x.decode() if isinstance(x, bytes) else str(x) for x in arr.reshape(-1).tolist()]
        return ("strings", flat, "string", list(arr.shape))
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))  # the engine reads native byte order
    dtype_name = sdx_name_of_numpy(arr.dtype)
    if dtype_name is None:
        raise _sdx.InvalidArgument(f"input '{name}': numpy element type {arr.dtype} is not supported")
    declared_elem = _elem_of(declared)
    if declared_elem in SUB_BYTE_BITS:
        if arr.dtype.kind not in "iuV" and dtype_name != declared_elem:
            raise _sdx.InvalidArgument(f"input '{name}': expected element type {declared_elem} (ml_dtypes.{declared_elem} "
                                       f"or integers) but got {arr.dtype}")
        return ("tensor", pack_sub_byte(arr, declared_elem), declared_elem, list(arr.shape))
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
    if dtype_name in SUB_BYTE_BITS:
        return unpack_sub_byte(payload, dtype_name, shape)
    np_dtype = SDX_TO_NP.get(dtype_name)
    if np_dtype is None:
        raise _sdx.NotImplemented(f"output of element type {dtype_name} has no numpy form here (install ml_dtypes)")
    return payload.view(np_dtype).reshape(shape)


def _ort_config(metadata: dict) -> dict:
    """The session options an "ort_config" metadata entry holds (onnxruntime's ORT_LOAD_CONFIG_FROM_MODEL=1)."""
    text = metadata.get("ort_config")
    if not text:
        return {}
    try:
        config = json.loads(text)
    except ValueError as e:
        raise _sdx.InvalidArgument(f"model metadata 'ort_config' is not valid JSON: {e}") from None
    options = config.get("session_options", {}) if isinstance(config, dict) else None
    if not isinstance(options, dict):
        raise _sdx.InvalidArgument("model metadata 'ort_config': 'session_options' must be an object")
    return options


class _CSession:
    """onnxruntime's C-level session object (InferenceSession._sess), for code that reaches it. It holds
    its session weakly: `del sess` frees the native session at once (no reference cycle)."""

    def __init__(self, owner: "InferenceSession") -> None:
        self._owner = weakref.proxy(owner)

    def run_with_ort_values(self, feeds: dict, output_names: Sequence[str] | None, run_options: Any = None) -> OrtValueVector:
        values = self._owner.run(list(output_names) if output_names else None,
                                 {k: v for k, v in feeds.items()}, run_options)
        return OrtValueVector(OrtValue.ortvalue_from_numpy(v) if isinstance(v, np.ndarray) else OrtValue(v) for v in values)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner._native, name)


class InferenceSession:
    """Drop-in for onnxruntime.InferenceSession (CPU).

    >>> sess = sdx.InferenceSession("model.onnx")
    >>> outputs = sess.run(None, {"x": x})
    """

    def __init__(self, path_or_bytes: str | bytes | os.PathLike, sess_options: SessionOptions | None = None,
                 providers: Sequence[Any] | None = None, provider_options: Any = None, **kwargs: Any) -> None:
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sdx: sess_options must be an sdx.SessionOptions, not {type(sess_options).__name__}")
        for key in kwargs:
            if key not in ("disabled_optimizers", "read_config_from_model"):
                raise TypeError(f"sdx: InferenceSession got an unexpected keyword argument '{key}'")
        if kwargs.get("disabled_optimizers"):
            warn_once("disabled_optimizers", "sdx: disabled_optimizers names onnxruntime's optimizers and has no effect; "
                      "use SessionOptions.optimizer_skip with sdx's pass names (sdx.optimizer_passes())")
        self._options = sess_options or SessionOptions()
        self._providers, self._provider_options = _providers.resolve(providers, provider_options)
        if not isinstance(path_or_bytes, (str, bytes, bytearray, memoryview, os.PathLike)):
            raise TypeError("sdx: path_or_bytes must be a model path (str or os.PathLike) or the model's bytes, "
                            f"not {type(path_or_bytes).__name__}")
        model = bytes(path_or_bytes) if isinstance(path_or_bytes, (bytes, bytearray, memoryview)) else os.fspath(path_or_bytes)
        if isinstance(model, bytes) and not isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            model = os.fsdecode(model)
        self._model_path = model if isinstance(model, str) else None
        self._profiler = SessionProfiler(self._options.profile_file_prefix) if self._options.enable_profiling else None
        started = self._profiler.now() if self._profiler else 0
        self._native = _sdx.Session(model, self._options._to_dict(), self._options._edits())
        if os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1" or kwargs.get("read_config_from_model"):
            self._apply_model_config(model)
        if self._profiler:
            self._profiler.event("Session", "model_loading_uri", started)
        self._sess = _CSession(self)
        self._inputs = [NodeArg(*x) for x in self._native.inputs()]
        self._outputs = [NodeArg(*x) for x in self._native.outputs()]
        self._input_names = [x.name for x in self._inputs]
        self._input_types = {x.name: x.type for x in self._inputs}
        self._output_index = {x.name: i for i, x in enumerate(self._outputs)}
        # The positional fast path takes plain tensors only.
        self._positional = all(x.type.startswith("tensor(") and _elem_of(x.type) not in SUB_BYTE_BITS
                               for x in self._inputs)
        # A with-past decoder's own step loop runs on its paged form (_kv_streams.py; kv_streams option).
        # Explicit shape_buckets choose the engine's own padding instead.
        self._streams = KVStreams(self, model, self._options) \
            if self._native.kv_streams() and self._native.shape_buckets() is None \
            and KVStreams.applies(self._inputs, self._outputs) else None
        self._save_optimized_model()

    def _apply_model_config(self, model: Any) -> None:
        config = _ort_config(self._native.metadata()["custom_metadata_map"])
        if not config:
            return
        options = SessionOptions()
        for name, value in vars(self._options).items():
            options.__dict__[name] = value
        for key, value in config.items():
            if key == "execution_mode":
                value = ExecutionMode(int(value)) if not isinstance(value, str) else ExecutionMode[value]
            elif key == "graph_optimization_level":
                value = GraphOptimizationLevel(int(value)) if not isinstance(value, str) else GraphOptimizationLevel[value]
            elif isinstance(getattr(options, key, None), bool):
                value = bool(value)
            setattr(options, key, value)  # AttributeError names an unknown key
        self._options = options
        if options.enable_profiling and self._profiler is None:
            self._profiler = SessionProfiler(options.profile_file_prefix)
        self._native = _sdx.Session(model, options._to_dict(), options._edits())

    def _save_optimized_model(self) -> None:
        path = self._options.optimized_model_filepath
        if not path:
            return
        config = self._options._config
        if config.get("session.save_model_format", "ONNX").upper() != "ONNX":
            raise _sdx.InvalidArgument(f"sdx: session.save_model_format '{config['session.save_model_format']}': sdx "
                                       "writes ONNX")
        external = config.get("session.optimized_model_external_initializers_file_name", "")
        min_bytes = int(config.get("session.optimized_model_external_initializers_min_size_in_bytes", "1024"))
        self._native.save_optimized_model(os.fspath(path), external, min_bytes)

    # -- description
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Initializers that are also graph inputs; feeding one overrides its stored value."""
        return [NodeArg(*x) for x in self._native.overridable_initializers()]

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._native.metadata())

    def get_session_options(self) -> SessionOptions:
        return self._options

    def get_input_memory_infos(self) -> list:
        return [cpu_memory_info() for _ in self._inputs]

    def get_output_memory_infos(self) -> list:
        return [cpu_memory_info() for _ in self._outputs]

    def get_input_epdevices(self) -> list:
        return [None for _ in self._inputs]

    # -- providers
    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict:
        return {k: dict(v) for k, v in self._provider_options.items()}

    def set_providers(self, providers: Sequence[Any] | None = None, provider_options: Any = None) -> None:
        """Validates and records the providers (an unknown name is a RuntimeError; a known one sdx lacks
        warns); every sdx session runs on the CPU, so the session itself stays as it is."""
        self._providers, self._provider_options = _providers.resolve(providers, provider_options)

    def disable_fallback(self) -> None:
        pass

    def enable_fallback(self) -> None:
        pass

    def get_provider_graph_assignment_info(self) -> list:
        if self._options._config.get("session.record_ep_graph_assignment_info") != "1":
            raise _sdx.Fail("Session configuration entry 'session.record_ep_graph_assignment_info' must be set to \"1\" "
                            "to retrieve EP graph assignment information.")
        return [_EpSubgraph("CPUExecutionProvider", [_EpNode(*n)]) for n in self._native.nodes()]

    # -- running
    def run(self, output_names: Iterable[str] | None, input_feed: dict[str, Any], run_options: Any = None) -> list:
        if run_options is not None:
            return self._run_with_options(output_names, input_feed, run_options)
        if self._profiler:
            return self._run_profiled(output_names, input_feed, None)
        if self._streams is not None:
            r = self._streams.run(output_names, input_feed, False)
            if r is not None:
                return r
        # One native call when every input is a C-contiguous array of a numpy type (None: it is not).
        if output_names is not None and type(output_names) is not list and type(output_names) is not tuple:
            return self._run(output_names, input_feed, False)  # other iterables, and the errors, take the long way
        r = self._native.run_feed(input_feed, output_names)
        if type(r) is list:
            return r
        if r is not None:  # ("general", outputs): some hold what numpy cannot, decoded here
            values = r[1]
            values[:] = [_decode(v) if type(v) is tuple else v for v in values]
            return values
        return self._run(output_names, input_feed, False)

    def _run_with_options(self, output_names: Any, input_feed: dict, run_options: Any) -> list:
        if not isinstance(run_options, RunOptions):
            raise TypeError(f"sdx: run_options must be an sdx.RunOptions, not {type(run_options).__name__}")
        if run_options._adapters:
            input_feed = dict(input_feed)
            for adapter in run_options._adapters:
                for name, value in adapter._parameters.items():
                    input_feed.setdefault(name, value)
        if self._profiler:
            return self._run_profiled(output_names, input_feed, run_options._flag)
        return self._run(output_names, input_feed, False, run_options._flag)

    def _run_profiled(self, output_names: Any, input_feed: dict, flag: Any) -> list:
        with self._profiler.run():
            return self._run(output_names, input_feed, False, flag)

    def run_with_report(self, output_names: Iterable[str] | None, input_feed: dict[str, Any]) -> tuple[list, dict]:
        """run(), plus the execution report of the call: slot_count, execution_mode actually used
        (SLOT_BY_SLOT or CPU_REPLAY), phase, replay_count, call_count, avg_latency_us,
        peak_memory_bytes, captured/gap/slot_by_slot step counts and fallback_reason; mode_requested and
        mode_fallback_reason (why the session runs another mode than the one asked for, or None)."""
        return self._run(output_names, input_feed, True)

    def run_async(self, output_names: Iterable[str] | None, input_feed: dict[str, Any],
                  callback: Callable[[list, Any, str], None], user_data: Any, run_options: Any = None) -> None:
        """Runs on another thread and calls callback(outputs, user_data, error): error is "" on success,
        else the message (outputs then empty), as in onnxruntime."""
        if not callable(callback):
            raise TypeError("sdx: run_async needs a callable callback(outputs, user_data, error)")

        def work() -> None:
            try:
                outputs, err = self.run(output_names, input_feed, run_options), ""
            except Exception as e:  # delivered to the callback, as onnxruntime does
                outputs, err = [], f"{type(e).__name__}: {e}"
            callback(outputs, user_data, err)

        threading.Thread(target=work, name="sdx-run-async", daemon=True).start()

    def run_with_ort_values(self, output_names: Iterable[str] | None, input_dict_ort_values: dict,
                            run_options: Any = None) -> list:
        """run() on OrtValues, returning OrtValues."""
        return list(self._sess.run_with_ort_values(input_dict_ort_values, output_names, run_options))

    def io_binding(self) -> Any:
        from ._iobinding import SessionIOBinding

        return SessionIOBinding(self)

    def run_with_iobinding(self, iobinding: Any, run_options: Any = None) -> None:
        iobinding._run(run_options)

    def _missing_inputs(self, input_feed: dict) -> None:
        missing = [n for n in self._input_names if n not in input_feed]
        if missing:
            raise _sdx.InvalidArgument(f"missing input '{missing[0]}': Required inputs ({missing}) are missing from input "
                                       f"feed ({list(input_feed)})")

    def _run(self, output_names: Iterable[str] | None, input_feed: dict[str, Any], want_report: bool,
             flag: Any = None) -> Any:
        _check_feed(input_feed, output_names)
        if self._streams is not None and flag is None and self._profiler is None:
            r = self._streams.run(output_names, input_feed, want_report)
            if r is not None:
                return r
        if self._positional and len(input_feed) == len(self._input_names):
            # Fast path: arrays in input order straight to the engine (no per-call encoding).
            try:
                arrays = [input_feed[n] for n in self._input_names]
                outs = [self._output_index[n] for n in output_names] if output_names else []
            except KeyError:
                arrays = None  # unknown names: the general path reports them
            if arrays is not None:
                r = self._native.run_arrays(arrays, outs, want_report, flag)
                if r is not None:
                    if type(r) is tuple and len(r) == 2 and r[0] == "general":
                        r = r[1]
                        values = r[0] if want_report else r
                        values[:] = [_decode(v) if type(v) is tuple else v for v in values]
                    return r
        if all(n in self._input_types for n in input_feed):
            self._missing_inputs(input_feed)
        feeds = [(name, _encode(name, value, self._input_types.get(name))) for name, value in input_feed.items()]
        names = list(output_names) if output_names else []
        r = self._native.run(feeds, names, flag, want_report)
        values = [_decode(x) for x in (r[0] if want_report else r)]
        return (values, r[1]) if want_report else values

    # -- profiling (onnxruntime's JSON trace format)
    def end_profiling(self) -> str:
        """Writes the profile (onnxruntime's JSON trace: one event per line) and returns its path; "" when
        profiling is off."""
        if not self._profiler:
            return ""
        path = self._profiler.write()
        self._profiler = None
        return path

    def get_profiling_start_time_ns(self) -> int:
        return self._profiler.start_ns if self._profiler else 0

    # -- sdx's own
    def optimization_report(self) -> dict:
        """What the graph optimizer did at load: rewrites_per_pass {pass: count}, skipped, ops_before and
        ops_after histograms, log [(pass, "before -> after", node)], iterations, text."""
        return self._native.optimization_report()

    def kv_streams(self) -> dict | None:
        """KV streams (SessionOptions.kv_streams; python/sdx/_kv_streams.py): None when the session is not a
        with-past decoder's or the option is off; else {"enabled", "reason" (why not), "paged" (the paged form is
        loaded), "streams", "calls" (calls it ran), "continued" (calls that continued a stream: nothing copied),
        "bucket", "padding" (the padding check's outcome)}."""
        return self._streams.report() if self._streams is not None else None

    def shape_buckets(self) -> dict | None:
        """The shape buckets (SessionOptions.shape_buckets, e.g. ["past_sequence_length=128"]): {"buckets": the
        dims and their steps, "status": "unchecked" (no padded call yet), "checked: ..." (the first padded
        call agreed with the exact shapes) or "disabled: ..." (it did not: exact shapes from then on, and
        why)}; None without them. A call's report (run_with_report) says how much it padded
        ("bucket_padding")."""
        return self._native.shape_buckets()

    def subgraph_reports(self) -> list[dict]:
        """Each subgraph body of the model (If branch, Loop or Scan body) as it stands now: body, attribute,
        owner, owner_op, plan (True: a plan of its own, captured and replayed; False: interpreted node by
        node), why (when interpreted), calls, replays, new_plans, captured_steps and gap_steps of its last
        call, last_fallback (why its last call did not replay), rewrites ({pass: count} the optimizer made
        in the body's own graph, which optimization_report() does not show), and nested (the bodies inside
        it). Empty with subgraph_plans off."""
        return self._native.subgraph_reports()

    def jit_stats(self) -> dict:
        """Kernel JIT counters: enabled, cache_dir, requests, disk_cache_hits, compiled, failed and
        compiler_runs (compiler processes started, --version queries included)."""
        return self._native.jit_stats()

    def loop_reports(self) -> list[dict]:
        """The loop analysis's reports (SessionOptions.loop_analysis): one dict per execution of a Loop node
        since load or clear_loop_reports(), oldest first (the latest 256 kept). Keys: node, iterations,
        trip_count, stopped_by, condition, condition_depends_on, termination {verdict, remaining, exact,
        bound_by, root_cause, text}, variables [{name, field, last, evolution {kind, limit | rate | period,
        text}}], text (the same for people). Empty when loop_analysis is off."""
        import json

        return [json.loads(r) for r in self._native.loop_reports()]

    def clear_loop_reports(self) -> None:
        self._native.clear_loop_reports()

    def wait_for_jit(self, timeout_s: float = 120.0) -> bool:
        """Waits until no JIT compile is in flight; False when timeout_s passed first."""
        return self._native.wait_for_jit(float(timeout_s))

    def cache_stats(self) -> dict:
        """Plan cache figures: entries, frozen_bytes, evictions, passivations, buffer pool hits/misses."""
        return self._native.cache_stats()

    def _engine_feeds(self, input_feed: dict[str, Any]) -> list:
        _check_feed(input_feed)
        return [(name, _encode(name, value, self._input_types.get(name))) for name, value in input_feed.items()]

    def debug(self, input_feed: dict[str, Any], breakpoints: Iterable[int | str],
              callback: Any) -> list:
        """Runs once slot by slot (the debugger forces it) and calls callback(slot, name, op, node, value)
        right after the step producing each breakpoint's value; `breakpoints` are plan slot indices (as
        introspect() reports them) or value names; `value` is a numpy array. Returns the outputs."""
        feeds = self._engine_feeds(input_feed)

        def hit(slot, name, op, node, value):
            callback(slot, name, op, node, _decode(value) if type(value) is tuple else value)

        return [_decode(x) for x in self._native.debug(feeds, list(breakpoints), hit)]

    def check_replay(self, input_feed: dict[str, Any], atol: float = 0.0) -> dict:
        """Runs the captured plan and the slot-by-slot reference side by side on input_feed and names the
        first slot whose values differ (bit for bit, or beyond atol) and the first holding NaN/Inf: replayed,
        compared, skipped, diverged, first_divergence {slot, step, value, op, node}, max_abs_diff,
        first_index, nonfinite, first_nonfinite, reference_nonfinite, summary."""
        return self._native.check_replay(self._engine_feeds(input_feed), float(atol))

    def introspect(self, input_feed: dict[str, Any]) -> dict:
        """Runs once on input_feed (a warmup) and returns the execution plan: per slot its kind,
        producer, liveness, type, bytes, memory color/offset; and the memory figures
        (naive one-buffer-per-slot bytes vs planned bytes)."""
        return self._native.introspect(self._engine_feeds(input_feed))

    def graph_text(self) -> str:
        """The loaded graph, one node per line."""
        return self._native.graph_text()


class _EpNode:
    def __init__(self, domain: str, op_type: str, name: str) -> None:
        self.domain, self.op_type, self.name = domain, op_type, name


class _EpSubgraph:
    """One entry of get_provider_graph_assignment_info(): a provider and the nodes it runs."""

    def __init__(self, ep_name: str, nodes: list) -> None:
        self.ep_name = ep_name
        self._nodes = nodes

    def get_nodes(self) -> list:
        return list(self._nodes)
