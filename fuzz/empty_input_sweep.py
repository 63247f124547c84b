"""Systematic sweep: every input of every node (subgraph nodes included) of every seed model, set to ""
(mode "empty") and to a name nothing defines (mode "dangling"), one child process case each.

A required input given as "" or a dangling name must be a clean error (or, for an optional input, the
model must load and run); never a crash or a hang. Prints per-model counts and the totals, saves crash
and hang repros under --out, and exits 1 on any crash, hang or slow error.

    python3 fuzz/empty_input_sweep.py                          # synthetic seeds, both modes
    python3 fuzz/empty_input_sweep.py --real --modes empty     # plus the public models found here
    python3 fuzz/empty_input_sweep.py --models if_model,loop_model -v
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, Harness, write_model  # noqa: E402
from mutate_graph import DANGLING, graphs  # noqa: E402
from seed_models import ROOT, seed_models  # noqa: E402


def sweep_cases(name: str, model: onnx.ModelProto, modes: list, as_bytes: bool = False):
    """Yields one Case per (mode, graph, node, input)."""
    for gi, (path, g) in enumerate(graphs(model)):
        for ni, node in enumerate(g.node):
            for ii, value in enumerate(node.input):
                for mode in modes:
                    if mode == "empty" and value == "":
                        continue  # already omitted: nothing to sweep
                    m = onnx.ModelProto()
                    m.CopyFrom(model)
                    target = graphs(m)[gi][1].node[ni]
                    target.input[ii] = "" if mode == "empty" else DANGLING
                    blob = m.SerializeToString()
                    where = f"{path}:{node.name or ni}({node.op_type}) input {ii} '{value}'"
                    yield Case(f"sweep {mode} {name} {where}", f"{name}: {where} -> {mode}",
                               lambda folder, b=blob: write_model(folder, b), as_bytes, None, mode,
                               f"python3 fuzz/empty_input_sweep.py --models {name} --modes {mode} -v")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="empty,dangling")
    ap.add_argument("--models", default=None, help="comma-separated seed model names (default: all)")
    ap.add_argument("--real", action="store_true", help="also the public models found on this machine")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz-findings", "empty-input-sweep"))
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--isolate", action="store_true", help="a fresh process per case instead of a pool")
    ap.add_argument("--no-gdb", action="store_true")
    ap.add_argument("--json", default=None, help="write the summary here (default OUT/summary.json)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    modes = args.modes.split(",")
    seeds = seed_models(real=args.real, names=args.models.split(",") if args.models else None)
    h = Harness(args.out, timeout_s=args.timeout, isolate=args.isolate, gdb=not args.no_gdb, verbose=args.verbose)
    start = time.monotonic()
    per_model = {}
    baseline = {}
    try:
        for name, model in seeds.items():
            base = h.run(Case(f"baseline {name}", f"{name}: unmutated", lambda f, m=model: write_model(f, m),
                              family="baseline"))
            baseline[name] = base.kind if base.kind != "clean_error" else f"clean_error ({base.detail[:120]})"
            before = collections.Counter(h.counts)
            for case in sweep_cases(name, model, modes):
                h.run(case)
            per_model[name] = {k: h.counts[k] - before[k] for k in h.counts}
            c = per_model[name]
            print(f"{name:28s} baseline {baseline[name]:10.10s}  cases {c.get('cases', 0):5d}  ran {c.get('ok', 0):4d}  "
                  f"not_run {c.get('not_run', 0):3d}  clean {c.get('clean_error', 0):4d}  "
                  f"unclean {c.get('unclean_error', 0):3d}  crash {c.get('crash', 0):3d}  hang {c.get('hang', 0):3d}",
                  flush=True)
    finally:
        h.close()
    elapsed = time.monotonic() - start
    # The baselines are not sweep cases: take them out of the totals.
    totals = collections.Counter(h.counts)
    totals.subtract(h.by_family["baseline"])
    totals["cases"] -= sum(h.by_family["baseline"].values())
    summary = h.summary()
    summary.update({"per_model": per_model, "baseline": baseline, "seconds": round(elapsed, 1), "modes": modes,
                    "totals": {k: v for k, v in totals.items() if v}})
    os.makedirs(args.out, exist_ok=True)
    with open(args.json or os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"\nempty-input sweep ({','.join(modes)}): {len(seeds)} models, {totals['cases']} cases, "
          f"{totals['ok']} loaded and ran, {totals['not_run']} loaded (not run), {totals['clean_error']} clean errors, "
          f"{totals['unclean_error']} unclean errors, {totals['crash']} crashes, {totals['hang']} hangs, {elapsed:.0f} s")
    return 1 if totals["crash"] + totals["hang"] + totals["slow_error"] else 0


if __name__ == "__main__":
    sys.exit(main())
