"""Real models whose input size changes on every call (a sentence-embedding service, an OCR recognizer fed
text lines of any width): sdx against onnxruntime, each engine in a fresh process per round, so the cost of
meeting new sizes is counted as a user pays it.

    python3 bench/varlen.py [--models minilm_l3_paraphrase,ocr_rec_ppocrv4,crnn_lstm_ddddocr] [--calls 200]
                            [--rounds 3] [--threads 1] [--sdx-b PYTHONPATH] [--exact] [--json FILE]

Each model (bench/zoo.toml, fetched as bench/zoo.py does) has one dim that varies (VARYING below: the
sequence length, or the image width); round r draws --calls sizes from its range with seed r, the same for
every engine. A round runs the calls back to back in a new process per engine (session created first, not
timed; the disk plan cache off), after timing.SETTLE_S of idle time, and reports the wall time of all calls,
the per-call median and the process's resident memory at the end. --sdx-b adds a second sdx build (its
python folder), e.g. an older commit's. --exact adds sdx with SessionOptions.auto_shape_buckets off
("sdx_exact": every size at its exact shapes; by default, dims proven independent rows switch to automatic
buckets once half the plan cache's count of sizes were seen). Medians over
rounds of wall time and of the per-round ratio sdx / onnxruntime. orientation_cnn's varying dim is its batch
(1..12 images of 224 x 224).
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo  # noqa: E402
from timing import SETTLE_S, platform_info, write_json  # noqa: E402

# model -> (the inputs whose axis varies, that axis, the range of sizes, step)
VARYING = {
    "minilm_l3_paraphrase": (["input_ids", "attention_mask"], 1, (8, 128), 1),
    "ocr_rec_ppocrv4": (["x"], 3, (64, 640), 8),
    "crnn_lstm_ddddocr": (["input1"], 3, (64, 320), 8),
    "orientation_cnn": (["x"], 0, (1, 12), 1),
}


def sizes_for(model: str, calls: int, seed: int, max_size: int = 0) -> list:
    lo, hi = VARYING[model][2]
    hi = max_size or hi
    step = VARYING[model][3]
    return [int(v) * step for v in np.random.default_rng(seed).integers(lo // step, hi // step + 1, size=calls)]


def feeds_for(m: dict, size: int) -> dict:
    names, axis = VARYING[m["name"]][:2]
    m = dict(m, feeds={k: dict(v) for k, v in m["feeds"].items()})
    for n in names:
        shape = list(m["feeds"][n]["shape"])
        shape[axis] = size
        m["feeds"][n]["shape"] = shape
    return zoo.make_feeds(m, seed=size)


def worker(a) -> int:
    """One engine, one round: prints a JSON line."""
    models = {m["name"]: m for m in zoo.load_zoo()}
    m = models[a.model]
    path = zoo.fetch(m, zoo.default_cache_dir())
    if a.engine == "onnxruntime":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    else:
        import sdx

        so = sdx.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.auto_shape_buckets = not a.exact
        sess = sdx.InferenceSession(path, so)
    sizes = sizes_for(a.model, a.calls, a.seed, a.max_size)
    feeds = [feeds_for(m, s) for s in sizes]
    time.sleep(SETTLE_S)
    took = []
    t0 = time.perf_counter()
    for f in feeds:
        t = time.perf_counter()
        sess.run(None, f)
        took.append(time.perf_counter() - t)
    wall = time.perf_counter() - t0
    rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
    print(json.dumps({"wall_s": wall, "p50_ms": float(np.median(took)) * 1e3, "rss_mb": rss,
                      "distinct_sizes": len(set(sizes))}))
    return 0


def run_worker(engine: str, model: str, seed: int, a, pythonpath: str | None, exact: bool = False) -> dict:
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="0")
    if pythonpath:
        env["PYTHONPATH"] = os.path.abspath(pythonpath)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--engine", engine, "--model", model,
           "--seed", str(seed), "--calls", str(a.calls), "--threads", str(a.threads), "--max-size", str(a.max_size)] + (["--exact"] if exact else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"{engine} on {model} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(VARYING))
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sdx-b", help="PYTHONPATH of a second sdx build to time beside the first")
    ap.add_argument("--max-size", type=int, default=0, help="the varying dim's largest size (default: VARYING's)")
    ap.add_argument("--exact", action="store_true",
                    help="also time sdx with SessionOptions.auto_shape_buckets off (as sdx_exact)")
    ap.add_argument("--json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    engines = [("sdx", None), ("onnxruntime", None)] + ([("sdx_b", a.sdx_b)] if a.sdx_b else []) + \
        ([("sdx_exact", None)] if a.exact else [])
    results = {}
    for model in a.models.split(","):
        if model not in VARYING:
            raise SystemExit(f"--models: {model!r} has no varying dim here (one of {', '.join(VARYING)})")
        rows = []
        for r in range(a.rounds):
            order = engines if r % 2 == 0 else engines[::-1]
            got = {name: run_worker("sdx" if name.startswith("sdx") else name, model, r, a, pp, name == "sdx_exact")
                   for name, pp in order}
            rows.append(got)
            print(f"{model} round {r + 1}: " + ", ".join(f"{n} {v['wall_s']:.3f} s (p50 {v['p50_ms']:.2f} ms, "
                                                          f"{v['rss_mb']} MB)" for n, v in got.items()), flush=True)
        med = {n: statistics.median(x[n]["wall_s"] for x in rows) for n, _ in engines}
        ratio = statistics.median(x["sdx"]["wall_s"] / x["onnxruntime"]["wall_s"] for x in rows)
        line = (f"{model}: {a.calls} calls, {rows[0]['sdx']['distinct_sizes']} distinct sizes in round 1, "
                f"{a.threads} thread(s): " + ", ".join(f"{n} {v:.3f} s" for n, v in med.items()) +
                f"; sdx / onnxruntime {ratio:.2f}x (rounds " +
                ", ".join(f"{x['sdx']['wall_s'] / x['onnxruntime']['wall_s']:.2f}" for x in rows) + ")")
        if a.sdx_b:
            line += "; sdx_b / sdx " + f"{statistics.median(x['sdx_b']['wall_s'] / x['sdx']['wall_s'] for x in rows):.2f}x"
        if a.exact:
            line += "; sdx / sdx_exact " + \
                f"{statistics.median(x['sdx']['wall_s'] / x['sdx_exact']['wall_s'] for x in rows):.2f}x"
        print(line, flush=True)
        results[model] = {"rounds": rows, "median_wall_s": med, "sdx_over_onnxruntime": ratio}
    if a.json:
        write_json(a.json, {"benchmark": "varlen", "calls": a.calls, "threads": a.threads, "models": results,
                            "platform": platform_info()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
