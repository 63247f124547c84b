"""The event stream: one event per kernel execution, input copy and JIT compile, from every session.

    import sdx.events as ev
    sub = ev.subscribe(lambda e: print(e["op"], e["time_us"], e["gflops"]), min_duration_us=10)
    sess.run(None, feeds)
    ev.unsubscribe(sub)

    with ev.collect() as events:          # a list filled while the block runs
        sess.run(None, feeds)
    rec = ev.record("/tmp/events.jsonl")  # JSON lines, until ev.unsubscribe(rec)

Events are dicts. kernel: op, node, shapes ("float[1, 128], ... -> float[...]"), backend, device, thread,
start_ns, time_us, flops and gflops (MatMul, Gemm, Conv, Attention, ...; 0 for ops without a cost), bytes
(inputs read + outputs written) and gbps. memory: direction, what ("inputs"), bytes, start_ns, time_us,
gbps. compile: kernel, backend, start_ns, compile_us, cache_hit, ok.

Callbacks run on the thread that did the work (pool workers, the JIT's compile thread) with the GIL held;
keep them short. min_duration_us drops kernel and memory events shorter than it. While nothing is
subscribed, sdx pays one relaxed atomic load per op.
"""
from __future__ import annotations

import atexit
import contextlib
from typing import Callable, Iterable, Iterator

from . import _sdx

KINDS = ("kernel", "memory", "compile")
_live: set[int] = set()


def subscribe(callback: Callable[[dict], None], min_duration_us: float = 0.0,
              kinds: Iterable[str] = KINDS) -> int:
    """Calls callback(event) for each event of the given kinds; returns the subscription id."""
    sid = _sdx.events_subscribe(callback, float(min_duration_us), list(kinds))
    _live.add(sid)
    return sid


def unsubscribe(sid: int) -> bool:
    _live.discard(sid)
    return _sdx.events_unsubscribe(int(sid))


def record(path: str, min_duration_us: float = 0.0) -> int:
    """Appends every event to `path` (created or truncated) as one JSON object per line, until
    unsubscribe(id)."""
    sid = _sdx.events_record(str(path), float(min_duration_us))
    _live.add(sid)
    return sid


@contextlib.contextmanager
def collect(min_duration_us: float = 0.0, kinds: Iterable[str] = KINDS) -> Iterator[list]:
    """Collects the events emitted while the block runs into a list."""
    events: list = []
    sid = subscribe(events.append, min_duration_us, kinds)
    try:
        yield events
    finally:
        unsubscribe(sid)


@atexit.register
def _unsubscribe_all() -> None:  # no Python callback may outlive the interpreter
    for sid in list(_live):
        unsubscribe(sid)
