"""InferenceSession profiling in onnxruntime's JSON trace format (SessionOptions.enable_profiling,
InferenceSession.end_profiling), recorded with sdx's op timing tracker (sdx.profiling).

The file is a JSON array with one event per line, as onnxruntime writes it: "Session" events
(model_loading_uri, model_run) and one "Node" event per executed op ("<node>_kernel_time", args
op_name and provider). Loads in chrome://tracing and Perfetto, and in onnxruntime's own profile
readers. While a profiled session runs, the process-wide tracker records in trace mode; ops of other
sessions that run at the same time land in the same time windows and are kept too: profile one
session at a time for clean figures.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading
import time
from typing import Iterator

from . import _sdx

_lock = threading.Lock()
_active = 0          # profiled runs in progress (the tracker stays in trace mode while any is)
_previous_mode = "disabled"
_consumed = 0        # trace events already read by a profiler


class SessionProfiler:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix or "onnxruntime_profile_"
        self.start_ns = time.time_ns()          # wall clock, as get_profiling_start_time_ns reports it
        self._t0 = _sdx.op_timing_now_ns()      # the tracker's clock at the same moment
        self._events: list[dict] = []
        self._runs: list[tuple[int, int]] = []
        self._nodes: list[dict] = []

    def now(self) -> int:
        return _sdx.op_timing_now_ns()

    def _us(self, ns: int) -> int:
        return max(0, (ns - self._t0) // 1000)

    def event(self, cat: str, name: str, started_ns: int, args: dict | None = None) -> None:
        end = self.now()
        self._events.append({"cat": cat, "pid": os.getpid(), "tid": threading.get_native_id(),
                             "dur": max(0, (end - started_ns) // 1000), "ts": self._us(started_ns), "ph": "X",
                             "name": name, "args": args or {}})

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        global _active, _previous_mode
        with _lock:
            if _active == 0:
                _previous_mode = _sdx.op_timing_mode()
                _sdx.op_timing_flush()
                _sdx.op_timing_set_mode("trace")
            _active += 1
        started = self.now()
        try:
            yield
        finally:
            ended = self.now()
            self.event("Session", "model_run", started)
            with _lock:
                _sdx.op_timing_flush()
                self._collect(started, ended)
                _active -= 1
                if _active == 0:
                    _sdx.op_timing_set_mode(_previous_mode)

    def _collect(self, started: int, ended: int) -> None:
        global _consumed
        pid = os.getpid()
        trace = _sdx.op_timing_trace()
        if len(trace) < _consumed:  # someone reset the tracker
            _consumed = 0
        fresh, _consumed = trace[_consumed:], len(trace)
        for op, node, thread, start, dur in fresh:
            if started <= start <= ended:
                self._nodes.append({"cat": "Node", "pid": pid, "tid": thread, "dur": dur // 1000, "ts": self._us(start),
                                    "ph": "X", "name": f"{node or op}_kernel_time",
                                    "args": {"op_name": op, "provider": "CPUExecutionProvider"}})

    def write(self) -> str:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{self.prefix}{stamp}.json"
        events = sorted(self._events + self._nodes, key=lambda e: e["ts"])
        with open(path, "w") as f:
            f.write("[\n")
            f.write(",\n".join(json.dumps(e, separators=(",", ":")) for e in events))
            f.write("\n]\n")
        return path
