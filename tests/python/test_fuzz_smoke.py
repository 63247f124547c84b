"""Bounded runs of the structural fuzzer, the empty-input sweep and the external-data sweep
(fuzz/README.md): no case may crash, hang, or take over its time limit. The counts are printed to the
terminal even without -s.

SDX_FUZZ_SMOKE_SECONDS sets the fuzzer's budget (default 90 s; a fixed seed, so a slower machine runs a
prefix of the same cases); SDX_FUZZ_SMOKE=0 skips them. Repros of failures are kept under
build/fuzz-findings/smoke-*/ and named in the assertion message.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "fuzz")
SEED = 1
SECONDS = float(os.environ.get("SDX_FUZZ_SMOKE_SECONDS", "90"))

pytestmark = pytest.mark.skipif(os.environ.get("SDX_FUZZ_SMOKE") == "0", reason="SDX_FUZZ_SMOKE=0")


def _run(args: list, out: str, timeout: float) -> tuple:
    if os.path.exists(os.path.join(out, "summary.json")):
        os.remove(os.path.join(out, "summary.json"))
    p = subprocess.run([sys.executable] + args + ["--out", out, "--no-gdb"], capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    path = os.path.join(out, "summary.json")
    assert os.path.exists(path), f"{args[0]} wrote no summary (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    with open(path) as f:
        summary = json.load(f)
    bad = [x for x in summary["findings"] if x["kind"] in ("crash", "hang", "slow_error", "accepted_invalid")]
    findings = "\n".join(f"  {x['kind']}: {x['mutations'][:300]} -> {x['detail'][:200]}  {x['repro']}" for x in bad[:30])
    findings += f"\n  ... {len(bad) - 30} more in {out}/summary.json" if len(bad) > 30 else ""
    return p, summary, findings


def test_empty_input_sweep(capsys):
    """Every node input of the 14 synthetic seed models set to "" and to a dangling name."""
    out = os.path.join(ROOT, "build", "fuzz-findings", "smoke-sweep")
    p, summary, findings = _run([os.path.join(FUZZ, "empty_input_sweep.py"), "--modes", "empty,dangling"], out, 900)
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("empty-input sweep")]
    with capsys.disabled():
        print(f"\n[fuzz smoke] {last[-1] if last else p.stdout[-500:]}")
    assert len(summary["per_model"]) >= 8
    assert p.returncode == 0, f"{last}\n{findings}\n{p.stderr[-2000:]}"


def test_structural_fuzzer(capsys):
    out = os.path.join(ROOT, "build", "fuzz-findings", "smoke-structural")
    p, summary, findings = _run([os.path.join(FUZZ, "structural_fuzzer.py"), "--seed", str(SEED),
                                 "--budget-seconds", str(SECONDS)], out, SECONDS + 300)
    counts = summary["counts"]
    line = ", ".join(f"{k} {counts.get(k, 0)}" for k in ("cases", "ok", "not_run", "clean_error", "unclean_error",
                                                         "slow_error", "crash", "hang"))
    with capsys.disabled():
        print(f"\n[fuzz smoke] structural fuzzer seed {SEED}, {summary['seconds']} s: {line}")
    assert counts.get("cases", 0) > 0
    assert p.returncode == 0, f"{line}\n{findings}\n{p.stderr[-2000:]}"


def test_external_data_sweep(capsys):
    """Every external-data location, offset, length and key form; FIFO, /dev and /proc must fail in 1 s,
    locations outside the model folder and offsets/lengths that are not plain decimal must be rejected."""
    out = os.path.join(ROOT, "build", "fuzz-findings", "smoke-external")
    p, summary, findings = _run([os.path.join(FUZZ, "external_data_sweep.py")], out, 600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("external-data sweep", "special-file"))]
    with capsys.disabled():
        print("\n[fuzz smoke] " + "\n[fuzz smoke] ".join(lines))
    assert summary["timed_cases"], "no special-file case ran"
    assert p.returncode == 0, f"{lines}\n{findings}\n{p.stderr[-2000:]}"
