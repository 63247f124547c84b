"""Op timing: the process-wide OpTimingTracker every sdx session reports into, and `sdx profile`.

    import sdx.profiling as prof
    with prof.timing("detailed"):          # or SDX_OP_TIMING=simple|detailed|trace before import
        for _ in range(100):
            sess.run(None, feeds)
    print(prof.hotspots(20))               # the hotspot table
    print(prof.breakdown("MatMul"))        # per-phase times of one op type
    prof.export_csv("/tmp/ops.csv")        # OpName, Calls, TotalMs, AvgUs, ..., P50Us, P90Us, P99Us
    prof.export_chrome_trace("/tmp/trace.json")   # trace mode: load in Perfetto / chrome://tracing

Modes: "disabled" (costs one relaxed atomic load per op), "simple" (total time per execution),
"detailed" (also VALIDATION, SHAPE_CALC, MEMORY_ALLOC, KERNEL_SELECT, KERNEL_EXEC) and "trace"
(detailed, plus every execution kept for the Chrome trace). A replayed plan's ops are bound calls, so
all of their time is KERNEL_EXEC; the other phases show up in slot-by-slot runs (warmup, fallbacks).

Each thread records into a ring of 8192 entries; flush() drains them into the statistics. timing()
flushes on exit; for long runs call flush() at least every 8192 ops per thread (`counters()` reports
executions lost to overwrite).
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Iterator

from . import _sdx

MODES = ("disabled", "simple", "detailed", "trace")


def set_mode(mode: str) -> None:
    _sdx.op_timing_set_mode(str(mode))


def mode() -> str:
    return _sdx.op_timing_mode()


def flush() -> None:
    _sdx.op_timing_flush()


def reset() -> None:
    """Forgets statistics, trace and counters."""
    _sdx.op_timing_reset()


def stats() -> list[dict]:
    """Per op type, largest total first: op, calls, total_ms, avg_us, stddev_us, min_us, max_us,
    p50_us, p90_us, p99_us, phase_total_ms {PHASE: ms}, histogram (24 bucket counts)."""
    return _sdx.op_timing_stats()


def thread_stats() -> list[dict]:
    return _sdx.op_timing_thread_stats()


def counters() -> dict:
    """recorded, overwritten (lost to ring overwrite), trace_events, trace_dropped."""
    return _sdx.op_timing_counters()


def hotspots(top: int = 20) -> str:
    return _sdx.op_timing_hotspots(int(top))


def breakdown(op: str) -> str:
    return _sdx.op_timing_breakdown(op)


def histogram(op: str) -> str:
    return _sdx.op_timing_histogram(op)


def thread_table() -> str:
    return _sdx.op_timing_thread_table()


def export_csv(path: str) -> None:
    _sdx.op_timing_export_csv(str(path))


def export_chrome_trace(path: str) -> None:
    _sdx.op_timing_export_chrome_trace(str(path))


@contextlib.contextmanager
def timing(mode: str = "simple", reset_first: bool = True) -> Iterator[None]:
    """Times every op run inside the block (in every session of the process), then flushes and restores
    the previous mode."""
    previous = _sdx.op_timing_mode()
    flush()
    if reset_first:
        reset()
    set_mode(mode)
    try:
        yield
    finally:
        flush()  # while still in `mode`: trace mode keeps the executions it drains
        set_mode(previous)


# ---- `sdx profile`

def _recorded_runs(sess, feeds, args) -> list:
    """Latency (ns) of args.runs runs with the tracker on in args.mode; a progress bar after a second."""
    from ._cli_support import Progress

    lat = []
    with timing(args.mode), Progress("sdx profile", args.runs, "runs", delay_s=1.0) as bar:
        for i in range(args.runs):
            t = time.perf_counter_ns()
            sess.run(None, feeds)
            lat.append(time.perf_counter_ns() - t)
            flush()  # a run of up to 8192 ops per thread never overwrites
            bar.update(i + 1)
    return lat


def cmd_profile(args) -> int:
    import numpy as np

    import sdx
    from .feeds import make_feeds

    opts = sdx.SessionOptions()
    if args.threads:
        opts.intra_op_num_threads = args.threads
    t0 = time.perf_counter()
    sess = sdx.InferenceSession(args.model, opts)
    print(f"model: {args.model}  (loaded in {(time.perf_counter() - t0) * 1e3:.1f} ms)", file=sys.stderr)
    feeds = make_feeds(sess, args.shape, args.seed, args.dim)
    print(f"warmup: {args.warmup} runs (not recorded)", file=sys.stderr, flush=True)
    for _ in range(args.warmup):
        sess.run(None, feeds)
    sess.wait_for_jit(120.0)  # compiled kernels swap in before the recorded runs
    for _ in range(2):
        sess.run(None, feeds)
    lat = _recorded_runs(sess, feeds, args)
    c = counters()
    us = np.asarray(lat) / 1e3
    _, rep = sess.run_with_report(None, feeds)
    print(f"recorded {args.runs} runs ({c['recorded']} op executions, {rep['execution_mode']}, mode {args.mode}); "
          f"run latency p50 {np.percentile(us, 50):.1f} us, p90 {np.percentile(us, 90):.1f} us")
    if c["overwritten"]:
        print(f"warning: {c['overwritten']} executions were overwritten in the rings before a flush read them")
    print(hotspots(args.top))
    st = stats()
    if args.mode != "simple" and st:
        print(breakdown(st[0]["op"]))
    if args.histogram and st:
        for s in st[: max(1, min(args.top, 3))]:
            print(histogram(s["op"]))
    if len(thread_stats()) > 1:
        print(thread_table())
    if args.csv:
        export_csv(args.csv)
        print(f"wrote {args.csv}")
    if args.trace:
        if args.mode != "trace":
            print("note: --trace records in trace mode only; rerun with --mode trace", file=sys.stderr)
        else:
            export_chrome_trace(args.trace)
            print(f"wrote {args.trace} ({c['trace_events']} events; open in https://ui.perfetto.dev)")
    return 0


def add_parser(sub) -> None:
    """Registers `sdx profile` on the CLI's subparsers."""
    from ._cli_support import int_at_least

    p = sub.add_parser("profile", help="time every op of a model: hotspot table, phases, Chrome trace, CSV",
                       description="Run a model (warmup runs first, not recorded) with the op timing tracker on and "
                                   "print the hotspot table; optionally export a Chrome trace and a CSV.")
    p.add_argument("model")
    p.add_argument("--mode", default="simple", choices=MODES[1:],
                   help="simple (default), detailed (per-phase times) or trace")
    p.add_argument("--warmup", type=int_at_least(0), default=10, help="runs before recording (default 10)")
    p.add_argument("--runs", type=int_at_least(1), default=100, help="recorded runs, at least 1 (default 100)")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace JSON (with --mode trace)")
    p.add_argument("--csv", metavar="FILE", help="write per-op statistics as CSV")
    p.add_argument("--top", type=int_at_least(1), default=20, help="rows of the hotspot table (default 20)")
    p.add_argument("--histogram", action="store_true", help="also print the latency histogram of the top ops")
    p.add_argument("--threads", type=int_at_least(0), default=0, help="intra-op threads (default: physical cores)")
    p.add_argument("--shape", action="append", metavar="NAME=DIMS|NAME=FILE.npy",
                   help="input dims for random values (e.g. x=1x3x224x224) or a .npy value; repeatable")
    p.add_argument("--dim", type=int_at_least(0), default=1, help="value for symbolic dims of random inputs (default 1)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed for random inputs")
    p.set_defaults(fn=cmd_profile)
