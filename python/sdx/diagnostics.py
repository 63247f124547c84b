"""Diagnostics (obs::Diagnostics): what sdx decided and why, by category, as a JSON report.

    import sdx.diagnostics as diag
    diag.enable("FALLBACK", "DETAILED")      # or diag.enable("all"); or SDX_DIAGNOSTICS_ENABLED=1
    sess.run(None, feeds)
    r = diag.report()                        # {"categories": {"FALLBACK": {"level", "counts", "last", "events", "dropped"}}}
    diag.write("report.json")

Categories: COMPILE, EXECUTE, MEMORY, GRAPH_REPLAY, JIT, OPTIMIZER, CACHE, WARMUP, CAPTURE, LIVENESS, WIRING,
SHAPES, GAPS, TENSOR_PARALLEL, PIPELINE_PARALLEL, SLOT_STATE, FALLBACK, STREAM, POINTER, LATENCY, COLORING.
Levels: SUMMARY (decisions counted, the last detail of each kept), DETAILED (every event with its detail),
FULL (also per-call events: each replay and its latency). Environment: SDX_DIAGNOSTICS_ENABLED,
SDX_DIAGNOSTICS_CATEGORIES, SDX_DIAGNOSTICS_LEVEL, SDX_DIAGNOSTICS_JSON_OUTPUT (written at exit).
"""
from __future__ import annotations

import json
from typing import Iterable

from . import _sdx


def enable(categories: str | Iterable[str] = "all", level: str = "SUMMARY") -> None:
    for c in ([categories] if isinstance(categories, str) else list(categories)):
        _sdx.diagnostics_enable(str(c), str(level))


def disable(categories: str | Iterable[str] = "all") -> None:
    enable(categories, "OFF")


def report() -> dict:
    return json.loads(_sdx.diagnostics_json())


def write(path: str) -> None:
    _sdx.diagnostics_write(str(path))


def reset() -> None:
    """Forgets what was recorded (the enabled levels stay)."""
    _sdx.diagnostics_reset()
