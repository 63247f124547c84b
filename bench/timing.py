"""Timing helpers shared by the benchmark scripts (interleaved blocks of calls, percentile summaries)."""
from __future__ import annotations

import time

import numpy as np


# Pause before each block. Engines keep their worker threads spinning after a call (onnxruntime's
# intra-op pool spins by default, for tens of milliseconds), and those threads take a core from the
# engine timed next in the same process. Measured on ResNet-18 at 2 threads, blocks of one call: sdx
# 19 ms alone but 26-38 ms right after an onnxruntime block with a 10-30 ms pause, 19 ms after 60 ms or
# more; onnxruntime's own figure stays at 17-18 ms whatever the pause. Both engines get the same pause,
# as between requests to a server.
SETTLE_S = 0.1


def time_block(sess, feeds: dict, calls: int, out: list, settle_s: float = SETTLE_S) -> None:
    """Appends the latency in ns of each of `calls` runs of sess.run(None, feeds) to `out`, after a
    pause of settle_s seconds (see SETTLE_S)."""
    if settle_s > 0:
        time.sleep(settle_s)
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
