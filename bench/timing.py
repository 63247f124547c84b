"""Timing helpers shared by the benchmark scripts (interleaved blocks of calls, percentile summaries)."""
from __future__ import annotations

import time

import numpy as np


def time_block(sess, feeds: dict, calls: int, out: list) -> None:
    """Appends the latency in ns of each of `calls` runs of sess.run(None, feeds) to `out`."""
    run, clock = sess.run, time.perf_counter_ns
    for _ in range(calls):
        t0 = clock()
        run(None, feeds)
        out.append(clock() - t0)


def summarize(ns: list) -> dict:
    """calls, p50/p90/mean/min in microseconds of latencies given in ns."""
    us = np.asarray(ns, dtype=np.float64) / 1e3
    return {"calls": int(us.size), "p50_us": float(np.percentile(us, 50)), "p90_us": float(np.percentile(us, 90)),
            "mean_us": float(us.mean()), "min_us": float(us.min())}
