#!/usr/bin/env python3
"""Run onnxruntime's own Python API test file against onnxruntime or against sdx.

    python3 tools/ort_api_tests/run.py --engine onnxruntime|sdx
        [--test-file PATH]   default ~/.cache/sdx/ort_api/onnxruntime_test_python.py
        [--json OUT]         write every outcome as JSON
        [-k PATTERN]         only tests whose name matches (unittest -k rules; repeatable)

The test file (onnxruntime/test/python/onnxruntime_test_python.py) is not in this
repository; README.md here says how to fetch it. Its models are rebuilt by make_testdata.py
into a temporary work folder, which becomes the working directory (the tests read and write
./testdata/ and files in the current directory).

--engine sdx loads sdx under the names the test file imports:
    onnxruntime                                           -> sdx
    onnxruntime.capi, onnxruntime.capi._pybind_state,
    onnxruntime.capi.onnxruntime_pybind11_state,
    onnxruntime.capi.onnxruntime_inference_collection     -> sdx.capi
sdx.capi names itself under the three submodule names as attributes, so that
`from onnxruntime.capi import _pybind_state` resolves.

Tests run in a child process; a test that kills it (a crash) or runs past --timeout is
recorded as an ERROR and the run goes on in a fresh child with the next test.
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_TEST_FILE = os.path.expanduser("~/.cache/sdx/ort_api/onnxruntime_test_python.py")
CAPI_ALIASES = ("onnxruntime.capi", "onnxruntime.capi._pybind_state", "onnxruntime.capi.onnxruntime_pybind11_state",
                "onnxruntime.capi.onnxruntime_inference_collection")


# --- test discovery, filtering, skips ------------------------------------------------------

def list_tests(test_file: str) -> list[str]:
    """Class.method ids in the order unittest's loader runs them (classes in file order, methods sorted)."""
    tree = ast.parse(open(test_file, encoding="utf-8").read())
    ids = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = sorted(n.name for n in node.body
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
            ids += [f"{node.name}.{n}" for n in names]
    return ids


def k_match(test_id: str, patterns: list[str]) -> bool:
    if not patterns:
        return True
    full = f"onnxruntime_test_python.{test_id}"
    for p in patterns:
        pat = p if any(c in p for c in "*?[") else f"*{p}*"
        if fnmatch.fnmatchcase(full, pat):
            return True
    return False


def read_skips(path: str) -> dict[str, str]:
    skips = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            skips[name] = reason.strip() or "listed in skips.txt"
    return skips


# --- engines (child side) -----------------------------------------------------------------

def import_sdx(source: str):
    """source: 'overlay' (python/sdx sources + the built extension), 'build' (build/wheel/python), 'path' (sys.path)."""
    src = os.path.join(REPO, "python", "sdx")
    build = os.path.join(REPO, "build", "wheel", "python")
    if source == "overlay" and os.path.isdir(src) and os.path.isdir(os.path.join(build, "sdx")):
        spec = importlib.util.spec_from_file_location(
            "sdx", os.path.join(src, "__init__.py"), submodule_search_locations=[src, os.path.join(build, "sdx")])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["sdx"] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules["sdx"]
            raise
        return mod
    if source in ("overlay", "build") and os.path.isdir(build):
        sys.path.insert(0, build)
    return importlib.import_module("sdx")


def install_engine(engine: str, sdx_source: str) -> str | None:
    """Import the engine under the name 'onnxruntime'. Returns a note to print (or None)."""
    if engine == "onnxruntime":
        import onnxruntime  # noqa: F401
        return f"onnxruntime {onnxruntime.__version__} from {os.path.dirname(onnxruntime.__file__)}"
    sdx = import_sdx(sdx_source)
    note = f"sdx {getattr(sdx, '__version__', '?')} from {os.path.dirname(sdx.__file__)}"
    # sdx.capi names itself under the three submodule names too (`from onnxruntime.capi import
    # _pybind_state` resolves through an attribute of the capi module).
    capi = importlib.import_module("sdx.capi")
    sys.modules["onnxruntime"] = sdx
    for name in CAPI_ALIASES:
        sys.modules[name] = capi
    return note


# --- child: run tests, report one JSON line per event ---------------------------------------

def _first_line(text: str) -> str:
    """The line of a traceback that says what went wrong (the exception line), else the first non-empty."""
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback"):
        # the exception line follows the last stack frame ('  File "..."' and its indented code lines)
        frames = [i for i, ln in enumerate(lines) if ln.startswith('  File "')]
        if frames:
            j = frames[-1] + 1
            while j < len(lines) and lines[j].startswith("    "):
                j += 1
            if j < len(lines):
                return lines[j].strip()
    return lines[0].strip()


class _Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcome, self.detail, self.reason = "PASS", "", ""

    def _set(self, outcome, detail, reason=None):
        if self.outcome in ("PASS", "SKIP"):
            self.outcome, self.detail = outcome, detail
            self.reason = reason if reason is not None else _first_line(detail)

    def addError(self, test, err):
        self._set("ERROR", self._exc_info_to_string(err, test))

    def addFailure(self, test, err):
        self._set("FAIL", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self.outcome, self.detail, self.reason = "SKIP", reason, reason

    def addSubTest(self, test, subtest, err):
        if err is not None:
            kind = "FAIL" if issubclass(err[0], test.failureException) else "ERROR"
            tb = self._exc_info_to_string(err, test)
            self._set(kind, tb, f"{subtest._subDescription()}: {_first_line(tb)}")

    def addExpectedFailure(self, test, err):
        self.outcome, self.detail, self.reason = "PASS", "expected failure", "expected failure"

    def addUnexpectedSuccess(self, test):
        self._set("FAIL", "unexpected success")


def child_main(args) -> int:
    out = open(args.results, "a", encoding="utf-8", buffering=1)

    def emit(**kw):
        out.write(json.dumps(kw) + "\n")
        out.flush()

    os.chdir(args.workdir)
    sys.path.insert(0, HERE)  # helper.py
    try:
        note = install_engine(args.engine, args.sdx_source)
        spec = importlib.util.spec_from_file_location("onnxruntime_test_python", args.test_file)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["onnxruntime_test_python"] = mod
        spec.loader.exec_module(mod)
    except BaseException:  # noqa: BLE001
        emit(event="import_error", detail=traceback.format_exc())
        return 3
    if note and args.first:
        emit(event="note", detail=note)
    loader = unittest.TestLoader()
    for tid in open(args.tests, encoding="utf-8").read().split():
        emit(event="start", test=tid)
        t0 = time.time()
        try:
            suite = loader.loadTestsFromName(tid, mod)
            res = _Result()
            suite.run(res)
            outcome, detail, reason = res.outcome, res.detail, res.reason
        except BaseException:  # noqa: BLE001
            outcome, detail = "ERROR", traceback.format_exc()
            reason = _first_line(detail)
        emit(event="end", test=tid, outcome=outcome, reason=reason, detail=detail, seconds=round(time.time() - t0, 3))
    return 0


# --- parent ---------------------------------------------------------------------------------

def run_children(args, tests: list[str], workdir: str, log) -> tuple[list[dict], list[str]]:
    """Runs tests in child processes; returns (results in order, notes)."""
    results: dict[str, dict] = {}
    notes: list[str] = []
    remaining = list(tests)
    first = True
    while remaining:
        control = os.path.dirname(workdir)  # outside the tests' working folder
        rfile = os.path.join(control, f".results.{os.getpid()}.{len(results)}.jsonl")
        tfile = os.path.join(control, f".tests.{os.getpid()}.txt")
        open(tfile, "w").write("\n".join(remaining))
        if os.path.exists(rfile):
            os.remove(rfile)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--engine", args.engine, "--test-file",
               args.test_file, "--results", rfile, "--tests", tfile, "--workdir", workdir,
               "--sdx-source", args.sdx_source] + (["--first"] if first else [])
        env = dict(os.environ)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir)
        pos, current, started = 0, None, 0.0
        killed = None

        def drain():
            nonlocal pos, current, started
            if not os.path.exists(rfile):
                return []
            with open(rfile, encoding="utf-8") as f:
                f.seek(pos)
                data = f.read()
            lines = data.split("\n")
            done = "\n".join(lines[:-1])
            pos += len(done.encode("utf-8")) + (1 if len(lines) > 1 else 0)
            evs = [json.loads(x) for x in lines[:-1] if x.strip()]
            for ev in evs:
                if ev["event"] == "start":
                    current, started = ev["test"], time.time()
                elif ev["event"] == "end":
                    current = None
            return evs

        def handle(evs):
            for ev in evs:
                if ev["event"] == "note":
                    notes.append(ev["detail"])
                    print(ev["detail"], flush=True)
                elif ev["event"] == "import_error":
                    line = _first_line(ev["detail"])
                    notes.append("import of the test file failed:\n" + ev["detail"])
                    print("IMPORT ERROR (every test counts as ERROR):\n" + ev["detail"], flush=True)
                    for t in remaining:
                        if t not in results:
                            results[t] = {"test": t, "outcome": "ERROR", "reason": f"test file import failed: {line}",
                                          "detail": ev["detail"], "seconds": 0.0}
                            report(results[t])
                elif ev["event"] == "end":
                    r = {"test": ev["test"], "outcome": ev["outcome"], "reason": ev["reason"],
                         "detail": ev["detail"], "seconds": ev["seconds"]}
                    results[ev["test"]] = r
                    report(r)

        while True:
            handle(drain())
            rc = proc.poll()
            if rc is not None:
                handle(drain())
                break
            if current is not None and time.time() - started > args.timeout:
                proc.kill()
                proc.wait()
                killed = current
                handle(drain())
                break
            time.sleep(0.05)
        first = False
        if current is not None:  # died or was killed inside a test
            why = (f"timed out after {args.timeout}s" if killed else
                   f"the test process died (exit status {proc.returncode}"
                   + (f", signal {-proc.returncode}" if proc.returncode < 0 else "") + ")")
            results[current] = {"test": current, "outcome": "ERROR", "reason": why, "detail": why, "seconds": None}
            report(results[current])
        remaining = [t for t in remaining if t not in results]
        if remaining and current is None:
            # the child stopped without starting the next test (and without an import error): give up on the rest
            for t in remaining:
                results[t] = {"test": t, "outcome": "ERROR", "reason": f"not run: child exited with {proc.returncode}",
                              "detail": "", "seconds": None}
                report(results[t])
            remaining = []
    return [results[t] for t in tests if t in results], notes


