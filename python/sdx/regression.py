"""Baselines and regression detection for `sdx bench --save FILE` / `--compare FILE`.

A baseline holds repeated samples of the end-to-end latency and of each op type's time per run (from the
op timing tracker). A comparison measures the same again and, for each metric, tests whether the new
samples are larger with a one-sided Mann-Whitney U test; a metric regresses when the test rejects
"not larger" at alpha (default 0.05) AND both its median and its lower quartile grew by more than the
threshold (default 5%) AND the median by at least min_abs_us (default 0.5 us: below that clocks and
caches decide, not kernels) and, for an op type, by at least min_share (default 1%) of the end-to-end
median. A slower kernel shifts the whole distribution, while load from other
processes mostly stretches its upper part; requiring all of this keeps noise from being flagged.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time

import numpy as np

BASELINE_KIND = "sdx bench baseline"
BASELINE_VERSION = 1


def mann_whitney_greater(base: list, new: list) -> tuple[float, float]:
    """U statistic of `new` over `base` and the one-sided p-value of H1: new tends to be larger.

    Normal approximation with tie correction and continuity correction (fine from about 8 samples per side;
    the comparisons here use tens to hundreds)."""
    x = np.asarray(base, dtype=np.float64)
    y = np.asarray(new, dtype=np.float64)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        return 0.0, 1.0
    both = np.concatenate([x, y])
    order = np.argsort(both, kind="mergesort")
    ranks = np.empty(both.size, dtype=np.float64)
    sorted_vals = both[order]
    i = 0
    tie_term = 0.0
    while i < both.size:  # average ranks over ties
        j = i
        while j + 1 < both.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    r2 = ranks[n1:].sum()
    u2 = r2 - n2 * (n2 + 1) / 2.0  # pairs (x, y) with y > x (ties count half)
    mean = n1 * n2 / 2.0
    n = n1 + n2
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return u2, 1.0
    z = (u2 - mean - 0.5) / math.sqrt(var)
    p = 0.5 * math.erfc(z / math.sqrt(2.0))
    return float(u2), float(p)


def op_samples(sess, feeds: dict, runs: int, progress=None) -> dict:
    """{op type: [us per run, ...]}: each op type's total time in each of `runs` consecutive runs (the op
    timing tracker in simple mode; the end-to-end latency is measured separately, without it). No pauses:
    the first calls after an idle moment run cold (about 2x slower on this machine), which would be noise.
    `progress(done)`, when given, is called after each run."""
    from . import profiling as prof

    samples: dict = {}
    with prof.timing("simple"):
        for done in range(1, runs + 1):
            prof.reset()
            sess.run(None, feeds)
            prof.flush()
            for s in prof.stats():
                samples.setdefault(s["op"], [0.0] * (done - 1)).append(s["total_ms"] * 1e3)
            for v in samples.values():  # an op that did not run this time counts 0
                if len(v) < done:
                    v.append(0.0)
            if progress:
                progress(done)
    return samples


def model_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_baseline(result: dict, ops: dict) -> dict:
    return {
        "kind": BASELINE_KIND,
        "version": BASELINE_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "model": result["model"],
        "model_sha256": model_digest(result["model"]),
        "threads": result["threads"],
        "inputs": result["inputs"],
        "versions": result["versions"],
        "machine": result["machine"],
        "e2e_us": result["samples_us"]["sdx"],
        "ops_us": ops,
    }


def load_baseline(path: str) -> dict:
    try:
        with open(path) as f:
            b = json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read the baseline '{path}': {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"the baseline '{path}' is not JSON: {e}") from None
    if not isinstance(b, dict) or b.get("kind") != BASELINE_KIND or "e2e_us" not in b or "ops_us" not in b:
        raise ValueError(f"'{path}' is not an sdx bench baseline (written by `sdx bench MODEL --save FILE`)")
    if b.get("version") != BASELINE_VERSION:
        raise ValueError(f"the baseline '{path}' has version {b.get('version')}; this sdx reads {BASELINE_VERSION}")
    return b


def compare(baseline: dict, e2e_us: list, ops_us: dict, threshold: float = 0.05, alpha: float = 0.05,
            min_abs_us: float = 0.5, min_share: float = 0.01) -> list:
    """One row per metric ("end-to-end", then op types by baseline time): metric, base_median_us,
    new_median_us, change (relative), p (one-sided, new larger), regression (bool)."""
    rows = []
    e2e_base = float(np.median(baseline["e2e_us"])) if baseline["e2e_us"] else 0.0

    def row(metric, base, new, floor_us=min_abs_us):
        base = [float(v) for v in base]
        new = [float(v) for v in new]
        bm = float(np.median(base)) if base else 0.0
        nm = float(np.median(new)) if new else 0.0
        bq = float(np.percentile(base, 25)) if base else 0.0
        nq = float(np.percentile(new, 25)) if new else 0.0
        _, p = mann_whitney_greater(base, new)
        change = (nm - bm) / bm if bm > 0 else (math.inf if nm > 0 else 0.0)
        # A slower kernel moves the whole distribution; a burst of load from elsewhere stretches the upper
        # part: the lower quartile must have moved as well.
        q_change = (nq - bq) / bq if bq > 0 else (math.inf if nq > 0 else 0.0)
        regression = bool(p < alpha and min(change, q_change) > threshold and nm - bm >= floor_us)
        rows.append({"metric": metric, "base_median_us": bm, "new_median_us": nm, "change": change,
                     "q25_change": q_change, "p": p, "regression": regression})

    row("end-to-end", baseline["e2e_us"], e2e_us)
    # An op type must also add min_share of the run: smaller shifts are below what the run can show, and
    # the machine's state (page placement, a busy sibling hyperthread) moves small memory-bound ops by
    # that much between processes and even within one.
    op_floor = max(min_abs_us, min_share * e2e_base)
    base_ops = baseline["ops_us"]
    for op in sorted(base_ops, key=lambda o: -float(np.median(base_ops[o]))):
        row(op, base_ops[op], ops_us.get(op, []), op_floor)
    for op in sorted(set(ops_us) - set(base_ops)):
        row(op, [], ops_us[op], op_floor)
    return rows


def print_comparison(rows: list, baseline_path: str, threshold: float, alpha: float) -> None:
    print(f"comparison with {baseline_path} (regression: one-sided Mann-Whitney U p < {alpha} and median "
          f"+{threshold * 100:.0f}% or more)")
    print(f"{'metric':<28} {'base p50 us':>12} {'new p50 us':>12} {'change':>8} {'p':>9}  verdict")
    for r in rows:
        change = "new" if math.isinf(r["change"]) else f"{r['change'] * 100:+.1f}%"
        verdict = "REGRESSION" if r["regression"] else "ok"
        print(f"{r['metric'][:28]:<28} {r['base_median_us']:12.2f} {r['new_median_us']:12.2f} {change:>8} "
              f"{r['p']:9.2g}  {verdict}")
    n = sum(r["regression"] for r in rows)
    print(f"{n} regression(s)" if n else "no regressions")


def same_model_note(baseline: dict, model: str) -> str | None:
    if os.path.abspath(model) != baseline.get("model") and model_digest(model) != baseline.get("model_sha256"):
        return f"note: the baseline was measured on {baseline.get('model')}, a different model file"
    return None
