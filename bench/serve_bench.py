"""`sdx serve` under concurrent tritonclient.grpc clients: end-to-end latency (p50, p99) and throughput at
1, 4, 16 and 64 concurrent clients, and the server's own per-request cost (sdx_request_overhead_seconds:
handler time minus queue wait minus the session's run) read from its /metrics histograms.

Two models: `add1` (one Add on a float32 [1, 16], the 1-op model of issue 19's overhead acceptance: at most
30 us p50 server-side at 16 clients) and `mlp` (bench/models.py mlp(): 3 x Gemm+Relu of 256, batch 1).
The server is started on loopback (--port 0, a free metrics port) from a temporary repository, and
stopped at the end. Clients are threads spread over --processes worker processes (Python's GIL would
make one process the bottleneck); each keeps one request in flight at a time for --seconds.

    PYTHONPATH=build/serve/python python3 bench/serve_bench.py --seconds 5
    python3 bench/serve_bench.py --server build/serve/sdx-serve --clients 1,16 --models add1 --json out.json

--batching compares dynamic batching (src/serve/batcher.h) with none, issue 19's acceptance (at least 2x
throughput with batching for 16 concurrent single-row clients on an MLP): the same MLP, with a dynamic batch
dimension, is served twice, as `mlp_nobatch` (no config) and `mlp_batch` (a config.json with max_batch_size
16, preferred size 16 and --batch-delay-us), and each runs at --clients (default 16 here). --mlp-width sets
the MLP's size (3 layers of Gemm+Relu, default 256): batching pays where the run's cost, not the RPC's,
bounds the throughput.

    PYTHONPATH=build/serve/python python3 bench/serve_bench.py --batching --seconds 5

Overhead quantiles are interpolated inside the histogram's fixed buckets (as Prometheus's
histogram_quantile does: 1, 2.5, 5, 10, 25 us, ...), so they are estimates to the bucket's resolution.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def add1_model() -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "add1",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor("c", TensorProto.FLOAT, [16], [1.0] * 16)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def mlp_model() -> onnx.ModelProto:
    from models import mlp  # bench/models.py
    return mlp()


MLP_WIDTH = [256]  # --mlp-width: the batching comparison's MLP width (and input features)


def mlp_dynamic_model() -> onnx.ModelProto:
    from models import mlp  # bench/models.py
    return mlp(width=MLP_WIDTH[0], in_features=MLP_WIDTH[0], batch="N")


MODELS = {"add1": (add1_model, (1, 16)), "mlp": (mlp_model, (1, 256)),
          "mlp_nobatch": (mlp_dynamic_model, (1, MLP_WIDTH)), "mlp_batch": (mlp_dynamic_model, (1, MLP_WIDTH))}


def batch_config(max_batch: int, delay_us: int) -> dict:
    return {"max_batch_size": max_batch,
            "dynamic_batching": {"preferred_batch_size": [max_batch], "max_queue_delay_microseconds": delay_us}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_server(explicit: str | None) -> str:
    if explicit:
        return explicit
    from sdx.serve import find_server as find
    path = find()
    if path is None:
        sys.exit("no sdx-serve: pass --server PATH or put a built sdx package on PYTHONPATH")
    return path


def start_server(exe: str, repo: str, metrics_port: int, concurrency: int, log_path: str):
    log = open(log_path, "w")
    cmd = [exe, "--model-repository", repo, "--port", "0", "--metrics-port", str(metrics_port),
           "--max-queue", "1024"] + (["--model-concurrency", str(concurrency)] if concurrency else [])
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log_path).read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"sdx-serve did not start:\n{open(log_path).read()}")


def scrape(metrics_port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        return r.read().decode()


def buckets(text: str, name: str, model: str) -> list[tuple[float, float]]:
    """[(le, cumulative count)] of one histogram series."""
    out = []
    for m in re.finditer(rf'^{name}_bucket\{{model="{re.escape(model)}",le="([^"]+)"\}} (\S+)$', text, re.M):
        out.append((float(m.group(1)), float(m.group(2))))
    return out


def histogram_quantile(q: float, before, after) -> float | None:
    """The q-quantile of the observations between two scrapes, interpolated linearly inside a bucket."""
    before = before or [(le, 0.0) for le, _ in after]  # the series did not exist yet
    counts = [(le, a - b) for (le, a), (_, b) in zip(after, before)]
    total = counts[-1][1] if counts else 0
    if total <= 0:
        return None
    rank, prev_le, prev_count = q * total, 0.0, 0.0
    for le, count in counts:
        if count >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_count) / max(count - prev_count, 1e-12))
        prev_le, prev_count = le, count
    return counts[-2][0]


def client_worker(port: int, model: str, shape, threads: int, seconds: float, start_at: float, out_q):
    import threading

    import tritonclient.grpc as grpcclient
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    lat: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def loop():
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        inp = grpcclient.InferInput("x", list(shape), "FP32")
        inp.set_data_from_numpy(x)
        client.infer(model, [inp])  # connection and first-call warm-up, not timed
        mine = []
        while time.time() < start_at:
            time.sleep(0.001)
        end = start_at + seconds
        while time.time() < end:
            t0 = time.perf_counter()
            try:
                client.infer(model, [inp])
                mine.append(time.perf_counter() - t0)
            except Exception:
                with lock:
                    errors[0] += 1
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out_q.put((lat, errors[0]))


def run_level(port, metrics_port, model, shape, clients, processes, seconds):
    procs_n = max(1, min(processes, clients))
    per = [clients // procs_n + (1 if i < clients % procs_n else 0) for i in range(procs_n)]
    q = mp.Queue()
    start_at = time.time() + 2.0 + 0.05 * clients  # every client connected and warmed up first
    ps = [mp.Process(target=client_worker, args=(port, model, shape, n, seconds, start_at, q)) for n in per]
    for p in ps:
        p.start()
    time.sleep(max(0.0, start_at - time.time() - 0.02))
    before = scrape(metrics_port)  # after the warm-up calls, as the timed ones begin
    lat, errors = [], 0
    for _ in ps:
        l, e = q.get()
        lat += l
        errors += e
    for p in ps:
        p.join()
    after = scrape(metrics_port)
    lat_us = np.array(lat) * 1e6
    row = {"model": model, "clients": clients, "requests": len(lat), "errors": errors,
           "throughput_rps": len(lat) / seconds,
           "p50_us": float(np.percentile(lat_us, 50)) if len(lat) else None,
           "p99_us": float(np.percentile(lat_us, 99)) if len(lat) else None}
    for name, key in (("sdx_request_overhead_seconds", "overhead"), ("sdx_request_duration_seconds", "handler")):
        b, a = buckets(before, name, model), buckets(after, name, model)
        for qq in (0.5, 0.99):
            v = histogram_quantile(qq, b, a)
            row[f"{key}_p{int(qq * 100)}_us"] = v * 1e6 if v is not None else None
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", help="the sdx-serve executable (default: the sdx package's bin/sdx-serve)")
    ap.add_argument("--clients", default=None, help="concurrency levels (comma-separated; default 1,4,16,64, "
                    "or 16 with --batching)")
    ap.add_argument("--models", default="add1,mlp", help=f"models to run ({', '.join(MODELS)})")
    ap.add_argument("--seconds", type=float, default=5.0, help="measured time per level")
    ap.add_argument("--processes", type=int, default=4, help="client processes (threads are spread over them)")
    ap.add_argument("--model-concurrency", type=int, default=0, help="sdx-serve --model-concurrency (0: default)")
    ap.add_argument("--batching", action="store_true",
                    help="compare dynamic batching with none on the MLP (mlp_batch vs mlp_nobatch)")
    ap.add_argument("--batch-delay-us", type=int, default=1000, help="max_queue_delay_microseconds (--batching)")
    ap.add_argument("--mlp-width", type=int, default=256, help="width of the MLP of --batching (3 layers)")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    MLP_WIDTH[0] = args.mlp_width
    exe = find_server(args.server)
    levels = [int(c) for c in (args.clients or ("16" if args.batching else "1,4,16,64")).split(",")]
    models = ["mlp_nobatch", "mlp_batch"] if args.batching else args.models.split(",")
    with tempfile.TemporaryDirectory() as repo:
        for name in models:
            os.makedirs(os.path.join(repo, name, "1"))
            onnx.save(MODELS[name][0](), os.path.join(repo, name, "1", "model.onnx"))
            if name == "mlp_batch":
                with open(os.path.join(repo, name, "config.json"), "w") as f:
                    json.dump(batch_config(max(levels), args.batch_delay_us), f)
        metrics_port = free_port()
        proc, port = start_server(exe, repo, metrics_port, args.model_concurrency, os.path.join(repo, "server.log"))
        rows = []
        try:
            print(f"sdx-serve {exe} on 127.0.0.1:{port}, {os.cpu_count()} CPUs, {args.seconds:g} s per level")
            print(f"{'model':11} {'clients':>7} {'req/s':>9} {'p50 us':>9} {'p99 us':>9} {'ovh p50':>8} "
                  f"{'ovh p99':>8} {'hdl p50':>8} {'errors':>6}")
            for name in models:
                for n in levels:
                    shape = tuple(d[0] if isinstance(d, list) else d for d in MODELS[name][1])  # MLP_WIDTH, as set
                    r = run_level(port, metrics_port, name, shape, n, args.processes, args.seconds)
                    rows.append(r)
                    fmt = lambda v: f"{v:9.1f}" if v is not None else "        -"  # noqa: E731
                    print(f"{name:11} {n:7d} {r['throughput_rps']:9.0f} {fmt(r['p50_us'])} {fmt(r['p99_us'])} "
                          f"{fmt(r['overhead_p50_us'])[1:]} {fmt(r['overhead_p99_us'])[1:]} "
                          f"{fmt(r['handler_p50_us'])[1:]} {r['errors']:6d}", flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    add16 = [r for r in rows if r["model"] == "add1" and r["clients"] == 16]
    if add16 and add16[0]["overhead_p50_us"] is not None:
        v = add16[0]["overhead_p50_us"]
        print(f"issue 19 overhead acceptance (add1, 16 clients, server-side p50 <= 30 us): {v:.1f} us "
              f"({'met' if v <= 30 else 'not met'})")
    for n in levels:
        pair = {r["model"]: r["throughput_rps"] for r in rows if r["clients"] == n}
        if "mlp_batch" in pair and "mlp_nobatch" in pair and pair["mlp_nobatch"] > 0:
            ratio = pair["mlp_batch"] / pair["mlp_nobatch"]
            print(f"dynamic batching, mlp, {n} clients: {pair['mlp_batch']:.0f} req/s with batching, "
                  f"{pair['mlp_nobatch']:.0f} req/s without: {ratio:.2f}x (issue 19 acceptance at 16 clients: "
                  f">= 2x, {'met' if ratio >= 2 else 'not met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "seconds": args.seconds, "cpus": os.cpu_count()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
