"""Seeded structural mutation fuzzer for sdx's model loading, verification, optimization and execution.

Case N of seed S is a pure function of (S, N, the seed set): a seed model (fuzz/seed_models.py) with
one to three mutations from fuzz/mutate_graph.py and fuzz/mutate_tensor.py, or an external-data case
(fuzz/external_data.py), or byte-level damage to the serialized model. Each case runs in a child
process (fuzz/harness.py: timeout, 4 GiB address-space cap) that creates sdx.InferenceSession and, when
it loads, runs it three times on random inputs. Crash and hang repros go to --out.

    python3 fuzz/structural_fuzzer.py --seed 1 --budget-seconds 1800           # the 30-minute run
    python3 fuzz/structural_fuzzer.py --seed 1 --cases 300 --out /tmp/f         # a fixed number of cases
    python3 fuzz/structural_fuzzer.py --seed 1 --case 123 -v                    # replay one case
    python3 fuzz/structural_fuzzer.py --seed 1 --case 123 --save /tmp/case.onnx # write it (no run)

Exit status: 1 when a case crashed, hung or took longer than its limit (a FIFO or /dev/zero location
must fail within 1 s); 0 otherwise. Clean and unclean errors are counted, not failures (--strict makes
unclean errors fail too).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

import onnx
from google.protobuf.message import DecodeError, EncodeError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import external_data  # noqa: E402
import mutate_graph  # noqa: E402
import mutate_tensor  # noqa: E402
from harness import Case, Harness, write_model  # noqa: E402
from seed_models import ROOT, SYNTHETIC, seed_models  # noqa: E402

ALL_MUTATIONS = {**mutate_graph.MUTATIONS, **mutate_tensor.MUTATIONS}
EXTERNAL_SHARE, BYTES_SHARE, AS_BYTES_SHARE, SUBGRAPH_SHARE = 0.12, 0.05, 0.2, 0.15


def _pick_mutation(rng: random.Random, families: set | None) -> tuple:
    items = [(k, v) for k, v in sorted(ALL_MUTATIONS.items()) if not families or v[0] in families]
    return rng.choices(items, weights=[v[2] for _, v in items])[0]


def make_case(seed: int, n: int, seeds: dict, families: set | None = None, real: bool = False) -> Case:
    rng = random.Random(f"sdx-fuzz:{seed}:{n}")
    names = sorted(seeds)
    # Real models are larger and slower to load: the synthetic seeds get three times their share.
    name = rng.choices(names, weights=[3 if x in SYNTHETIC else 1 for x in names])[0]
    with_subgraphs = [x for x in names if len(mutate_graph.graphs(seeds[x])) > 1]
    focus_subgraphs = with_subgraphs and (not families or "subgraphs" in families) and rng.random() < SUBGRAPH_SHARE
    if focus_subgraphs:  # few seeds have subgraphs: give If / Loop / Scan bodies a share of their own
        name = rng.choice(with_subgraphs)
    model = onnx.ModelProto()
    model.CopyFrom(seeds[name])
    replay = f"python3 fuzz/structural_fuzzer.py --seed {seed} --case {n}" + (" --real" if real else "") + \
             (f" --families {','.join(sorted(families))}" if families else "")
    r = rng.random()
    want_external = not families or "external_data" in families
    want_bytes = not families or "bytes" in families
    if want_external and r < EXTERNAL_SHARE:
        made = external_data.external_case(model, rng)
        if made:
            desc, write, max_s, as_bytes = made
            return Case(f"seed {seed} case {n}", f"{name}: {desc}", write, as_bytes, max_s, "external_data", replay,
                        _sym_dim(seed, n))
    steps, family = [], None
    count = rng.choices([1, 2, 3], weights=[6, 3, 1])[0]
    for _ in range(count):
        for _attempt in range(10):
            only = families - {"external_data", "bytes"} if families else None
            key, (fam, fn, _w) = _pick_mutation(rng, {"subgraphs"} if focus_subgraphs and not steps else only)
            trial = onnx.ModelProto()
            trial.CopyFrom(model)
            try:
                desc = fn(trial, rng)
                if desc is not None:
                    trial.SerializeToString()
            except (ValueError, TypeError, OverflowError, AttributeError, IndexError, DecodeError, EncodeError):
                desc = None  # the protobuf API refused the value: try another mutation
            if desc is not None:
                model = trial
                steps.append(f"{key}: {desc}")
                family = family or fam
                break
    blob = model.SerializeToString()
    if want_bytes and EXTERNAL_SHARE <= r < EXTERNAL_SHARE + BYTES_SHARE:
        blob, how = mutate_graph.bytes_flip(blob, rng)
        steps.append(how)
        family = "bytes"
    as_bytes = rng.random() < AS_BYTES_SHARE
    return Case(f"seed {seed} case {n}", f"{name}: " + "; ".join(steps or ["(no mutation applied)"]),
                lambda folder: write_model(folder, blob), as_bytes, None, family or "none", replay, _sym_dim(seed, n))


def _sym_dim(seed: int, n: int) -> int:
    # Its own stream, so adding it did not change the mutations of earlier runs' case numbers.
    return random.Random(f"sdx-fuzz-dims:{seed}:{n}").choices([1, 0, 2, 7], weights=[6, 2, 1, 1])[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget-seconds", type=float, default=None, help="stop starting cases after this long")
    ap.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    ap.add_argument("--first-case", type=int, default=0)
    ap.add_argument("--case", type=int, default=None, help="run (or --save) this one case only")
    ap.add_argument("--save", default=None, help="with --case: write the case's model here instead of running it")
    ap.add_argument("--real", action="store_true", help="also mutate the public models found on this machine")
    ap.add_argument("--models", default=None, help="comma-separated seed model names")
    ap.add_argument("--families", default=None, help="comma-separated mutation families (default: all)")
    ap.add_argument("--out", default=None, help="repro folder (default build/fuzz-findings/structural-seed<S>)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--isolate", action="store_true", help="a fresh process per case (slower) instead of a pool")
    ap.add_argument("--no-gdb", action="store_true", help="do not add gdb backtraces to crash reports")
    ap.add_argument("--jit", action="store_true", help="leave the kernel JIT on in the children")
    ap.add_argument("--strict", action="store_true", help="unclean errors fail the run too")
    ap.add_argument("--json", default=None, help="write the summary here (default OUT/summary.json)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.budget_seconds is None and args.cases is None and args.case is None:
        args.budget_seconds = 60.0
    seeds = seed_models(real=args.real, names=args.models.split(",") if args.models else None)
    families = set(args.families.split(",")) if args.families else None
    if args.case is not None and args.save:
        case = make_case(args.seed, args.case, seeds, families, args.real)
        folder = os.path.dirname(os.path.abspath(args.save))
        path = case.write(folder)
        if os.path.abspath(path) != os.path.abspath(args.save):
            os.replace(path, args.save)
        print(f"{case.case_id}: {case.description}\nwrote {args.save} (as_bytes={case.as_bytes})")
        return 0
    out = args.out or os.path.join(ROOT, "build", "fuzz-findings", f"structural-seed{args.seed}")
    h = Harness(out, timeout_s=args.timeout, isolate=args.isolate, gdb=not args.no_gdb, jit=args.jit,
                verbose=args.verbose or args.case is not None)
    start = time.monotonic()
    first = args.case if args.case is not None else args.first_case
    n = first
    print(f"structural fuzzer: seed {args.seed}, {len(seeds)} seed models ({', '.join(sorted(seeds))}), "
          f"budget {args.budget_seconds} s, cases {args.cases}, repros -> {out}", flush=True)
    try:
        while True:
            if args.case is not None and n > args.case:
                break
            if args.cases is not None and n - first >= args.cases:
                break
            if args.budget_seconds is not None and time.monotonic() - start >= args.budget_seconds:
                break
            h.run(make_case(args.seed, n, seeds, families, args.real))
            n += 1
            if (n - first) % 200 == 0:
                print(f"[{time.monotonic() - start:7.0f} s] {h.summary_text().splitlines()[0]}", flush=True)
    finally:
        h.close()
    elapsed = time.monotonic() - start
    summary = h.summary()
    summary.update({"seed": args.seed, "first_case": first, "seconds": round(elapsed, 1), "models": sorted(seeds)})
    timed = [t["seconds"] for t in summary["timed_cases"]]
    with open(args.json or os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"\nstructural fuzzer: seed {args.seed}, cases {first}..{n - 1}, {elapsed:.0f} s\n{h.summary_text()}")
    if timed:
        print(f"special-file external-data cases (FIFO, /dev, /proc): {len(timed)}, slowest {max(timed):.3f} s")
    c = h.counts
    bad = c["crash"] + c["hang"] + c["slow_error"] + (c["unclean_error"] if args.strict else 0)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
