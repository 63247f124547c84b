"""Overhead of the loop analysis (issue 20): a Loop RNN (h' = tanh(h W + b), h float32[1, 64], 1000 iterations)
run with SessionOptions.loop_analysis off and on, in paired rounds (each round times both sessions, in
alternating order, and keeps the ratio); prints the medians. The issue's bars: off costs < 1% against the
code before the loop analysis, on is at most 2x off.

    PYTHONPATH=build/dev/python python3 bench/bench_loop_analysis.py [--rounds 30] [--iters 1000]
    # off against another build (e.g. the commit before the analysis), same model, same pairing:
    PYTHONPATH=build/dev/python python3 bench/bench_loop_analysis.py --baseline /path/to/other/build/python

With --baseline the other build runs in a child process per round, so the two builds' modules never share
a process; the round's two timings are then taken back to back.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def model(iters: int) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    b = (rng.standard_normal((1, 64)) * 0.1).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", "W"], ["hw"]), helper.make_node("Add", ["hw", "B"], ["z"]),
         helper.make_node("Tanh", ["z"], ["h_out"]), helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 64])])
    inits = [numpy_helper.from_array(np.array(iters, dtype=np.int64), "M"), numpy_helper.from_array(np.array(True), "C"),
             numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")]
    g = helper.make_graph([helper.make_node("Loop", ["M", "C", "h0"], ["h"], name="rnn", body=body)], "main",
                          [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 64])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def time_session(sess, feeds, reps: int) -> float:
    """Median seconds per run over `reps` runs (after 3 warmup runs)."""
    for _ in range(3):
        sess.run(None, feeds)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def session(path: str, analysis: bool):
    import sdx

    o = sdx.SessionOptions()
    o.intra_op_num_threads = 1
    if analysis:
        o.loop_analysis = True
    return sdx.InferenceSession(path, o)


def child(path: str, reps: int) -> None:  # --child: one timing of analysis off, printed as JSON
    feeds = {"h0": np.zeros((1, 64), np.float32)}
    print(json.dumps(time_session(session(path, False), feeds, reps)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--reps", type=int, default=15, help="runs per timing (median)")
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--baseline", metavar="PYTHONPATH", help="time analysis off against this build instead of on")
    ap.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.reps)
        return 0
    path = f"/tmp/bench_loop_analysis_{a.iters}.onnx"
    with open(path, "wb") as f:
        f.write(model(a.iters))
    feeds = {"h0": np.zeros((1, 64), np.float32)}
    ratios, firsts, seconds = [], [], []
    if a.baseline:
        def timed(pythonpath):
            env = dict(os.environ, PYTHONPATH=pythonpath, SDX_DISK_PLAN_CACHE="0")
            out = subprocess.run([sys.executable, __file__, "--child", path, "--reps", str(a.reps)], env=env,
                                 check=True, capture_output=True, text=True).stdout
            return float(out.strip().splitlines()[-1])
        this = os.environ.get("PYTHONPATH", "")
        labels = ("off (this build)", f"off ({a.baseline})")
        for r in range(a.rounds):
            pair = [timed(this), timed(a.baseline)] if r % 2 == 0 else list(reversed([timed(a.baseline), timed(this)]))
            firsts.append(pair[0]); seconds.append(pair[1]); ratios.append(pair[0] / pair[1])
    else:
        off, on = session(path, False), session(path, True)
        labels = ("on", "off")
        for r in range(a.rounds):
            if r % 2 == 0:
                t_off = time_session(off, feeds, a.reps); t_on = time_session(on, feeds, a.reps)
            else:
                t_on = time_session(on, feeds, a.reps); t_off = time_session(off, feeds, a.reps)
            firsts.append(t_on); seconds.append(t_off); ratios.append(t_on / t_off)
        assert len(on.loop_reports()) > 0 and off.loop_reports() == []
    q = statistics.quantiles(ratios, n=4)
    print(f"Loop RNN, {a.iters} iterations, {a.rounds} paired rounds x {a.reps} runs (medians):")
    print(f"  {labels[0]}: {statistics.median(firsts) * 1e3:.3f} ms   {labels[1]}: {statistics.median(seconds) * 1e3:.3f} ms")
    print(f"  ratio {labels[0]} / {labels[1]}: median {statistics.median(ratios):.4f} (quartiles {q[0]:.4f} .. {q[2]:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
