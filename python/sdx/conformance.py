"""`sdx conformance`: the ONNX backend node test suite, run case by case.

Cases run in worker processes, so a case that crashes or hangs is recorded as a
failure with its reason and the run goes on. Ends with the line
"N passed, M failed, K skipped".
"""
from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time


def _worker() -> None:
    from . import _sdx

    for line in sys.stdin:
        req = json.loads(line)
        outcome, reason, ms, replayed, note = _sdx.run_conformance_case(req["dir"], req.get("rtol", 1e-3),
                                                                        req.get("atol", 1e-7))
        sys.stdout.write(json.dumps({"outcome": outcome, "reason": reason, "ms": ms, "replayed": replayed,
                                     "replay_note": note}) + "\n")
        sys.stdout.flush()


class _Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "sdx.conformance", "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.case: str | None = None
        self.started = 0.0

    def send(self, case: str, case_dir: str, rtol: float, atol: float) -> None:
        self.case = case
        self.started = time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"dir": case_dir, "rtol": rtol, "atol": atol}) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            self.proc.kill()
        finally:
            self.proc.wait()


def _tolerances(case_dir: str) -> tuple[float, float]:
    try:
        with open(os.path.join(case_dir, "meta.json")) as f:
            meta = json.load(f)
        return float(meta.get("rtol", 1e-3)), float(meta.get("atol", 1e-7))
    except OSError:
        return 1e-3, 1e-7


def run_suite(data_dir: str, pattern: str | None = None, jobs: int = 2, timeout: float = 60.0,
              verbose: bool = False, out=sys.stdout) -> dict:
    names = sorted(d for d in os.listdir(data_dir) if os.path.isdir(os.path.join(data_dir, d)))
    if pattern:
        rx = re.compile(pattern)
        names = [n for n in names if rx.search(n)]
    pending = list(reversed(names))
    results: dict[str, dict] = {}
    workers = [_Worker() for _ in range(max(1, min(jobs, len(names) or 1)))]
    sel = selectors.DefaultSelector()
    t0 = time.monotonic()

    def feed(w: _Worker) -> None:
        if pending:
            case = pending.pop()
            rtol, atol = _tolerances(os.path.join(data_dir, case))
            w.send(case, os.path.join(data_dir, case), rtol, atol)
        else:
            w.case = None

    def record(case: str, outcome: str, reason: str, ms: float, replayed: bool = False, note: str = "") -> None:
        results[case] = {"name": case, "status": outcome, "reason": reason, "ms": round(ms, 3),
                         "replayed": replayed, "replay_note": note}
        if verbose:
            print(f"{outcome:8s} {case} {reason}", file=out, flush=True)
        done = len(results)
        if not verbose and done % 200 == 0:
            print(f"sdx conformance: {done}/{len(names)} cases ({time.monotonic() - t0:.0f}s)", file=sys.stderr, flush=True)

    def replace(i: int) -> None:
        sel.unregister(workers[i].proc.stdout)
        workers[i].kill()
        workers[i] = _Worker()
        sel.register(workers[i].proc.stdout, selectors.EVENT_READ, i)
        feed(workers[i])

    for i, w in enumerate(workers):
        sel.register(w.proc.stdout, selectors.EVENT_READ, i)
        feed(w)
    while any(w.case for w in workers):
        for key, _ in sel.select(timeout=1.0):
            i = key.data
            w = workers[i]
            line = w.proc.stdout.readline()
            if not w.case:
                continue
            if not line:  # the worker died: the case crashed the process
                code = w.proc.wait()
                record(w.case, "failed", f"crashed the process (exit code {code})", (time.monotonic() - w.started) * 1e3)
                replace(i)
                continue
            r = json.loads(line)
            record(w.case, r["outcome"], r["reason"], r["ms"], r.get("replayed", False), r.get("replay_note", ""))
            feed(w)
        now = time.monotonic()
        for i, w in enumerate(workers):
            if w.case and now - w.started > timeout:
                record(w.case, "failed", f"timed out after {timeout:.0f}s", (now - w.started) * 1e3)
                replace(i)
    for w in workers:
        if w.proc.stdin:
            w.proc.stdin.close()
        w.kill()
    counts = {k: sum(1 for r in results.values() if r["status"] == k) for k in ("passed", "failed", "skipped")}
    counts["replayed"] = sum(1 for r in results.values() if r["status"] == "passed" and r.get("replayed"))
    return {"data_dir": data_dir, "total": len(names), **counts,
            "seconds": round(time.monotonic() - t0, 1), "cases": [results[n] for n in names]}


def main(args) -> int:
    from .conformance_data import node_test_dir

    data_dir = args.data or node_test_dir()
    report = run_suite(data_dir, args.filter, args.jobs, args.timeout, args.verbose)
    try:
        import onnx

        report["onnx_version"] = onnx.__version__
    except ImportError:
        pass
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    total = report["total"] or 1
    print(f"pass rate {100.0 * report['passed'] / total:.1f}% of {report['total']} cases in {report['seconds']}s")
    reasons: dict[str, int] = {}
    for c in report["cases"]:
        if c["status"] == "passed" and not c.get("replayed"):
            reasons[c.get("replay_note") or "not replayed"] = reasons.get(c.get("replay_note") or "not replayed", 0) + 1
    print(f"{report['replayed']} passing cases replayed a captured plan bitwise identically to the slot-by-slot run"
          + (f"; {report['passed'] - report['replayed']} did not:" if reasons else ""))
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {n:5d}  {why}")
    print(f"{report['passed']} passed, {report['failed']} failed, {report['skipped']} skipped")
    return 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker()
