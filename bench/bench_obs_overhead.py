"""Overhead of the op timing tracker (issue 6) on a suite model (default the BERT encoder): p50 latency with
the tracker disabled, simple, detailed and trace, in one process, alternating blocks; and, with --reference
DIR, the disabled tracker against a build whose hot-path observer checks are compiled out.

    cd /tmp && PYTHONPATH=/path/to/build/dev/python python3 /path/to/repo/bench/bench_obs_overhead.py
    ... --reference /path/to/reference/build/dev/python     # A/B: the cost of the disabled checks
    ... --model chain --threads 1 --reference ...           # 200 ops of ~10 ns: the most sensitive case

A reference build: a copy of the tree with `obs::observers()` in src/obs/observers.h returning a
constexpr 0 (every `if (obs::observers())` then folds away). The A/B runs --ab-rounds pairs of processes
back to back (the order alternating), each timing --rounds x --block calls; a pair's ratio compares two
processes that ran seconds apart, so the VM's slow and fast states (bench/README.md) mostly cancel, and
the median over pairs of the p50 ratio and of the p10 ratio is reported (a cost per op shifts the whole
distribution, the low percentiles included; interference mostly stretches the upper part).
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


def _session(threads: int, model: str = "bert"):
    sys.path.insert(0, HERE)
    import models  # noqa: E402

    import sdx

    o = sdx.SessionOptions()
    o.intra_op_num_threads = threads
    sess = sdx.InferenceSession(models.SUITE_MODELS[model]().SerializeToString(), o)
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

    sess, feeds = _session(args.threads, args.model)
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


def disabled_percentiles(args) -> list:
    """[p50, p10] in us of the disabled tracker, one process."""
    sess, feeds = _session(args.threads, args.model)
    t = []
    for _ in range(args.rounds * args.block):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        t.append(time.perf_counter_ns() - t0)
    return [float(np.percentile(t, 50)) / 1e3, float(np.percentile(t, 10)) / 1e3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default="bert", help="a suite model (bench/models.py SUITE_MODELS; default bert)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--block", type=int, default=20, help="calls per mode per round")
    ap.add_argument("--reference", metavar="PYTHONPATH", help="python dir of a build without observer checks")
    ap.add_argument("--ab-rounds", type=int, default=6, help="process pairs for the A/B")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(disabled_percentiles(args)))
        return
    out = {"threads": args.threads, "model": f"{args.model} (suite)", "modes": modes(args)}
    m = out["modes"]
    print(f"{args.model} (suite), {args.threads} threads, {args.rounds} rounds x {args.block} calls per mode, "
          "alternating")
    for mode in MODES:
        print(f"  {mode:<9} p50 {m['p50_us'][mode]:9.1f} us   overhead vs disabled {m['overhead_vs_disabled'][mode] * 100:+6.2f}%")
    if args.reference:
        cur_env = dict(os.environ)
        ref_env = dict(os.environ, PYTHONPATH=args.reference)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--threads", str(args.threads),
               "--model", args.model, "--rounds", str(args.rounds), "--block", str(args.block)]
        cur, ref = [], []
        for i in range(args.ab_rounds):
            for env, dst in ((cur_env, cur), (ref_env, ref)) if i % 2 == 0 else ((ref_env, ref), (cur_env, cur)):
                dst.append(json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                                                     cwd="/").stdout))
        p50_ratios = [c[0] / r[0] for c, r in zip(cur, ref)]
        p10_ratios = [c[1] / r[1] for c, r in zip(cur, ref)]
        out["ab"] = {"this_build_p50_p10_us": cur, "reference_p50_p10_us": ref, "pair_p50_ratios": p50_ratios,
                     "pair_p10_ratios": p10_ratios, "ratio_p50_median": float(np.median(p50_ratios)),
                     "ratio_p10_median": float(np.median(p10_ratios))}
        ab = out["ab"]
        print(f"  disabled tracker vs checks compiled out, {args.ab_rounds} process pairs: p50 "
              f"{np.median([c[0] for c in cur]):.2f} vs {np.median([r[0] for r in ref]):.2f} us; median pair "
              f"ratio p50 {(ab['ratio_p50_median'] - 1) * 100:+.2f}% "
              f"(pairs {(min(p50_ratios) - 1) * 100:+.1f}% .. {(max(p50_ratios) - 1) * 100:+.1f}%), "
              f"p10 {(ab['ratio_p10_median'] - 1) * 100:+.2f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
