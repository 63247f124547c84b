"""Automatic shape buckets against powers of two (issue 21): on a recorded trace of (batch size, sequence length)
per call, the padding each choice of K buckets costs, per dim and for both dims at once.

    python3 bench/auto_buckets.py [--trace FILE.json | --record FILE.json] [--calls 20000] [--seed 0] [--json OUT]

The trace: --trace reads one ({"calls": [[batch, length], ...]}); otherwise a synthetic one is made (seeded)
and, with --record, written for later runs. The synthetic traffic is a serving mix: batch sizes from a
dynamic batcher (60% 1, 20% 2-3, 15% 5-8, 5% 12-16) and lengths from chat-like prompts (log-normal around 120
tokens) with 15% long documents (log-normal around 900), capped at 2048.

For each K, both choices come from plan/bucket_choice.h (sdx.choose_buckets): "auto", the exact optimum over
any sizes; "powers of two", the best K powers of two (the usual fixed buckets, given the same search, so the
comparison is of the bucket sets and not of the search). Waste = padded entries / entries fed (for two dims:
padded elements B*L - b*l over B*L).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import write_json  # noqa: E402


def synthetic(calls: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    u = rng.random(calls)
    batch = np.where(u < 0.6, 1, np.where(u < 0.8, rng.integers(2, 4, calls),
                                           np.where(u < 0.95, rng.integers(5, 9, calls), rng.integers(12, 17, calls))))
    long = rng.random(calls) < 0.15
    length = np.where(long, rng.lognormal(np.log(900), 0.35, calls), rng.lognormal(np.log(120), 0.6, calls))
    length = np.clip(np.round(length), 1, 2048).astype(int)
    return [[int(b), int(n)] for b, n in zip(batch, length)]


def waste_1d(sizes: np.ndarray, buckets: list) -> float:
    b = np.asarray(sorted(buckets))
    padded = b[np.searchsorted(b, sizes)]
    return float((padded - sizes).sum() / padded.sum())


def waste_2d(calls: np.ndarray, first: list, second: list) -> float:
    a, b = np.asarray(sorted(first)), np.asarray(sorted(second))
    pa, pb = a[np.searchsorted(a, calls[:, 0])], b[np.searchsorted(b, calls[:, 1])]
    fed = (pa * pb).astype(float)
    return float((fed - calls[:, 0] * calls[:, 1]).sum() / fed.sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace")
    ap.add_argument("--record")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    import sdx

    if a.trace:
        with open(a.trace) as f:
            calls = json.load(f)["calls"]
    else:
        calls = synthetic(a.calls, a.seed)
        if a.record:
            with open(a.record, "w") as f:
                json.dump({"calls": calls, "seed": a.seed}, f)
    arr = np.asarray(calls, dtype=np.int64)
    print(f"trace: {len(arr)} calls, batch {arr[:, 0].min()}..{arr[:, 0].max()}, length {arr[:, 1].min()}.."
          f"{arr[:, 1].max()} (median {int(np.median(arr[:, 1]))})")
    rows = []
    for dim, name in ((0, "batch"), (1, "length")):
        for k in range(2, 7):
            auto = sdx.choose_buckets(arr[:, dim].tolist(), k)
            pow2 = sdx.choose_buckets(arr[:, dim].tolist(), k, power_of_two=True)
            row = {"dim": name, "k": k, "auto": auto["sizes"], "pow2": pow2["sizes"],
                   "auto_waste": waste_1d(arr[:, dim], auto["sizes"]), "pow2_waste": waste_1d(arr[:, dim], pow2["sizes"])}
            rows.append(row)
            print(f"  {name:6s} K={k}: auto {row['auto']} waste {row['auto_waste']:.1%}; powers of two {row['pow2']} "
                  f"waste {row['pow2_waste']:.1%}")
    for k in (3, 4, 5):
        calls3 = [(b, n) for b, n in calls]
        auto = sdx.choose_buckets_2d(calls3, k, k)
        pow2 = sdx.choose_buckets_2d(calls3, k, k, power_of_two=True)
        row = {"dim": "batch x length", "k": k, "auto": [auto["first"], auto["second"]],
               "pow2": [pow2["first"], pow2["second"]], "auto_waste": waste_2d(arr, auto["first"], auto["second"]),
               "pow2_waste": waste_2d(arr, pow2["first"], pow2["second"])}
        rows.append(row)
        print(f"  batch x length, {k}x{k}: auto {auto['first']} x {auto['second']} waste {row['auto_waste']:.1%}; "
              f"powers of two {pow2['first']} x {pow2['second']} waste {row['pow2_waste']:.1%}")
    if a.json:
        write_json(a.json, {"benchmark": "auto_buckets", "calls": len(arr), "seed": a.seed, "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
