#!/usr/bin/env python3
"""Threads under a co-running load: is sdx at 2 threads ever slower than at 1 when another process keeps
a core busy? (issue 17: "sdx at N threads is never slower than at 1 thread, even with a co-running
process spinning on the other core").

For each model (zoo.toml names; default a BERT-class encoder and a CNN), in rounds: each engine at 1 and
at 2 threads runs a block of calls alone, then the same blocks while a co-runner process spins. The
co-runner is a bounded busy loop in a separate process (it ends by itself after --corun-s seconds, even
if this script dies). Blocks start after a pause (timing.py's SETTLE_S), so no engine's spinning workers
run into another's block. Reported: p50 per engine, thread count and condition, and the ratio of 2
threads to 1 thread per condition (the median over rounds of the per-round ratio).

    cd /tmp && PYTHONPATH=/path/to/repo/build/wheel/python python3 /path/to/repo/bench/corun.py
    python3 bench/corun.py --models minilm_l3_paraphrase --rounds 5 --json /tmp/corun.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]

import numpy as np  # noqa: E402

import zoo  # noqa: E402  (bench/zoo.py: the models, their feeds and the fetch)
from timing import make_ort, pick_block, platform_info, time_block, versions, write_json  # noqa: E402

SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"


def corunner(seconds: float) -> subprocess.Popen:
    """A process that spins one core for `seconds`, then exits."""
    return subprocess.Popen([sys.executable, "-c", SPIN.format(s=seconds)])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--models", default="minilm_l3_paraphrase,yolov8n_nudenet", help="zoo.toml names")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--block-ms", type=float, default=300.0, help="about this long per block")
    p.add_argument("--corun-s", type=float, default=600.0, help="upper bound on each co-runner's life")
    p.add_argument("--cache-dir", default=zoo.default_cache_dir())
    p.add_argument("--no-ort", action="store_true", help="time sdx only")
    p.add_argument("--json", help="also write every figure here")
    args = p.parse_args()
    by_name = {m["name"]: m for m in zoo.load_zoo()}
    unknown = [n for n in args.models.split(",") if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}")
    results = []
    for name in args.models.split(","):
        m = by_name[name]
        path = zoo.fetch(m, args.cache_dir)
        data = open(path, "rb").read()
        feeds = zoo.make_feeds(m)
        engines = {("sdx", 1): zoo.make_sdx(path, 1), ("sdx", 2): zoo.make_sdx(path, 2)}
        if not args.no_ort:
            engines.update({("ort", 1): make_ort(data, 1), ("ort", 2): make_ort(data, 2)})
        for sess in engines.values():
            for _ in range(5):
                sess.run(None, feeds)
        block = pick_block({f"{e}{t}": s for (e, t), s in engines.items()}, feeds, args.block_ms)
        samples = {(e, t, c): [] for (e, t) in engines for c in ("alone", "corun")}
        print(f"== {name}: {args.rounds} rounds, {block} call(s) per block", file=sys.stderr, flush=True)
        for r in range(args.rounds):
            order = list(engines)
            order = order[r % len(order):] + order[:r % len(order)]
            for cond in ("alone", "corun"):
                spinner = corunner(args.corun_s) if cond == "corun" else None
                try:
                    if spinner:
                        time.sleep(0.05)  # the co-runner is up and spinning
                    for key in order:
                        ns: list = []
                        time_block(engines[key], feeds, block, ns)
                        samples[key + (cond,)].append(float(np.median(ns)) / 1e3)
                finally:
                    if spinner:
                        spinner.kill()
                        spinner.wait()
        row = {"model": name, "block": block, "rounds": args.rounds, "p50_us": {}, "ratio_2t_1t": {}}
        for (e, t, c), v in samples.items():
            row["p50_us"][f"{e} {t}T {c}"] = statistics.median(v)
        for e in {e for e, _ in engines}:
            for c in ("alone", "corun"):
                per_round = [b / a for a, b in zip(samples[(e, 1, c)], samples[(e, 2, c)])]
                row["ratio_2t_1t"][f"{e} {c}"] = {"median": statistics.median(per_round), "max": max(per_round)}
        results.append(row)
    print(f"{'model':22} {'engine':6} {'cond':6} {'1T p50 us':>10} {'2T p50 us':>10} {'2T/1T':>6} {'max':>6}")
    for row in results:
        for key, rr in sorted(row["ratio_2t_1t"].items()):
            e, c = key.split()
            print(f"{row['model']:22} {e:6} {c:6} {row['p50_us'][f'{e} 1T {c}']:10.0f} "
                  f"{row['p50_us'][f'{e} 2T {c}']:10.0f} {rr['median']:6.2f} {rr['max']:6.2f}")
    if args.json:
        write_json(args.json, {"versions": versions(), "platform": platform_info(), "results": results,
                               "args": vars(args)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
