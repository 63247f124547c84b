"""Overhead of the op timing tracker (issue 6) on the suite's BERT encoder: p50 latency with the tracker
disabled, simple, detailed and trace, in one process, alternating blocks; and, with --reference DIR, the
disabled tracker against a build whose hot-path observer checks are compiled out (alternating processes).

    cd /tmp && PYTHONPATH=/path/to/build/dev/python python3 /path/to/repo/bench/bench_obs_overhead.py
    ... --reference /path/to/reference/build/dev/python     # A/B: the cost of the disabled checks

A reference build: a copy of the tree with `obs::observers()` in src/obs/observers.h returning a
constexpr 0 (every `if (obs::observers())` then folds away).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("disabled", "simple", "detailed", "trace")


def _session(threads: int):
    sys.path.insert(0, HERE)
    import models  # noqa: E402

    import sdx

    o = sdx.SessionOptions()
    o.intra_op_num_threads = threads
    sess = sdx.InferenceSession(models.SUITE_MODELS["bert"]().SerializeToString(), o)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int64" in i.type:
            feeds[i.name] = np.ones(shape, np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    for _ in range(30):
        sess.run(None, feeds)
    sess.wait_for_jit(120.0)
    for _ in range(10):
        sess.run(None, feeds)
    return sess, feeds


def modes(args) -> dict:
    import sdx.profiling as prof

    sess, feeds = _session(args.threads)
    samples = {m: [] for m in MODES}
    for r in range(args.rounds):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        for m in order:
            prof.set_mode(m)
            for _ in range(args.block):
                t0 = time.perf_counter_ns()
                sess.run(None, feeds)
                samples[m].append(time.perf_counter_ns() - t0)
            prof.flush()  # outside the timed calls; keeps the rings from overwriting
            prof.reset()
    prof.set_mode("disabled")
    p50 = {m: float(np.median(s)) / 1e3 for m, s in samples.items()}
    return {"p50_us": p50, "overhead_vs_disabled": {m: p50[m] / p50["disabled"] - 1 for m in MODES}}


def disabled_p50(args) -> float:
    sess, feeds = _session(args.threads)
    t = []
    for _ in range(args.rounds * args.block):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        t.append(time.perf_counter_ns() - t0)
    return float(np.median(t)) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--block", type=int, default=20, help="calls per mode per round")
    ap.add_argument("--reference", metavar="PYTHONPATH", help="python dir of a build without observer checks")
    ap.add_argument("--ab-rounds", type=int, default=6, help="process pairs for the A/B")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(disabled_p50(args)))
        return
    out = {"threads": args.threads, "model": "bert (suite)", "modes": modes(args)}
    m = out["modes"]
    print(f"BERT (suite), {args.threads} threads, {args.rounds} rounds x {args.block} calls per mode, alternating")
    for mode in MODES:
        print(f"  {mode:<9} p50 {m['p50_us'][mode]:9.1f} us   overhead vs disabled {m['overhead_vs_disabled'][mode] * 100:+6.2f}%")
    if args.reference:
        cur_env = dict(os.environ)
        ref_env = dict(os.environ, PYTHONPATH=args.reference)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--threads", str(args.threads),
               "--rounds", str(args.rounds), "--block", str(args.block)]
        cur, ref = [], []
        for i in range(args.ab_rounds):
            for env, dst in ((cur_env, cur), (ref_env, ref)) if i % 2 == 0 else ((ref_env, ref), (cur_env, cur)):
                dst.append(float(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd="/").stdout))
        ratio = float(np.median(cur)) / float(np.median(ref))
        out["ab"] = {"this_build_p50_us": cur, "reference_p50_us": ref, "ratio_median": ratio}
        print(f"  disabled tracker vs checks compiled out: {np.median(cur):.1f} vs {np.median(ref):.1f} us "
              f"(median of {args.ab_rounds} processes each) = {(ratio - 1) * 100:+.2f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
