"""`sdx bench`: latency of a model under sdx, optionally against onnxruntime and low-precision weights.

The work is split so that each step can be reused (issue 6 adds baselines on top: `--save` writes the
result of `measure`, `--compare` tests its `samples_us` against a saved one):

* `make_engines(args, model)` -> {name: session}: "sdx" (fp32), "sdx-fp16" / "sdx-int8" / "sdx-int8d" (with --fp16 /
  --int8 / --int8-dynamic) and "onnxruntime" (with --compare-onnxruntime), all with the same thread count;
* `measure(args)` -> a result dict (JSON-ready): settings, inputs, per-engine latency summary and raw
  samples, ratios to onnxruntime, output accuracy;
* `print_report(result)` prints it; `cmd_bench(args)` is the CLI entry (exit status: 0 ok, 1 a --compare
  regression; usage errors raise BenchError, which `sdx` reports as one line with exit status 2).

Timing alternates between the engines in blocks of calls, the order rotating each round, in this one
process, so drift in machine state (frequency, cache, noisy neighbours) hits every engine alike.
"""
from __future__ import annotations

import json
import math
import os
import platform
import sys
import time

import numpy as np

from ._cli_support import Progress, UsageError, int_at_least

# Relative errors divide by max(|reference|, REL_FLOOR * max|reference|) so that reference values near zero
# (common after normalizations) do not turn a tiny absolute error into a huge relative one.
REL_FLOOR = 1e-3
# Pause before each block of calls: the previous engine's spinning worker threads (onnxruntime's pool
# spins by default) would otherwise take a core from the engine timed next (see bench/timing.py).
SETTLE_S = 0.1


class BenchError(UsageError):
    """A usage problem reported as one line and exit status 2 (e.g. onnxruntime missing)."""


# Off while the result goes to stdout as JSON (--json -): then stderr carries only errors.
_SHOW_PROGRESS = [True]


def _progress(msg: str) -> None:
    if _SHOW_PROGRESS[0]:
        print(msg, file=sys.stderr, flush=True)


def summarize(ns: list) -> dict:
    """calls, p50/p90/mean/min in microseconds of latencies given in ns (as bench/timing.py)."""
    us = np.asarray(ns, dtype=np.float64) / 1e3
    return {"calls": int(us.size), "p50_us": float(np.percentile(us, 50)), "p90_us": float(np.percentile(us, 90)),
            "mean_us": float(us.mean()), "min_us": float(us.min())}


def output_errors(outputs: list, reference: list) -> dict:
    """Max abs and max relative error of `outputs` against `reference` over every numeric tensor output.

    Relative error: |out - ref| / max(|ref|, REL_FLOOR * max|ref|), elementwise, then the max; rel_l2 is
    ||out - ref|| / ||ref|| over all outputs together. Non-float outputs count as exact or not."""
    max_abs = max_rel = 0.0
    diff_sq = ref_sq = 0.0
    mismatched = 0
    for out, ref in zip(outputs, reference):
        if not isinstance(out, np.ndarray) or not isinstance(ref, np.ndarray) or out.dtype.kind not in "fiub":
            continue
        if out.shape != ref.shape:
            mismatched += 1
            continue
        if out.size == 0:
            continue
        if out.dtype.kind != "f":
            mismatched += int(not np.array_equal(out, ref))
            continue
        o, r = out.astype(np.float64), ref.astype(np.float64)
        d = np.abs(o - r)
        scale = float(np.max(np.abs(r)))
        max_abs = max(max_abs, float(np.max(d)))
        denom = np.maximum(np.abs(r), REL_FLOOR * scale if scale > 0 else 1e-30)
        max_rel = max(max_rel, float(np.max(d / denom)))
        diff_sq += float(np.sum(d * d))
        ref_sq += float(np.sum(r * r))
    rel_l2 = (diff_sq ** 0.5) / (ref_sq ** 0.5) if ref_sq > 0 else (0.0 if diff_sq == 0 else float("inf"))
    out = {"max_abs": max_abs, "max_rel": max_rel, "rel_l2": rel_l2}
    if mismatched:
        out["mismatched_outputs"] = mismatched
    return out


def _sdx_session(model: str, threads: int, fp16: bool = False, int8: bool = False, int8_dynamic: bool = False):
    import sdx

    opts = sdx.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    if fp16:
        opts.optimizer_fp16 = True
    if int8:
        opts.optimizer_int8 = True
    if int8_dynamic:
        opts.optimizer_int8_dynamic = True
    return sdx.InferenceSession(model, opts)


