"""The parent side of the fuzz harness: runs cases in child processes and classifies what happened.

A case is a model (plus, for external-data cases, the files beside it) written into a scratch folder
and handed to fuzz/run_case.py in a child process with a timeout and an address-space cap. Outcomes:

    ok            loaded and ran RUNS times
    not_run       loaded; the harness would not build its inputs (huge, or a type it cannot make)
    clean_error   an exception sdx promises (sdx.SdxError, ValueError, TypeError, ...) with a message
    unclean_error any other Python exception (RuntimeError from an unmapped C++ exception, MemoryError, ...)
    slow_error    a clean error that took longer than the case's max_seconds (e.g. a FIFO must fail in 1 s)
    accepted_invalid  loaded, though the case is one sdx must reject (expect_error: the external-data sweep)
    crash         the child died of a signal, or exited without reporting (std::terminate, abort, exit)
    hang          no answer within the timeout; the child is killed

Crashes and hangs are saved under the output folder as crash-<hash>.onnx / hang-<hash>.onnx (a folder
of the same name for multi-file cases) with a .txt beside it: the case id and how to replay it, the
mutations, the signal or exit code, the child's stderr tail and, with gdb on PATH, a native backtrace.

Children run from a pool (one process serves many cases, recycled every `recycle` cases) unless
isolate=True (a fresh process per case). A crash or hang seen in the pool is re-run alone in a fresh
process; one that does not reproduce there is marked so (state left by an earlier case).

    h = Harness(out_dir="build/fuzz-findings/x", timeout_s=10)
    result = h.run(Case(case_id="s1:42", description="...", write=lambda d: write_model(d, model)))
    h.close(); print(h.summary_text())
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_CASE = os.path.join(HERE, "run_case.py")
CRASH_KINDS = ("crash", "hang")
# "#3  0x00007f... in sdx::foo(int) (x=1) at src/a.cc:12" -> ("#3", "sdx::foo(int)", "src/a.cc:12")
_FRAME = re.compile(r"^(#\d+)\s+(?:0x[0-9a-f]+ in )?(.+?)(?: \(.*\))?(?: at (\S+)| from (\S+))?$")


@dataclasses.dataclass
class Case:
    case_id: str                                  # replays the case: "<tool> --seed S --case N" or "sweep:model:node:input"
    description: str                              # the mutations applied
    write: Callable[[str], str]                   # writes the case into a folder, returns the model path
    as_bytes: bool = False                        # hand the model to sdx as bytes instead of a path
    max_seconds: float | None = None              # a clean error slower than this is a slow_error
    family: str = ""                              # the mutation family, for the per-family counts
    replay: str = ""                              # shell command that rebuilds and runs this case
    sym_dim: int = 1                              # the value fed for symbolic input dims
    expect_error: bool = False                    # sdx must reject it: loading is accepted_invalid


@dataclasses.dataclass
class Result:
    kind: str
    detail: str = ""
    seconds: float = 0.0
    stderr_tail: str = ""
    child: dict | None = None
    repro: str = ""


def write_model(folder: str, model, name: str = "model.onnx") -> str:
    path = os.path.join(folder, name)
    data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    return path


def _limits(address_space: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def child_env(extra: dict | None = None, jit: bool = False) -> dict:
    env = dict(os.environ)
    env.update({"SDX_INTRA_OP_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                "PYTHONFAULTHANDLER": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    if not jit:
        env["SDX_JIT_ENABLED"] = "0"  # mutated models make unique kernels: a compiler per case is only slow
    env.update(extra or {})
    return env


class _Worker:
    """One child serving cases over a pipe; its stderr goes to a file so each case's tail can be read."""

    def __init__(self, env: dict, address_space: int, cwd: str):
        self.err = tempfile.NamedTemporaryFile(prefix="sdx-fuzz-stderr-", delete=False)
        self.proc = subprocess.Popen([sys.executable, RUN_CASE, "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, env=env, cwd=cwd,
                                     preexec_fn=_limits(address_space), start_new_session=True)
        self.buf = b""
        self.served = 0

    def ask(self, spec: dict, timeout_s: float) -> tuple[str, dict | None, int | None]:
        """('answer', result, None) | ('died', None, returncode) | ('timeout', None, None)."""
        self.err_offset = os.path.getsize(self.err.name)
        try:
            self.proc.stdin.write((json.dumps(spec) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return "died", None, self.proc.wait()
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout", None, None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return "died", None, self.proc.wait()
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.served += 1
        return "answer", json.loads(line), None

    def stderr_tail(self, limit: int = 4000) -> str:
        with open(self.err.name, "rb") as f:
            f.seek(getattr(self, "err_offset", 0))
            data = f.read()
        return data[-limit:].decode(errors="replace")

    def stop(self, kill: bool = False) -> int | None:
        if self.proc.poll() is None:
            if kill:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group of this child only (start_new_session)
            else:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
        rc = self.proc.wait()
        self.proc.stdout.close()
        self.err.close()
        os.unlink(self.err.name)
        return rc


def _describe_exit(rc: int | None) -> str:
    if rc is None:
        return "no exit status"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc} without reporting a result"


class Harness:
    def __init__(self, out_dir: str, timeout_s: float = 10.0, address_space: int = 4 << 30, isolate: bool = False,
                 recycle: int = 50, gdb: bool = True, jit: bool = False, verbose: bool = False,
                 env: dict | None = None):
        self.out_dir = out_dir
        self.timeout_s = timeout_s
        self.address_space = address_space
        self.isolate = isolate
        self.recycle = 1 if isolate else recycle
        self.gdb = gdb and shutil.which("gdb") is not None
        self.env = child_env(env, jit=jit)
        self.verbose = verbose
        self.scratch = tempfile.mkdtemp(prefix="sdx-fuzz-")
        self.env.setdefault("SDX_CACHE_DIR", os.path.join(self.scratch, "cache"))
        self.worker: _Worker | None = None
        self.counts = collections.Counter()
        self.by_family: dict = collections.defaultdict(collections.Counter)
        self.findings: list = []   # (case, result) for crash / hang / unclean_error / slow_error
        self.slow: list = []       # (case_id, seconds) of cases with max_seconds, for the report
        self.gdb_runs = 0
        os.makedirs(out_dir, exist_ok=True)

    # -- running ------------------------------------------------------------------------------------
    def _new_worker(self) -> _Worker:
        w = _Worker(self.env, self.address_space, self.scratch)
        # The worker imports sdx before serving: a ready line makes import time not count against a case.
        kind, ans, rc = w.ask({"path": "", "ping": True}, 120.0)
        if kind != "answer":
            tail = w.stderr_tail()
            w.stop(kill=True)
            raise RuntimeError(f"fuzz worker failed to start ({_describe_exit(rc)}):\n{tail}")
        w.served = 0
        return w

    def _attempt(self, case: Case, fresh: bool) -> Result:
        folder = tempfile.mkdtemp(prefix="case-", dir=self.scratch)
        try:
            path = case.write(folder)
            if fresh or self.worker is None or self.worker.served >= self.recycle:
                if self.worker is not None:
                    self.worker.stop()
                self.worker = self._new_worker()
            w = self.worker
            t0 = time.monotonic()
            kind, ans, rc = w.ask({"path": path, "bytes": case.as_bytes, "sym_dim": case.sym_dim}, self.timeout_s)
            seconds = time.monotonic() - t0
            if kind == "timeout":
                stacks = self._attach_backtrace(w.proc.pid)
                tail = w.stderr_tail() + (f"\n--- gdb: threads of the hung child ---\n{stacks}" if stacks else "")
                w.stop(kill=True)
                self.worker = None
                return Result("hang", f"no result within {self.timeout_s:g} s", seconds, tail)
            if kind == "died":
                tail = w.stderr_tail()
                w.stop()
                self.worker = None
                return Result("crash", _describe_exit(rc), seconds, tail)
            if self.isolate:
                tail = w.stderr_tail()
                rc = w.stop()
                self.worker = None
                if rc != 0:
                    return Result("crash", f"after reporting {ans['status']}: {_describe_exit(rc)}", seconds, tail, ans)
            return self._classify(case, ans, seconds)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _classify(self, case: Case, ans: dict, seconds: float) -> Result:
        status = ans["status"]
        if status in ("ok", "not_run") and case.expect_error:
            return Result("accepted_invalid", "loaded, but it must be rejected", seconds, child=ans)
        if status in ("ok", "not_run"):
            return Result(status, ans.get("error", ""), seconds, child=ans)
        detail = f"{ans['error_type']}: {ans['error']}"
        if not ans["clean"]:
            return Result("unclean_error", detail, seconds, child=ans)
        if case.max_seconds is not None and ans["load_s"] + ans["run_s"] > case.max_seconds:
            return Result("slow_error", f"{ans['load_s'] + ans['run_s']:.2f} s > {case.max_seconds} s: {detail}",
                          seconds, child=ans)
        return Result("clean_error", detail, seconds, child=ans)

    def run(self, case: Case) -> Result:
        result = self._attempt(case, fresh=False)
        if result.kind in CRASH_KINDS and not self.isolate and self.worker is None:
            again = self._attempt(case, fresh=True)
            if again.kind not in CRASH_KINDS:
                result.detail += f" (not reproduced alone in a fresh process: {again.kind})"
            else:
                result = again
        if case.max_seconds is not None:
            self.slow.append((case.case_id, result.seconds))
        self.counts[result.kind] += 1
        self.counts["cases"] += 1
        self.by_family[case.family or "-"][result.kind] += 1
        if result.kind in CRASH_KINDS or result.kind in ("unclean_error", "slow_error", "accepted_invalid"):
            if result.kind in CRASH_KINDS:
                result.repro = self._save(case, result)
            self.findings.append((case, result))
            print(f"[{result.kind}] {case.case_id}: {case.description} -> {result.detail}"
                  + (f"  repro: {result.repro}" if result.repro else ""), flush=True)
        elif self.verbose:
            print(f"[{result.kind}] {case.case_id}: {case.description} -> {result.detail[:200]}", flush=True)
        return result

    # -- repro files --------------------------------------------------------------------------------
    def _save(self, case: Case, result: Result) -> str:
        folder = tempfile.mkdtemp(prefix="save-", dir=self.scratch)
        try:
            path = case.write(folder)
            files = sorted(os.listdir(folder))
            with open(path, "rb") as f:
                digest = hashlib.sha1(f.read() + case.description.encode()).hexdigest()[:12]
            stem = os.path.join(self.out_dir, f"{result.kind}-{digest}")
            if os.path.exists(stem + ".txt"):  # the same case again (a seed repeats a mutation): keep the first
                return stem + ".onnx" if os.path.exists(stem + ".onnx") else stem
            if files == [os.path.basename(path)]:
                shutil.copyfile(path, stem + ".onnx")
                repro = model_file = stem + ".onnx"
            else:
                repro = stem
                model_file = os.path.join(stem, os.path.relpath(path, folder))
                _copy_case_folder(folder, stem)
            backtrace = self._backtrace(path, case.as_bytes, case.sym_dim) if result.kind == "crash" else ""
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        with open(stem + ".txt", "w") as f:
            f.write(f"case: {case.case_id}\nfamily: {case.family}\nmutations: {case.description}\n"
                    f"outcome: {result.kind}: {result.detail}\nseconds: {result.seconds:.2f}\n"
                    f"model given as: {'bytes' if case.as_bytes else 'path'}; symbolic input dims = {case.sym_dim}\n")
            if case.replay:
                f.write(f"replay: {case.replay}\n")
            f.write(f"run alone: python3 fuzz/run_case.py {model_file}{' --bytes' if case.as_bytes else ''}"
                    f"{f' --sym-dim {case.sym_dim}' if case.sym_dim != 1 else ''}\n\n"
                    f"--- child stderr (tail) ---\n{result.stderr_tail}\n")
            if backtrace:
                f.write(f"\n--- gdb backtrace ---\n{backtrace}\n")
        return repro

    def _backtrace(self, path: str, as_bytes: bool, sym_dim: int = 1, cap: int = 60) -> str:
        if not self.gdb or self.gdb_runs >= cap:
            return ""
        self.gdb_runs += 1
        cmd = ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "set print thread-events off",
               "-ex", "run", "-ex", "bt 40", "--args", sys.executable, RUN_CASE, path, "--sym-dim", str(sym_dim)] + \
              (["--bytes"] if as_bytes else [])
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=self.env, cwd=self.scratch,
                               preexec_fn=_limits(self.address_space), start_new_session=True)
        except subprocess.TimeoutExpired:
            return "(gdb timed out)"
        out = []
        for ln in p.stdout.splitlines():
            if ln.startswith("#"):
                ln = _short_frame(ln)
                if "_PyEval_EvalFrame" in ln or "PyObject_Vectorcall" in ln:
                    break  # the interpreter's frames below the extension add nothing
                out.append(ln)
            elif "signal" in ln.lower() or "terminate" in ln or "what()" in ln or "Assertion" in ln:
                out.append(ln[:300])
        return "\n".join(out)

    def _attach_backtrace(self, pid: int) -> str:
        """Native stacks of every thread of a hung child (gdb attaches, prints, detaches)."""
        if not self.gdb or self.gdb_runs >= 60:
            return ""
        self.gdb_runs += 1
        try:
            p = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid), "-ex", "set pagination off",
                                "-ex", "thread apply all bt 25"], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "(gdb timed out)"
        return "\n".join(_short_frame(ln) if ln.startswith("#") else ln for ln in p.stdout.splitlines()
                         if ln.startswith(("#", "Thread ")))[-6000:]

    # -- reporting ----------------------------------------------------------------------------------
    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        shutil.rmtree(self.scratch, ignore_errors=True)

    def summary(self) -> dict:
        return {"counts": dict(self.counts), "by_family": {k: dict(v) for k, v in self.by_family.items()},
                "findings": [{"case": c.case_id, "family": c.family, "mutations": c.description, "kind": r.kind,
                              "detail": r.detail, "seconds": round(r.seconds, 3), "repro": r.repro}
                             for c, r in self.findings],
                "timed_cases": [{"case": cid, "seconds": round(s, 3)} for cid, s in self.slow]}

    def summary_text(self) -> str:
        c = self.counts
        line = (f"{c['cases']} cases: {c['ok']} loaded and ran, {c['not_run']} loaded (not run), "
                f"{c['clean_error']} clean errors, {c['unclean_error']} unclean errors, {c['slow_error']} slow errors, "
                f"{c['crash']} crashes, {c['hang']} hangs" + (f", {c['accepted_invalid']} accepted invalid"
                                                              if c["accepted_invalid"] else ""))
        fams = [f"  {fam:24s} " + ", ".join(f"{k}={v}" for k, v in sorted(cnt.items()))
                for fam, cnt in sorted(self.by_family.items())]
        return "\n".join([line] + fams)


def _short_frame(line: str) -> str:
    m = _FRAME.match(line)
    return f"{m.group(1)} {m.group(2)}{(' at ' + m.group(3)) if m.group(3) else ''}" if m else line[:200]


def _copy_case_folder(src: str, dst: str) -> None:
    """Copies a multi-file case: symlinks stay links, FIFOs are made again, device nodes are not copied."""
    os.makedirs(dst, exist_ok=True)
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in dirs + files:
            s, d = os.path.join(root, name), os.path.join(dst, rel, name)
            st = os.lstat(s)
            if os.path.lexists(d):
                continue
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(s), d)
            elif stat.S_ISFIFO(st.st_mode):
                os.mkfifo(d)
            elif stat.S_ISREG(st.st_mode):
                shutil.copyfile(s, d)