def report(r: dict) -> None:
    name = r["test"].split(".", 1)[-1]
    reason = f"  {r['reason']}" if r["outcome"] != "PASS" and r["reason"] else ""
    print(f"{r['outcome']:5} {name}{reason}", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", choices=["onnxruntime", "sdx"], required=True)
    p.add_argument("--test-file", default=DEFAULT_TEST_FILE)
    p.add_argument("--json", metavar="OUT", help="write the outcomes as JSON")
    p.add_argument("-k", dest="patterns", action="append", default=[], metavar="PATTERN",
                   help="only tests matching (substring, or fnmatch pattern if it has * ? [); repeatable")
    p.add_argument("--skips", default=os.path.join(HERE, "skips.txt"), help="skip list (default: skips.txt here)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a single test may run (default 300)")
    p.add_argument("--sdx-source", choices=["overlay", "build", "path"], default="overlay",
                   help="overlay: python/sdx sources with build/wheel/python's extension (default); "
                        "build: build/wheel/python as is; path: whatever `import sdx` finds")
    p.add_argument("--workdir", help="work folder (default: a new temporary one, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (its child.log has the tests' output)")
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--results", help=argparse.SUPPRESS)
    p.add_argument("--tests", help=argparse.SUPPRESS)
    p.add_argument("--first", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        return child_main(args)

    args.test_file = os.path.abspath(os.path.expanduser(args.test_file))
    if not os.path.exists(args.test_file):
        print(f"no test file at {args.test_file}; see {os.path.join(HERE, 'README.md')} for how to fetch it",
              file=sys.stderr)
        return 2
    digest = hashlib.sha256(open(args.test_file, "rb").read()).hexdigest()

    own_workdir = args.workdir is None
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="ort_api_tests."))
    os.makedirs(workdir, exist_ok=True)
    # layout: <workdir>/work is the working folder (./testdata/ in it); <workdir>/models is the
    # "../models" that test_model_meta looks for
    cwd = os.path.join(workdir, "work")
    gen = subprocess.run([sys.executable, os.path.join(HERE, "make_testdata.py"), os.path.join(cwd, "testdata"),
                          "--models-dir", os.path.join(workdir, "models")], capture_output=True, text=True)
    if gen.returncode != 0:
        print("make_testdata.py failed:\n" + gen.stdout + gen.stderr, file=sys.stderr)
        return 2
    if gen.stderr.strip():
        print(gen.stderr.strip(), file=sys.stderr)

    all_tests = list_tests(args.test_file)
    selected = [t for t in all_tests if k_match(t, args.patterns)]
    skips = read_skips(args.skips)
    to_run = [t for t in selected if t.split(".")[-1] not in skips]

    print(f"engine {args.engine}; test file {args.test_file} (sha256 {digest[:12]}); work folder {workdir}", flush=True)
    with open(os.path.join(workdir, "child.log"), "ab") as log:
        ran, notes = run_children(args, to_run, cwd, log) if to_run else ([], [])
    by_id = {r["test"]: r for r in ran}
    results = []
    for t in selected:
        name = t.split(".")[-1]
        if name in skips:
            r = {"test": t, "outcome": "SKIP", "reason": f"skips.txt: {skips[name]}", "detail": "", "seconds": 0.0}
            report(r)
        else:
            r = by_id[t]
        results.append(r)

    counts = {k: sum(r["outcome"] == k for r in results) for k in ("PASS", "FAIL", "ERROR", "SKIP")}
    failed = counts["FAIL"] + counts["ERROR"]
    print(f"{counts['PASS']} passed, {failed} failed, {counts['SKIP']} skipped of {len(results)}"
          f"  ({counts['FAIL']} FAIL, {counts['ERROR']} ERROR)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"engine": args.engine, "test_file": args.test_file, "test_file_sha256": digest,
                       "notes": notes, "summary": {"passed": counts["PASS"], "failed": failed,
                                                   "skipped": counts["SKIP"], "total": len(results)},
                       "results": results}, f, indent=1)
    if own_workdir and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    elif args.keep:
        print(f"work folder kept: {workdir}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