def _ort_session(model: str, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads  # 0: onnxruntime's default (physical cores), as sdx's
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def check_requirements(args) -> None:
    """Raises BenchError for options this installation cannot honour, before any model is loaded."""
    if args.compare_onnxruntime:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            raise BenchError("--compare-onnxruntime needs the onnxruntime package, which is not installed "
                             "(pip install onnxruntime)") from None
    if args.int8:
        import sdx

        if not hasattr(sdx.SessionOptions(), "optimizer_int8"):
            raise BenchError("--int8: this sdx build has no int8 weight quantization (SessionOptions.optimizer_int8)")


def make_engines(args, model: str) -> tuple[dict, dict]:
    """The sessions to time ({name: session}) and their load times in ms. "sdx" is always fp32."""
    engines, load_ms = {}, {}

    def load(name, make):
        _progress(f"loading {name} ...")
        t0 = time.perf_counter()
        engines[name] = make()
        load_ms[name] = (time.perf_counter() - t0) * 1e3

    load("sdx", lambda: _sdx_session(model, args.threads))
    if args.fp16:
        load("sdx-fp16", lambda: _sdx_session(model, args.threads, fp16=True))
    if args.int8:
        load("sdx-int8", lambda: _sdx_session(model, args.threads, int8=True))
    if args.int8_dynamic:
        load("sdx-int8d", lambda: _sdx_session(model, args.threads, int8_dynamic=True))
    if args.compare_onnxruntime:
        try:
            load("onnxruntime", lambda: _ort_session(model, args.threads))
        except Exception as e:  # onnxruntime's own exception types; report them as one line
            raise BenchError(f"onnxruntime cannot load the model: {str(e).strip().splitlines()[-1]}") from None
    return engines, load_ms


def time_interleaved(engines: dict, feeds: dict, runs: int, block: int, progress: bool = False) -> dict:
    """{name: [ns, ...]}: `runs` timed calls per engine in blocks of `block`, the order rotating each round.
    `progress`: a progress bar on stderr (plain lines when it is not a terminal)."""
    with Progress("sdx bench: timing", runs, "runs per engine", enabled=progress) as bar:
        return _time_rounds(engines, feeds, runs, block, bar)


def _time_rounds(engines: dict, feeds: dict, runs: int, block: int, bar: Progress) -> dict:
    samples = {name: [] for name in engines}
    order = list(engines)
    rounds = max(1, -(-runs // block))
    clock = time.perf_counter_ns
    for r in range(rounds):
        shift = r % len(order)
        calls = min(block, runs - r * block)
        for name in order[shift:] + order[:shift]:
            # A pause first, so worker threads the previous engine left spinning go idle (bench/timing.py).
            # Only between engines: after a pause the next calls run cold (the first about 2x slower).
            if len(order) > 1:
                time.sleep(SETTLE_S)
            run, out = engines[name].run, samples[name]
            for _ in range(calls):
                t0 = clock()
                run(None, feeds)
                out.append(clock() - t0)
        bar.update(min(runs, (r + 1) * block))
    return samples


def measure(args) -> dict:
    """Loads the engines, makes the inputs, checks accuracy, times, and returns the result dict."""
    from . import __version__
    from .feeds import make_feeds

    check_requirements(args)
    engines, load_ms = make_engines(args, args.model)
    feeds = make_feeds(engines["sdx"], args.shape, args.seed, args.dim)

    _progress(f"warming up ({args.warmup} runs per engine) ...")
    outputs = {}
    for name, sess in engines.items():
        for _ in range(args.warmup):
            sess.run(None, feeds)
        outputs[name] = sess.run(None, feeds)

    accuracy = {}
    for name in engines:
        if name.startswith("sdx-"):  # low-precision weights against fp32 sdx
            accuracy[f"{name} vs sdx"] = output_errors(outputs[name], outputs["sdx"])
    if "onnxruntime" in engines:
        for name in engines:
            if name != "onnxruntime":
                accuracy[f"{name} vs onnxruntime"] = output_errors(outputs[name], outputs["onnxruntime"])

    block = args.block or max(1, min(10, args.runs // 10))
    _progress(f"timing {args.runs} runs per engine, alternating in blocks of {block} ...")
    samples = time_interleaved(engines, feeds, args.runs, block, progress=_SHOW_PROGRESS[0])
    stats = {name: summarize(s) for name, s in samples.items()}
    ratios = {}
    if "onnxruntime" in stats:
        for name in stats:
            if name != "onnxruntime":
                ratios[f"{name}/onnxruntime"] = stats[name]["p50_us"] / stats["onnxruntime"]["p50_us"]
    for name in stats:
        if name.startswith("sdx-"):
            ratios[f"{name}/sdx"] = stats[name]["p50_us"] / stats["sdx"]["p50_us"]

    _, rep = engines["sdx"].run_with_report(None, feeds)
    versions = {"sdx": __version__, "numpy": np.__version__, "python": platform.python_version()}
    if "onnxruntime" in engines:
        import onnxruntime

        versions["onnxruntime"] = onnxruntime.__version__
    return {
        "benchmark": "sdx bench",
        "model": os.path.abspath(args.model),
        "threads": args.threads,
        "warmup": args.warmup,
        "runs": args.runs,
        "block": block,
        "seed": args.seed,
        "inputs": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in feeds.items()
                   if isinstance(v, np.ndarray)},
        "load_ms": load_ms,
        "engines": stats,
        "ratios_p50": ratios,
        "accuracy": accuracy,
        "execution_mode": rep.get("execution_mode"),
        "samples_us": {name: [ns / 1e3 for ns in s] for name, s in samples.items()},
        "versions": versions,
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count()},
    }


def print_report(result: dict) -> None:
    threads = result["threads"] or "default"
    print(f"model: {result['model']}")
    print("inputs: " + ", ".join(f"{k} {v['dtype']}{v['shape']}" for k, v in result["inputs"].items()))
    print(f"threads {threads}, {result['warmup']} warmup + {result['runs']} timed runs per engine "
          f"(alternating, blocks of {result['block']}); sdx execution: {result['execution_mode']}")
    # One unit for the table: microseconds when the fastest engine is under a millisecond.
    fastest = min(s["p50_us"] for s in result["engines"].values())
    unit, div, prec = ("us", 1.0, 1) if fastest < 1e3 else ("ms", 1e3, 3)
    print(f"{'engine':<12} {'p50 ' + unit:>10} {'p90 ' + unit:>10} {'mean ' + unit:>10} {'min ' + unit:>10} "
          f"{'load ms':>9}")
    for name, s in result["engines"].items():
        print(f"{name:<12} " + " ".join(f"{s[k] / div:10.{prec}f}" for k in ("p50_us", "p90_us", "mean_us", "min_us")) +
              f" {result['load_ms'][name]:9.1f}")
    for what, ratio in result["ratios_p50"].items():
        print(f"ratio p50 {what}: {ratio:.3f}")
    for what, err in result["accuracy"].items():
        line = (f"accuracy {what}: max abs {err['max_abs']:.3g}, max rel {err['max_rel']:.3g}, "
                f"rel l2 {err['rel_l2']:.3g}")
        if err.get("mismatched_outputs"):
            line += f", {err['mismatched_outputs']} non-float output(s) differ"
        print(line)


def write_json(result: dict, path: str) -> None:
    """To `path`, or to stdout when `path` is '-'."""
    if path == "-":
        json.dump(result, sys.stdout, indent=2)
        print()
        return
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {path}")


def cmd_bench(args) -> int:
    """0 ok, 1 when --compare found a regression; usage errors raise BenchError (exit status 2)."""
    from . import regression

    show = args.json != "-"  # --json -: the JSON alone on stdout, no report or progress
    _SHOW_PROGRESS[0] = show
    baseline = None
    if args.compare:
        try:
            baseline = regression.load_baseline(args.compare)
        except ValueError as e:
            raise BenchError(str(e)) from None
    result = measure(args)
    if show:
        print_report(result)
    status = 0
    if args.save or baseline:
        status = _baseline_work(args, result, baseline, show)
    if args.json:
        write_json(result, args.json)
    return status


def _baseline_work(args, result: dict, baseline: dict | None, show: bool = True) -> int:
    """--save / --compare: per-op samples from the op timing tracker, then the baseline written or the
    comparison printed (when `show`); the comparison rows (end-to-end and per op type) also go into `result`
    for --json. 1 when something regressed."""
    from . import regression
    from .feeds import make_feeds

    _progress(f"per-op timing ({args.runs} runs, op timing tracker) ...")
    sess = make_engines(argparse_namespace(args, compare_onnxruntime=False, fp16=False, int8=False,
                                            int8_dynamic=False), args.model)[0]["sdx"]
    feeds = make_feeds(sess, args.shape, args.seed, args.dim)
    for _ in range(max(args.warmup, 3)):
        sess.run(None, feeds)
    with Progress("sdx bench: per-op timing", args.runs, "runs", enabled=show) as bar:
        ops = regression.op_samples(sess, feeds, args.runs, bar.update)
    result["ops_median_us"] = {op: float(np.median(v)) for op, v in ops.items()}
    if args.save:
        with open(args.save, "w") as f:
            json.dump(regression.make_baseline(result, ops), f)
        if show:
            print(f"saved baseline {args.save} ({len(result['samples_us']['sdx'])} end-to-end samples, "
                  f"{len(ops)} op types)")
    if not baseline:
        return 0
    note = regression.same_model_note(baseline, args.model)
    if note and show:
        print(note)
    rows = regression.compare(baseline, result["samples_us"]["sdx"], ops, args.threshold, args.alpha,
                              min_share=args.min_share)
    if show:
        regression.print_comparison(rows, args.compare, args.threshold, args.alpha)
    # JSON has no infinity: an op type the baseline lacks has change null
    json_rows = [{k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in r.items()} for r in rows]
    result["comparison"] = {"baseline": args.compare, "threshold": args.threshold, "alpha": args.alpha,
                            "min_share": args.min_share, "rows": json_rows,
                            "regressions": [r["metric"] for r in rows if r["regression"]]}
    return 1 if result["comparison"]["regressions"] else 0


def argparse_namespace(args, **overrides):
    """A copy of args with some fields replaced."""
    import argparse

    d = dict(vars(args))
    d.update(overrides)
    return argparse.Namespace(**d)


def add_parser(sub) -> None:
    """Registers `sdx bench` on the CLI's subparsers."""
    b = sub.add_parser("bench", help="latency p50/p90/mean of a model, optionally against onnxruntime",
                       description="Time a model under sdx (and onnxruntime, fp16/int8 weights) in one process, "
                                   "alternating between engines; report latency, ratios and output accuracy.")
    b.add_argument("model")
    b.add_argument("--threads", type=int_at_least(0), default=0,
                   help="intra-op threads for every engine (default 0: each engine's default, physical cores)")
    b.add_argument("--compare-onnxruntime", action="store_true",
                   help="also time onnxruntime (CPU provider, sequential, same threads) and compare outputs")
    b.add_argument("--warmup", type=int_at_least(0), default=10, help="untimed runs per engine first (default 10)")
    b.add_argument("--runs", type=int_at_least(1), default=100, help="timed runs per engine, at least 1 (default 100)")
    b.add_argument("--block", type=int_at_least(0), default=0,
                   help="calls per engine before switching engines (default: runs/10, between 1 and 10)")
    b.add_argument("--json", metavar="FILE",
                   help="write the figures (and raw samples) as JSON ('-': to stdout, instead of the report)")
    b.add_argument("--fp16", action="store_true",
                   help="also run with fp16 weights (optimizer_fp16) and report its accuracy against fp32 sdx")
    b.add_argument("--int8", action="store_true",
                   help="also run with int8 weights (optimizer_int8) and report its accuracy against fp32 sdx")
    b.add_argument("--int8-dynamic", action="store_true",
                   help="also run with int8 weights and X quantized per row on every call (optimizer_int8_dynamic, "
                        "engine sdx-int8d) and report its accuracy against fp32 sdx")
    b.add_argument("--shape", action="append", metavar="NAME=DIMS|NAME=FILE.npy",
                   help="input dims for random values (e.g. x=1x3x224x224) or a .npy value; repeatable")
    b.add_argument("--dim", type=int_at_least(0), default=1, help="value for symbolic dims of random inputs (default 1)")
    b.add_argument("--seed", type=int_at_least(0), default=0, help="seed for random inputs")
    b.add_argument("--save", metavar="FILE",
                   help="save a baseline (end-to-end and per-op samples) for a later --compare")
    b.add_argument("--compare", metavar="FILE",
                   help="compare with a saved baseline; exit 1 when the end-to-end time or an op type regressed")
    b.add_argument("--threshold", type=float, default=0.05,
                   help="relative median increase that counts as a regression with --compare (default 0.05)")
    b.add_argument("--min-share", type=float, default=0.01,
                   help="an op type's increase must also be at least this fraction of the end-to-end median "
                        "to count (default 0.01)")
    b.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the one-sided Mann-Whitney U test (default 0.05)")
    b.set_defaults(fn=cmd_bench)
