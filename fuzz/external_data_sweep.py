"""Systematic external-data sweep: one seed model's initializer moved to a file beside the model, then
every location form (FIFO, /dev/zero, /proc/self/mem, symlinks, "..", absolute, ...), every offset and
length form ("0x4", "-1", "4junk", huge, ...) and every key form (fuzz/external_data.py), one child
process case each. Special files must fail within 1 s (slow_error otherwise); no case may crash or hang;
a location outside the model folder or a number that is not plain decimal must be rejected
(accepted_invalid otherwise). Prints the counts and the slowest special-file case.

    python3 fuzz/external_data_sweep.py [--model small_cnn] [--out DIR] [-v]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from external_data import systematic_cases  # noqa: E402
from harness import Case, Harness  # noqa: E402
from seed_models import ROOT, seed_models  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="small_cnn")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz-findings", "external-data-sweep"))
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--no-gdb", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    model = seed_models(names=[args.model])[args.model]
    h = Harness(args.out, timeout_s=args.timeout, gdb=not args.no_gdb, verbose=args.verbose)
    start = time.monotonic()
    try:
        for name, must_fail, (desc, write, max_s, as_bytes) in systematic_cases(model):
            h.run(Case(f"external sweep: {name}", f"{args.model}: {desc}", write, as_bytes, max_s, "external_data",
                       f"python3 fuzz/external_data_sweep.py --model {args.model} -v", expect_error=must_fail))
    finally:
        h.close()
    summary = h.summary()
    summary["seconds"] = round(time.monotonic() - start, 1)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    timed = summary["timed_cases"]
    print(f"external-data sweep: {h.summary_text().splitlines()[0]}, {summary['seconds']} s")
    if timed:
        worst = max(timed, key=lambda t: t["seconds"])
        print(f"special-file cases: {len(timed)}, slowest {worst['seconds']:.3f} s ({worst['case']})")
    c = h.counts
    return 1 if c["crash"] + c["hang"] + c["slow_error"] + c["accepted_invalid"] else 0


if __name__ == "__main__":
    sys.exit(main())
