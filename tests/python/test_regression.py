"""Regression detection (`sdx bench --save/--compare`): the Mann-Whitney U test, no flags over repeated
comparisons of one build, and a flagged 20% slowdown of one kernel injected through the test-only hook."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx
from sdx import _sdx, bench, regression


def _model(rows=64, width=256):
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array((rng.standard_normal((width, width)) * 0.05).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((width, width)) * 0.05).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"), helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("MatMul", ["a", "w2"], ["g"], name="mm2"), helper.make_node("Tanh", ["g"], ["y"], name="tanh")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])], initializer=[w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_mann_whitney_one_sided():
    rng = np.random.default_rng(1)
    a = rng.normal(100, 5, 60)
    _, p_same = regression.mann_whitney_greater(a, rng.normal(100, 5, 60))
    _, p_up = regression.mann_whitney_greater(a, rng.normal(110, 5, 60))
    _, p_down = regression.mann_whitney_greater(a, rng.normal(90, 5, 60))
    assert p_same > 0.01 and p_up < 1e-6 and p_down > 0.99
    _, p_ties = regression.mann_whitney_greater([1.0] * 10, [1.0] * 10)
    assert p_ties == 1.0


def _measure(sess, feeds, runs):
    e2e = [ns / 1e3 for ns in bench.time_interleaved({"sdx": sess}, feeds, runs, runs)["sdx"]]
    return e2e, regression.op_samples(sess, feeds, runs)


def _paired_comparison(sess, feeds, slowdown=1.0, rounds=8, runs=60):
    """compare() on a baseline and a new side measured in alternating blocks of `runs` calls (the new side
    with MatMul slowed by `slowdown`), the order flipping each round. A 2-core VM sometimes runs for a
    second or so about 20% slower, which a baseline measured once before all comparisons turns into a
    "regression" of every metric; measured in alternation, both sides see such a period alike, so what this
    tests is the detector's statistics on real per-call noise, not the VM's stability."""
    sides = {"base": ([], {}), "new": ([], {})}
    for r in range(rounds):
        for side in (("base", "new") if r % 2 == 0 else ("new", "base")):
            _sdx._test_set_slowdown("MatMul", slowdown if side == "new" else 1.0)
            try:
                e2e, ops = _measure(sess, feeds, runs)
            finally:
                _sdx._test_set_slowdown("MatMul", 1.0)
            sides[side][0].extend(e2e)
            for op, v in ops.items():
                sides[side][1].setdefault(op, []).extend(v)
    (base_e2e, base_ops), (new_e2e, new_ops) = sides["base"], sides["new"]
    assert set(base_ops) == set(new_ops) == {"MatMul", "Relu", "Tanh"}
    return regression.compare({"e2e_us": base_e2e, "ops_us": base_ops}, new_e2e, new_ops)


# The slowdown hook is test-only: a release build (SDX_BUILD_TESTS=OFF, the wheel) compiles it out.
needs_slowdown_hook = pytest.mark.skipif(not hasattr(_sdx, "_test_set_slowdown"),
                                         reason="release build: the test-only slowdown hook is compiled out")


@needs_slowdown_hook
def test_repeated_comparisons_flag_nothing_and_a_slow_kernel_is_flagged():
    o = sdx.SessionOptions()
    o.optimizer_enabled = False  # keep the MatMuls as MatMul
    o.intra_op_num_threads = 1
    sess = sdx.InferenceSession(_model().SerializeToString(), o)
    feeds = {"x": np.random.default_rng(2).standard_normal((64, 256)).astype(np.float32)}
    for _ in range(1500):  # to a steady state (page mappings, caches) before measuring
        sess.run(None, feeds)
    # One build compared with itself 10 times: at most one comparison may flag anything (alpha is 0.05 per
    # metric and there are four metrics); two are a detector that cries wolf.
    false_alarms = []
    for i in range(10):
        rows = _paired_comparison(sess, feeds)
        if any(r["regression"] for r in rows):
            false_alarms.append((i, [r for r in rows if r["regression"]]))
    assert len(false_alarms) <= 1, false_alarms
    # A 20% slower MatMul: flagged in at least four of five comparisons, and in at least one of them nothing
    # but MatMul and the end-to-end time is. (All of three was asked before: CI missed the slowdown in one
    # of three comparisons twice in about 15 runs, on a VM whose slow stretches outlast a block.)
    attempts = [_paired_comparison(sess, feeds, slowdown=1.2) for _ in range(5)]
    flagged = [{r["metric"] for r in rows if r["regression"]} for rows in attempts]
    assert sum("MatMul" in f for f in flagged) >= 4, attempts
    assert any(f <= {"MatMul", "end-to-end"} for f in flagged), attempts


@needs_slowdown_hook
def test_cli_save_compare_exit_status(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(rows=16), str(path))
    base = tmp_path / "base.json"
    cli = [sys.executable, "-m", "sdx", "bench", str(path), "--runs", "40", "--warmup", "5", "--threads", "1"]
    plain = dict(__import__("os").environ, SDX_OPTIMIZER_ENABLED="0")  # keep the MatMuls as MatMul
    r = subprocess.run(cli + ["--save", str(base)], capture_output=True, text=True, cwd="/", env=plain)
    assert r.returncode == 0, r.stderr
    saved = json.loads(base.read_text())
    assert saved["kind"] == "sdx bench baseline" and len(saved["e2e_us"]) == 40 and "MatMul" in saved["ops_us"]
    # 3x: far beyond what a slow stretch of the VM does to the baseline process (CI saw its MatMul samples
    # 55% slow once, which hid a 1.5x slowdown); the sensitivity to small slowdowns is the test above.
    slow = dict(plain, SDX_TEST_SLOWDOWN="MatMul=3")
    out = tmp_path / "compare.json"
    r = subprocess.run(cli + ["--compare", str(base), "--json", str(out)], capture_output=True, text=True, cwd="/",
                       env=slow)
    assert r.returncode == 1, r.stdout + r.stderr
    assert any(line.startswith("MatMul") and line.endswith("REGRESSION") for line in r.stdout.splitlines()), r.stdout
    # --json carries the same verdicts, one row per metric: end-to-end and each op type
    report = json.loads(out.read_text())
    rows = {row["metric"]: row for row in report["comparison"]["rows"]}
    assert "end-to-end" in rows and rows["MatMul"]["regression"] is True, rows
    assert "MatMul" in report["comparison"]["regressions"] and "MatMul" in report["ops_median_us"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = subprocess.run(cli + ["--compare", str(bad)], capture_output=True, text=True, cwd="/")
    assert r.returncode == 2 and "not an sdx bench baseline" in r.stderr
