"""Cold start: load to first output and to first replayed call of an ONNX model loaded cold (the disk plan
cache off), of its .sdx bundle, and of the same ONNX model through a warm disk plan cache, each in fresh
processes (issue 16's acceptance: the bundle or cached plan at least 5x faster to its first replayed call,
no compiler call, outputs bitwise equal to the cold session's).

    python3 bench/cold_start.py                      # bert (BERT-style encoder) and cnn (ResNet-18), 10 runs each
    python3 bench/cold_start.py --models bert --runs 5

Each run is a new Python process that has imported sdx and numpy, then idled 0.25 s (numpy's OpenBLAS
threads spin for about 0.1 s after import), before its clock starts; the clock covers
InferenceSession(path) and calls until one replays (the report's execution_mode is CPU_REPLAY). The JIT's
disk cache is warmed by the compile step first, so neither side waits on a compiler; `compiler_runs`
(from the session's JIT statistics) shows whether one was started.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
import sdx
path, feeds_path = sys.argv[1], sys.argv[2]
feeds = dict(np.load(feeds_path))
time.sleep(0.25)  # idle first: numpy's OpenBLAS threads spin for about 0.1 s after import, on the cores sdx uses
t0 = time.perf_counter()
sess = sdx.InferenceSession(path)
t_load = time.perf_counter()
first_output = None
calls = 0
while True:
    outs, rep = sess.run_with_report(None, feeds)
    calls += 1
    now = time.perf_counter()
    if first_output is None:
        first_output = now
    if rep["execution_mode"] == "CPU_REPLAY" or calls > 10:
        break
h = hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in outs)).hexdigest()
print(json.dumps({"load_ms": 1e3 * (t_load - t0), "first_output_ms": 1e3 * (first_output - t0),
                  "first_replay_ms": 1e3 * (now - t0), "calls": calls, "replayed": rep["execution_mode"] == "CPU_REPLAY",
                  "compiler_runs": sess._sess.jit_stats()["compiler_runs"], "outputs_sha256": h}))
"""


def model_and_feeds(name: str):
    import models as M
    if name == "bert":
        m = M.bert_encoder()
    elif name == "cnn":
        m = M.resnet18()
    else:
        raise SystemExit(f"unknown model {name!r}")
    import sdx
    s = sdx.InferenceSession(m.SerializeToString())
    rng = np.random.default_rng(0)
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.ones(shape, np.int64) if "int64" in i.type else rng.standard_normal(shape).astype(np.float32)
    return m.SerializeToString(), feeds


def run_child(path: str, feeds_path: str, cache_dir: str | None = None) -> dict:
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="0")
    if cache_dir:
        env.update(SDX_DISK_PLAN_CACHE="1", SDX_DISK_PLAN_CACHE_DIR=cache_dir)
    r = subprocess.run([sys.executable, "-c", CHILD, path, feeds_path], capture_output=True, text=True, timeout=600,
                       env=env)
    if r.returncode != 0:
        raise SystemExit(f"child failed on {path}:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="bert,cnn")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--json", help="also write every figure here")
    args = p.parse_args()
    import sdx
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            data, feeds = model_and_feeds(name)
            onnx_path, sdx_path, feeds_path = (os.path.join(tmp, f"{name}.{ext}") for ext in ("onnx", "sdx", "npz"))
            with open(onnx_path, "wb") as f:
                f.write(data)
            np.savez(feeds_path, **feeds)
            print(f"== {name}: compiling the bundle", file=sys.stderr)
            with open(sdx_path, "wb") as f:
                f.write(sdx.compile_bundle(data, [feeds]))
            cache_dir = os.path.join(tmp, f"{name}-plans")
            run_child(onnx_path, feeds_path)  # warms the JIT disk cache and the page cache for all three
            run_child(sdx_path, feeds_path)
            run_child(onnx_path, feeds_path, cache_dir)  # writes the disk plan cache's entry
            kinds = (("onnx", onnx_path, None), ("bundle", sdx_path, None), ("cache", onnx_path, cache_dir))
            rows = {kind: [] for kind, _, _ in kinds}
            for r in range(args.runs):  # alternating, so drift hits all alike
                for kind, path, cdir in kinds:
                    rows[kind].append(run_child(path, feeds_path, cdir))
                print(f"   run {r + 1}/{args.runs}", file=sys.stderr)
            med = {k: {m: statistics.median(x[m] for x in v) for m in ("load_ms", "first_output_ms", "first_replay_ms")}
                   for k, v in rows.items()}
            same = len({x["outputs_sha256"] for v in rows.values() for x in v}) == 1
            results[name] = {"median": med, "runs": rows, "outputs_bitwise_equal": same,
                             "bundle_compiler_runs": max(x["compiler_runs"] for k in ("bundle", "cache") for x in rows[k])}
            for k in ("bundle", "cache"):
                results[name][f"{k}_speedup_first_replay"] = med["onnx"]["first_replay_ms"] / med[k]["first_replay_ms"]
                results[name][f"{k}_speedup_first_output"] = med["onnx"]["first_output_ms"] / med[k]["first_output_ms"]
    print(f"{'model':6} {'kind':7} {'load ms':>9} {'1st output ms':>14} {'1st replay ms':>14}")
    for name, r in results.items():
        for kind in ("onnx", "bundle", "cache"):
            m = r["median"][kind]
            print(f"{name:6} {kind:7} {m['load_ms']:9.1f} {m['first_output_ms']:14.1f} {m['first_replay_ms']:14.1f}")
        for k in ("bundle", "cache"):
            print(f"{name:6} {k}: speedup to first replay {r[k + '_speedup_first_replay']:.2f}x, to first output "
                  f"{r[k + '_speedup_first_output']:.2f}x")
        print(f"{name:6} outputs bitwise equal: {r['outputs_bitwise_equal']}; compiler runs in bundle and cache "
              f"processes: {r['bundle_compiler_runs']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
