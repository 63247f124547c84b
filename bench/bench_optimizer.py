#!/usr/bin/env python3
"""Graph optimizer benchmark: p50 latency of sdx with the optimizer on vs off, and of onnxruntime.

For each model (the exporter-shaped models of tests/python/models.py: transformer_encoder, bert_encoder,
gpt_decoder_step, cnn_bn) builds the model, loads it three times in this one process with the same
thread count: sdx with SessionOptions.optimizer_enabled = True ("sdx-opt"), sdx with it False
("sdx-noopt") and onnxruntime (its default graph optimizations, CPU provider, sequential). Checks that
the three compute the same outputs, warms each up, then times `sess.run(None, feeds)` with
time.perf_counter_ns, interleaving the engines in blocks of calls (the order rotates every round) so that
drift in machine state hits all alike. Prints a table (p50/p90 per engine, the optimizer's speedup
sdx-noopt p50 / sdx-opt p50 and the ratio sdx-opt / onnxruntime) and optionally writes JSON.

    python3 bench/bench_optimizer.py                          # 2 threads, every model
    python3 bench/bench_optimizer.py --models bert_encoder,cnn_bn --threads 1 --json /tmp/optimizer.json

Run it from a folder other than the repository root so that `import sdx` picks the installed package,
not the source folder python/ (which lacks the native module); this script also removes the repository
paths from sys.path itself.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Never let the source folder shadow the installed sdx package.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]

import numpy as np  # noqa: E402

from timing import make_feeds, make_ort, platform_info, summarize, time_block, versions, write_json  # noqa: E402  (bench/timing.py; HERE is sys.path[0])


def _load_test_models():
    # tests/python/models.py under a private name (bench/models.py is also called `models`).
    spec = importlib.util.spec_from_file_location("sdx_test_models", os.path.join(ROOT, "tests", "python", "models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_MODELS = _load_test_models()
BUILDERS = {
    "transformer_encoder": lambda: _MODELS.transformer_encoder(),
    "bert_encoder": lambda: _MODELS.bert_encoder(),
    "gpt_decoder_step": lambda: _MODELS.gpt_decoder_step(),
    "cnn_bn": lambda: _MODELS.cnn_bn(),
}
ENGINES = ("sdx-opt", "sdx-noopt", "onnxruntime")


def make_sdx(model_bytes: bytes, threads: int, optimizer: bool):
    import sdx

    opts = sdx.SessionOptions()
    if hasattr(opts, "intra_op_num_threads"):
        opts.intra_op_num_threads = threads
    opts.optimizer_enabled = optimizer
    return sdx.InferenceSession(model_bytes, opts)




def max_diff(a: list, b: list) -> float:
    return max((float(np.max(np.abs(x - y))) if x.size else 0.0) for x, y in zip(a, b))


def bench_model(name: str, args) -> dict:
    model = BUILDERS[name]()
    data = model.SerializeToString()
    engines = {"sdx-opt": make_sdx(data, args.threads, True), "sdx-noopt": make_sdx(data, args.threads, False),
               "onnxruntime": make_ort(data, args.threads)}
    feeds = make_feeds(engines["onnxruntime"], args.seed)
    report = engines["sdx-opt"].optimization_report() if hasattr(engines["sdx-opt"], "optimization_report") else None
    nodes = f"{len(model.graph.node)} nodes"
    if report:
        nodes += f", optimized to {sum(report['ops_after'].values())}"
    print(f"\n== {name}: {nodes}; inputs " +
          ", ".join(f"{k}{list(v.shape)}" for k, v in feeds.items() if not k.startswith("past_value")))

    outputs = {}
    for engine, sess in engines.items():
        for _ in range(args.warmup):
            sess.run(None, feeds)
        outputs[engine] = sess.run(None, feeds)
    checks = {
        "opt_vs_noopt": (max_diff(outputs["sdx-opt"], outputs["sdx-noopt"]),
                         all(np.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(outputs["sdx-opt"], outputs["sdx-noopt"]))),
        "opt_vs_onnxruntime": (max_diff(outputs["sdx-opt"], outputs["onnxruntime"]),
                               all(np.allclose(a, b, rtol=1e-4, atol=1e-4)
                                   for a, b in zip(outputs["sdx-opt"], outputs["onnxruntime"]))),
    }
    for what, (diff, ok) in checks.items():
        print(f"  {what}: max abs diff {diff:.3g} ({'allclose' if ok else 'DIFFERENT'})")

    samples = {engine: [] for engine in engines}
    order = list(engines)
    t_start = time.perf_counter()
    for r in range(args.rounds):
        shift = r % len(order)
        for engine in order[shift:] + order[:shift]:
            time_block(engines[engine], feeds, args.block, samples[engine])
    stats = {engine: summarize(s) for engine, s in samples.items()}
    print(f"  timed {args.rounds} rounds x {args.block} calls per engine in {time.perf_counter() - t_start:.1f} s")
    result = {
        "model": name, "nodes": len(model.graph.node), "engines": stats,
        "speedup_optimizer_p50": stats["sdx-noopt"]["p50_us"] / stats["sdx-opt"]["p50_us"],
        "ratio_sdx_opt_to_onnxruntime_p50": stats["sdx-opt"]["p50_us"] / stats["onnxruntime"]["p50_us"],
        "max_abs_diff": {k: v[0] for k, v in checks.items()}, "allclose": {k: v[1] for k, v in checks.items()},
    }
    if report:
        result["optimizer"] = {"rewrites_per_pass": {p: n for p, n in report["rewrites_per_pass"].items() if n},
                               "ops_after": report["ops_after"]}
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(BUILDERS), help=f"comma-separated subset of {', '.join(BUILDERS)}")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads for every engine (default 2)")
    p.add_argument("--warmup", type=int, default=20, help="untimed runs per engine first (default 20, at least 5)")
    p.add_argument("--rounds", type=int, default=10, help="rounds of interleaved blocks (default 10)")
    p.add_argument("--block", type=int, default=5, help="timed calls per engine per round (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed for the inputs")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args()
    args.warmup = max(5, args.warmup)  # sdx warms up, freezes its memory and captures its plan in the first calls
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in BUILDERS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(BUILDERS)}")

    import onnxruntime as ort
    import sdx

    print(f"sdx {sdx.__version__} ({os.path.dirname(sdx.__file__)}), onnxruntime {ort.__version__}, "
          f"numpy {np.__version__}, python {platform.python_version()}, {os.cpu_count()} CPUs; threads {args.threads}")
    results = [bench_model(name, args) for name in names]

    print()
    print(f"{'model':<20} {'sdx-opt p50 ms':>15} {'sdx-noopt p50 ms':>17} {'onnxruntime p50 ms':>19} "
          f"{'opt speedup':>12} {'opt/ort':>8}")
    for r in results:
        e = r["engines"]
        print(f"{r['model']:<20} {e['sdx-opt']['p50_us'] / 1e3:15.3f} {e['sdx-noopt']['p50_us'] / 1e3:17.3f} "
              f"{e['onnxruntime']['p50_us'] / 1e3:19.3f} {r['speedup_optimizer_p50']:11.2f}x "
              f"{r['ratio_sdx_opt_to_onnxruntime_p50']:8.2f}")
    all_close = all(r["allclose"]["opt_vs_noopt"] for r in results)
    if not all_close:
        print("optimized and unoptimized sdx outputs differ for some model: see above")

    if args.json:
        report = {
            "benchmark": "optimizer", "threads": args.threads, "warmup": args.warmup, "rounds": args.rounds,
            "block": args.block, "models": results,
            "versions": versions(),
            "machine": platform_info(),
        }
        write_json(args.json, report)
    return 0 if all_close else 1


if __name__ == "__main__":
    sys.exit(main())
