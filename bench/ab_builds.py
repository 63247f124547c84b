"""Two builds of sdx (or one build with two option sets) on one model, in paired rounds: "is this build faster
than that one", measured the way the other benchmarks compare engines.

    python3 bench/ab_builds.py MODEL.onnx --a build/wheel/python --b /path/to/old/build/wheel/python \\
        [--feeds FEEDS.npz] [--a-opt subgraph_plans=0] [--b-opt ...] [--threads 1] [--rounds 15] [--block-ms 200]

Each side is a worker process of its own (the two builds' modules never share a process) that loads the
model once, with its PYTHONPATH and its SessionOptions (--a-opt / --b-opt NAME=VALUE, repeatable; 0/1 for
booleans, comma-separated lists), then times blocks of calls on request. A round asks both for one block,
in alternating order, each after timing.SETTLE_S of idle time; the per-round ratio is p50(a) / p50(b).
Outputs are compared first (max abs difference printed). Feeds: the arrays of an .npz file, or seeded
random values for the model's inputs (symbolic dims 1). Prints the p50 of each side over all rounds and the
median and quartiles of the per-round ratios; --json writes them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import SETTLE_S, write_json  # noqa: E402

WORKER = r"""
import json, sys, time
import numpy as np
import sdx
args = json.loads(sys.argv[1])
o = sdx.SessionOptions()
o.intra_op_num_threads = args["threads"]
for k, v in args["opts"].items():
    cur = getattr(o, k)
    if isinstance(cur, bool):
        v = v not in ("0", "false", "False")
    elif isinstance(cur, list):
        v = [x for x in v.split(",") if x]
    else:
        v = type(cur)(v)
    setattr(o, k, v)
sess = sdx.InferenceSession(args["model"], o)
if args["feeds"]:
    feeds = dict(np.load(args["feeds"]))
else:
    rng = np.random.default_rng(0)
    feeds = {}
    for a in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in a.shape]
        dt = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_}[a.type]
        feeds[a.name] = rng.standard_normal(shape).astype(dt) if dt == np.float32 else np.ones(shape, dt)
outs = sess.run(None, feeds)
np.savez(args["out"], *outs)
print(json.dumps({"ready": True}), flush=True)
clock = time.perf_counter_ns
for line in sys.stdin:
    calls = int(line)
    time.sleep(args["settle"])
    ts = []
    for _ in range(calls):
        t0 = clock()
        sess.run(None, feeds)
        ts.append(clock() - t0)
    print(json.dumps(ts), flush=True)
"""


class Worker:
    def __init__(self, pythonpath: str, model: str, feeds: str | None, opts: dict, threads: int, out: str) -> None:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(pythonpath), SDX_DISK_PLAN_CACHE="0")
        args = {"model": model, "feeds": feeds, "opts": opts, "threads": threads, "out": out, "settle": SETTLE_S}
        self.p = subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(args)], env=env, cwd="/",
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if "ready" not in self.p.stdout.readline():
            raise SystemExit(f"worker for {pythonpath} failed to start")

    def block(self, calls: int) -> list:
        self.p.stdin.write(f"{calls}\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def parse_opts(items: list) -> dict:
    out = {}
    for item in items or []:
        name, _, value = item.partition("=")
        out[name] = value
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--a", required=True, metavar="PYTHONPATH")
    ap.add_argument("--b", required=True, metavar="PYTHONPATH")
    ap.add_argument("--a-opt", action="append", metavar="NAME=VALUE")
    ap.add_argument("--b-opt", action="append", metavar="NAME=VALUE")
    ap.add_argument("--feeds", metavar="NPZ")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--block-ms", type=float, default=200.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    model = os.path.abspath(a.model)
    feeds = os.path.abspath(a.feeds) if a.feeds else None
    wa = Worker(a.a, model, feeds, parse_opts(a.a_opt), a.threads, "/tmp/ab_builds_a.npz")
    wb = Worker(a.b, model, feeds, parse_opts(a.b_opt), a.threads, "/tmp/ab_builds_b.npz")
    oa, ob = np.load("/tmp/ab_builds_a.npz"), np.load("/tmp/ab_builds_b.npz")
    diff = max(float(np.max(np.abs(oa[k].astype(np.float64) - ob[k].astype(np.float64)))) for k in oa.files)
    probe = max(statistics.median(wa.block(20)), statistics.median(wb.block(20)))
    calls = max(1, min(2000, int(a.block_ms * 1e6 / probe)))
    pa, pb, ratios = [], [], []
    for r in range(a.rounds):
        if r % 2 == 0:
            ta, tb = wa.block(calls), wb.block(calls)
        else:
            tb, ta = wb.block(calls), wa.block(calls)
        ma, mb = statistics.median(ta), statistics.median(tb)
        pa.append(ma)
        pb.append(mb)
        ratios.append(ma / mb)
    wa.close()
    wb.close()
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    row = {"model": os.path.basename(model), "a": a.a, "b": a.b, "a_opts": parse_opts(a.a_opt),
           "b_opts": parse_opts(a.b_opt), "threads": a.threads, "rounds": a.rounds, "calls_per_block": calls,
           "a_p50_us": statistics.median(pa) / 1e3, "b_p50_us": statistics.median(pb) / 1e3,
           "ratio_median": statistics.median(ratios), "ratio_q1": q[0], "ratio_q3": q[2], "max_abs_diff": diff}
    print(f"{row['model']}, {a.threads} thread(s), {a.rounds} paired rounds of {calls} calls; outputs differ by "
          f"at most {diff:.3g}")
    print(f"  a ({a.a} {row['a_opts'] or ''}): p50 {row['a_p50_us']:.1f} us")
    print(f"  b ({a.b} {row['b_opts'] or ''}): p50 {row['b_p50_us']:.1f} us")
    print(f"  a / b: median {row['ratio_median']:.3f} (quartiles {row['ratio_q1']:.3f} .. {row['ratio_q3']:.3f}); "
          f"b / a = {1 / row['ratio_median']:.2f}x")
    if a.json:
        write_json(a.json, {"benchmark": "ab_builds", "results": [row]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
