"""`sdx conformance`: the ONNX backend node test suite, run case by case.

Cases run in worker processes, so a case that crashes or hangs is recorded as a
failure with its reason and the run goes on. Ends with the line
"N passed, M failed, K skipped". Exit status: 0 when no case failed, 1 when any did
(0 with --allow-failures), 2 for a usage error (no data folder, a bad --filter).
"""
from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time


def _worker(via: str) -> None:
    """Runs the cases it is sent: through the native runner, or (`via` "python") sdx.InferenceSession with
    onnx's own readers (conformance_python.py)."""
    from . import _sdx
    from .conformance_python import run_case

    run = run_case if via == "python" else _sdx.run_conformance_case
    # Imported: cases may come. The runner sends none before this line, so a fresh worker's imports (seconds
    # on a loaded machine) never count against a case's timeout, and each case gets exactly one line back.
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    for line in sys.stdin:
        req = json.loads(line)
        outcome, reason, ms, replayed, note = run(req["dir"], req.get("rtol", 1e-3), req.get("atol", 1e-7))
        sys.stdout.write(json.dumps({"outcome": outcome, "reason": reason, "ms": ms, "replayed": replayed,
                                     "replay_note": note}) + "\n")
        sys.stdout.flush()


# How long a worker may take to import sdx and say it is ready.
_WORKER_START_S = 120.0


class _Worker:
    def __init__(self, via: str = "native") -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "sdx.conformance", "--worker", via], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.case: str | None = None
        self.ready = False  # it said so: it takes cases from now on
        self.spawned = time.monotonic()
        self.started = 0.0  # when its case was sent

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


def case_names(data_dir: str, pattern: str | None = None) -> list[str]:
    """The case folders of `data_dir` whose names match `pattern`, sorted; UsageError when there are none."""
    from ._cli_support import UsageError

    if not os.path.isdir(data_dir):
        raise UsageError(f"no node test data folder '{data_dir}'")
    names = sorted(d for d in os.listdir(data_dir) if os.path.isdir(os.path.join(data_dir, d)))
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise UsageError(f"--filter '{pattern}' is not a regular expression: {e}") from None
        names = [n for n in names if rx.search(n)]
        if not names:
            raise UsageError(f"no case in '{data_dir}' matches --filter '{pattern}'")
    if not names:
        raise UsageError(f"no test cases (folders) in '{data_dir}'")
    return names


def run_suite(data_dir: str, pattern: str | None = None, jobs: int = 2, timeout: float = 60.0,
              verbose: bool = False, out=sys.stdout, progress: bool = True, via: str = "native") -> dict:
    """Runs the cases and returns the report. `progress`: a progress bar on stderr (plain lines when it is
    not a terminal); never with `verbose`, which prints every case to `out`. `via`: "native" (the C++
    runner) or "python" (sdx.InferenceSession with onnx's readers)."""
    from ._cli_support import Progress

    names = case_names(data_dir, pattern)
    bar = Progress("sdx conformance", len(names), "cases", enabled=progress and not verbose)
    try:
        return _run_cases(data_dir, names, jobs, timeout, verbose, out, bar, via)
    finally:
        bar.close()


def _run_cases(data_dir: str, names: list, jobs: int, timeout: float, verbose: bool, out, bar,
               via: str = "native") -> dict:
    pending = list(reversed(names))
    results: dict[str, dict] = {}
    workers = [_Worker(via) for _ in range(max(1, min(jobs, len(names) or 1)))]
    sel = selectors.DefaultSelector()
    t0 = time.monotonic()
    failed = [0]

    def feed(w: _Worker) -> None:
        if not w.ready:
            return  # fed when it says it is ready
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
        failed[0] += outcome == "failed"
        bar.update(len(results), f"{failed[0]} failed" if failed[0] else "")

    def replace(i: int) -> None:
        sel.unregister(workers[i].proc.stdout)
        workers[i].kill()
        workers[i] = _Worker(via)
        sel.register(workers[i].proc.stdout, selectors.EVENT_READ, i)
        feed(workers[i])

    for i, w in enumerate(workers):
        sel.register(w.proc.stdout, selectors.EVENT_READ, i)
        feed(w)
    while any(w.case or (not w.ready and pending) for w in workers):
        for key, _ in sel.select(timeout=1.0):
            i = key.data
            w = workers[i]
            line = w.proc.stdout.readline()
            if not w.ready:
                if not line:
                    raise RuntimeError(f"sdx conformance: a worker process exited before it was ready "
                                       f"(exit code {w.proc.wait()}): python -m sdx.conformance --worker {via}")
                w.ready = bool(json.loads(line).get("ready"))
                feed(w)
                continue
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
            elif not w.ready and now - w.spawned > _WORKER_START_S:
                raise RuntimeError(f"sdx conformance: a worker process was not ready within {_WORKER_START_S:.0f}s")
    for w in workers:
        if w.proc.stdin:
            w.proc.stdin.close()
        w.kill()
    counts = {k: sum(1 for r in results.values() if r["status"] == k) for k in ("passed", "failed", "skipped")}
    counts["replayed"] = sum(1 for r in results.values() if r["status"] == "passed" and r.get("replayed"))
    return {"data_dir": data_dir, "total": len(names), **counts,
            "seconds": round(time.monotonic() - t0, 1), "cases": [results[n] for n in names]}


def print_summary(report: dict, show_failures: int = 20) -> None:
    total = report["total"] or 1
    print(f"pass rate {100.0 * report['passed'] / total:.1f}% of {report['total']} cases in {report['seconds']}s")
    reasons: dict[str, int] = {}
    for c in report["cases"]:
        if c["status"] == "passed" and not c.get("replayed"):
            why = c.get("replay_note") or "not replayed"
            reasons[why] = reasons.get(why, 0) + 1
    print(f"{report['replayed']} passing cases replayed a captured plan bitwise identically to the slot-by-slot run"
          + (f"; {report['passed'] - report['replayed']} did not:" if reasons else ""))
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {n:5d}  {why}")
    failed = [c for c in report["cases"] if c["status"] == "failed"]
    if failed:
        print(f"failed cases ({len(failed)}):")
        for c in failed[:show_failures]:
            reason = " ".join(c["reason"].split())
            print(f"  {c['name']}: {reason[:160]}{' ...' if len(reason) > 160 else ''}")
        if len(failed) > show_failures:
            print(f"  ... and {len(failed) - show_failures} more (--json FILE lists every case)")
    print(f"{report['passed']} passed, {report['failed']} failed, {report['skipped']} skipped")


def _data_dir(args) -> str:
    from ._cli_support import UsageError

    if args.data:
        return args.data
    try:
        from .conformance_data import node_test_dir

        return node_test_dir()
    except ImportError:
        raise UsageError("the onnx package is not installed: install it or pass --data DIR") from None


def main(args) -> int:
    """`sdx conformance`: 0 when no case failed (or --allow-failures), 1 when any did."""
    to_stdout = args.json == "-"
    report = run_suite(_data_dir(args), args.filter, args.jobs, args.timeout, args.verbose and not to_stdout,
                       progress=not to_stdout, via=getattr(args, "via", "native"))
    report["via"] = getattr(args, "via", "native")
    try:
        import onnx

        report["onnx_version"] = onnx.__version__
    except ImportError:
        pass
    report["allow_failures"] = bool(args.allow_failures)
    if to_stdout:
        print(json.dumps(report, indent=1))
    else:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        print_summary(report)
    return 1 if report["failed"] and not args.allow_failures else 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker(sys.argv[sys.argv.index("--worker") + 1] if len(sys.argv) > sys.argv.index("--worker") + 1 else "native")
