#!/usr/bin/env python3
"""Per-op dispatch overhead: sdx vs onnxruntime on a chain of cheap elementwise ops.

Builds the dispatch chain of bench/models.py (default 200 ops on float32[1, 16]), loads it in sdx and
onnxruntime in this one process with the same thread count, checks that both compute the same output,
warms both up, then times `sess.run(None, {"x": x})` with time.perf_counter_ns, interleaving the two
engines in blocks of calls (the order alternates every round) so that drift in machine state hits
both alike. Prints p50/p90 per engine and the acceptance check sdx p50 / onnxruntime p50 <= 0.10.

    python3 bench/bench_dispatch.py                      # 1 thread, 200 ops, 50 rounds x 100 calls
    python3 bench/bench_dispatch.py --threads 2 --json /tmp/dispatch.json

Run it from a folder other than the repository root so that `import sdx` picks the installed
package, not the source folder python/ (which lacks the native module); this script also removes the
repository paths from sys.path itself.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Never let the source folder shadow the installed sdx package.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]

import numpy as np  # noqa: E402

from timing import make_ort, platform_info, summarize, time_block, versions, write_json  # noqa: E402  (bench/timing.py; HERE is sys.path[0])

from models import dispatch_chain  # noqa: E402  (bench/models.py; HERE is sys.path[0])

ACCEPTANCE_RATIO = 0.10


def make_sdx(model_bytes: bytes, threads: int):
    import sdx

    opts = sdx.SessionOptions()
    if hasattr(opts, "intra_op_num_threads"):
        opts.intra_op_num_threads = threads
    return sdx.InferenceSession(model_bytes, opts)



def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1, help="intra-op threads for both engines (default 1)")
    p.add_argument("--ops", type=int, default=200, help="elementwise nodes in the chain (default 200)")
    p.add_argument("--warmup", type=int, default=50, help="untimed runs per engine first (default 50, at least 20)")
    p.add_argument("--rounds", type=int, default=50, help="rounds of interleaved blocks (default 50)")
    p.add_argument("--block", type=int, default=100, help="timed calls per engine per round (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed for the model constants and the input")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args()
    warmup = max(20, args.warmup)  # sdx warms up, freezes its memory and captures its plan in the first calls

    import onnxruntime as ort
    import sdx

    model = dispatch_chain(args.ops, seed=args.seed).SerializeToString()
    x = np.random.default_rng(args.seed).standard_normal((1, 16)).astype(np.float32)
    feeds = {"x": x}
    print(f"model: dispatch chain of {args.ops} elementwise ops on float32[1, 16]; threads {args.threads}")
    print(f"sdx {sdx.__version__} ({os.path.dirname(sdx.__file__)}), onnxruntime {ort.__version__}, "
          f"numpy {np.__version__}, python {platform.python_version()}, {os.cpu_count()} CPUs")
    engines = {"sdx": make_sdx(model, args.threads), "onnxruntime": make_ort(model, args.threads)}

    print(f"warmup: {warmup} runs per engine")
    outputs = {}
    for name, sess in engines.items():
        for _ in range(warmup):
            sess.run(None, feeds)
        outputs[name] = sess.run(None, feeds)[0]
    diff = float(np.max(np.abs(outputs["sdx"] - outputs["onnxruntime"])))
    same = bool(np.allclose(outputs["sdx"], outputs["onnxruntime"], rtol=1e-5, atol=1e-6))
    finite = bool(np.all(np.isfinite(outputs["onnxruntime"]))) and bool(np.any(outputs["onnxruntime"] != 0))
    print(f"outputs: allclose {'yes' if same else 'NO'}, max abs diff {diff:.3g}"
          f"{'' if finite else ' (WARNING: reference output not finite or all zero)'}")

    samples = {name: [] for name in engines}
    order = list(engines)
    print(f"timing: {args.rounds} rounds x {args.block} calls per engine, interleaved")
    t_start = time.perf_counter()
    for r in range(args.rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            time_block(engines[name], feeds, args.block, samples[name])
        if (r + 1) % max(1, args.rounds // 5) == 0 or r + 1 == args.rounds:
            live = {n: np.percentile(np.asarray(s) / 1e3, 50) for n, s in samples.items()}
            print(f"  round {r + 1:3d}/{args.rounds}: p50 so far " +
                  ", ".join(f"{n} {v:.1f} us" for n, v in live.items()) + f"  ({time.perf_counter() - t_start:.1f} s)")

    stats = {name: summarize(s) for name, s in samples.items()}
    ratio = stats["sdx"]["p50_us"] / stats["onnxruntime"]["p50_us"]
    passed = ratio <= ACCEPTANCE_RATIO
    print()
    print(f"{'engine':<12} {'p50 us':>10} {'p90 us':>10} {'mean us':>10} {'us/op p50':>10}")
    for name, s in stats.items():
        print(f"{name:<12} {s['p50_us']:10.1f} {s['p90_us']:10.1f} {s['mean_us']:10.1f} {s['p50_us'] / args.ops:10.3f}")
    print(f"ratio sdx/onnxruntime p50: {ratio:.3f}")
    print(f"acceptance: ratio <= {ACCEPTANCE_RATIO:.2f}: {'PASS' if passed else 'FAIL'}")
    if not same:
        print("outputs differ: the timing comparison is not meaningful")

    if args.json:
        report = {
            "benchmark": "dispatch_chain", "ops": args.ops, "input_shape": [1, 16], "threads": args.threads,
            "warmup": warmup, "rounds": args.rounds, "block": args.block,
            "engines": stats, "ratio_p50": ratio, "acceptance_ratio": ACCEPTANCE_RATIO, "pass": passed,
            "outputs_allclose": same, "max_abs_diff": diff,
            "versions": versions(),
            "machine": platform_info(),
        }
        write_json(args.json, report)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
