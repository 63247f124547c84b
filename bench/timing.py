"""Helpers shared by the benchmark scripts: the onnxruntime session they compare against, random feeds,
interleaved blocks of calls, paired per-round ratios and percentile summaries."""
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


def make_ort(model_bytes: bytes, threads: int):
    """onnxruntime as the benchmarks run it: CPU provider, `threads` intra-op threads, sequential, default
    graph optimizations."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


def make_feeds(sess, seed: int) -> dict:
    """Random normal float32 inputs (symbolic dims as 1); an int64 input is an attention mask of ones with
    the last quarter of the last axis as padding."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        if arg.type == "tensor(int64)":
            mask = np.ones(shape, np.int64)
            mask[..., -max(1, shape[-1] // 4):] = 0
            feeds[arg.name] = mask
        else:
            feeds[arg.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def interleave(engines: dict, feeds: dict, rounds: int, block: int) -> dict:
    """{engine: [[ns, ...] per round]}: `rounds` rounds of `block` calls per engine, the order rotating
    each round."""
    samples = {name: [[] for _ in range(rounds)] for name in engines}
    order = list(engines)
    for r in range(rounds):
        shift = r % len(order)
        for name in order[shift:] + order[:shift]:
            time_block(engines[name], feeds, block, samples[name][r])
    return samples


def paired_ratios(mine: list, theirs: list) -> list:
    """Per round, p50 of `mine`'s block / p50 of `theirs`'s block (lists of per-round ns lists).

    The two blocks of a round run back to back, so they see the same machine state: this VM moves its two
    vCPUs between a fast state and one where 2 threads are no faster than 1, every few seconds
    (bench/README.md, "The MLP, and why in-process figures swing"), which a p50 pooled over the whole run
    mixes in unequal shares for the two engines."""
    return [float(np.median(a) / np.median(b)) for a, b in zip(mine, theirs) if a and b]


def pick_block(engines: dict, feeds: dict, block_ms: float) -> int:
    """Calls per block so that one block of the slowest engine takes about block_ms (1 .. 500)."""
    slowest = 0.0
    for sess in engines.values():
        t0 = time.perf_counter()
        sess.run(None, feeds)
        slowest = max(slowest, time.perf_counter() - t0)
    return int(min(500, max(1, round(block_ms / 1e3 / max(slowest, 1e-7)))))


def versions() -> dict:
    """Versions of what a benchmark measured, for its JSON report."""
    import platform

    import onnxruntime as ort
    import sdx

    return {"sdx": sdx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


def platform_info() -> dict:
    """The machine a benchmark ran on, for its JSON report."""
    import os
    import platform

    return {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count()}


def write_json(path: str, report: dict) -> None:
    import json

    with open(path, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {path}")
