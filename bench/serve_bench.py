"""`sdx serve` under concurrent clients: end-to-end latency (p50, p99) and throughput at 1, 4, 16 and 64
concurrent clients, the server's whole server-side time per request and that time minus the session's run
(sdx_server_request_seconds and sdx_server_overhead_seconds, from a gRPC server interceptor:
src/serve/request_timing.h), and the CPU time the server and the clients spent per request.

What the server-side time includes: gRPC's call setup on its worker thread, protobuf parsing of the
request, admission, queueing, the handler, and serialization of the response (the interceptor serializes
it), up to handing it to the transport. It excludes HTTP/2 framing and socket reads before gRPC hands the
call to a worker, the wait for a free worker, and the transport's write of the response (reported apart
as "send": handed to the transport until gRPC finished the call). The older "handler" overhead
(sdx_request_overhead_seconds: handler time minus queue wait minus run) is kept for comparison.

Two models: `add1` (one Add on a float32 [1, 16], the 1-op model of issue 19's overhead acceptance: at most
30 us p50 server-side at 16 clients) and `mlp` (bench/models.py mlp(): 3 x Gemm+Relu of 256, batch 1).
The server is started on loopback (--port 0, a free metrics port) from a temporary repository, and
stopped at the end. Load (--load): `cpp` is bench/serve_load.cc (ninja -C build/dev sdx_serve_load), one
thread keeping one request in flight per client over its own connection, cheap on CPU; `python` is
tritonclient.grpc threads spread over --processes worker processes, as a real Python client would be, and
on a 2-core machine the clients are then the bottleneck.

    PYTHONPATH=build/dev/python python3 bench/serve_bench.py --seconds 5
    python3 bench/serve_bench.py --server build/dev/sdx-serve --clients 1,16 --models add1 --json out.json

--batching compares dynamic batching (src/serve/batcher.h) with none, issue 19's acceptance (at least 2x
throughput with batching for 16 concurrent single-row clients on an MLP): the same MLP, with a dynamic batch
dimension, is served twice, as `mlp_nobatch` (no config) and `mlp_batch` (a config.json with max_batch_size
= the clients, preferred sizes --preferred (default: the clients), padded to them unless --no-pad, and
--batch-delay-us, default 5 ms), in --rounds paired rounds (the order alternates), at --clients (default 16
here). --mlp-width and --mlp-layers set the MLP (layers of Gemm+Relu, then a Gemm+Sigmoid head).

    PYTHONPATH=build/dev/python python3 bench/serve_bench.py --batching --mlp-width 1024 --rounds 5

Server-side quantiles are interpolated inside the histograms' fixed buckets (as Prometheus's
histogram_quantile does; 5 us wide up to 50 us for the server-side series), so they are estimates to the
bucket's resolution.
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
MLP_LAYERS = [3]   # --mlp-layers


def mlp_dynamic_model() -> onnx.ModelProto:
    from models import mlp  # bench/models.py
    return mlp(layers=MLP_LAYERS[0], width=MLP_WIDTH[0], in_features=MLP_WIDTH[0], batch="N")


MODELS = {"add1": (add1_model, (1, 16)), "mlp": (mlp_model, (1, 256)),
          "mlp_nobatch": (mlp_dynamic_model, (1, MLP_WIDTH)), "mlp_batch": (mlp_dynamic_model, (1, MLP_WIDTH))}


def batch_config(max_batch: int, preferred: list[int], delay_us: int, pad: bool) -> dict:
    return {"max_batch_size": max_batch,
            "dynamic_batching": {"preferred_batch_size": preferred, "max_queue_delay_microseconds": delay_us,
                                 "pad_to_preferred_batch_size": pad}}


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


def start_server(exe: str, repo: str, metrics_port: int, concurrency: int, log_path: str, env=None):
    log = open(log_path, "w")
    cmd = [exe, "--model-repository", repo, "--port", "0", "--metrics-port", str(metrics_port),
           "--max-queue", "1024"] + (["--model-concurrency", str(concurrency)] if concurrency else [])
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, **(env or {})))
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


def find_load(explicit: str | None, server: str) -> str:
    """bench/serve_load.cc's executable: --load-exe, or sdx_serve_load in the build folder of the server."""
    if explicit:
        return explicit
    d = os.path.dirname(os.path.abspath(server))
    for cand in (d, os.path.join(d, "..", "..", ".."), os.path.join(d, "..", "..")):
        path = os.path.join(cand, "sdx_serve_load")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    sys.exit("no sdx_serve_load next to the server: ninja -C build/dev sdx_serve_load, pass --load-exe, "
             "or use --load python")


def process_cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process and its threads, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    import resource
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
    while time.time() < start_at:
        time.sleep(0.001)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for t in ts:
        t.join()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    out_q.put((lat, errors[0], cpu))


def python_load(port, model, shape, clients, processes, seconds, on_start):
    """tritonclient.grpc threads over worker processes: (latencies, errors, client CPU seconds)."""
    procs_n = max(1, min(processes, clients))
    per = [clients // procs_n + (1 if i < clients % procs_n else 0) for i in range(procs_n)]
    q = mp.Queue()
    start_at = time.time() + 2.0 + 0.05 * clients  # every client connected and warmed up first
    ps = [mp.Process(target=client_worker, args=(port, model, shape, n, seconds, start_at, q)) for n in per]
    for p in ps:
        p.start()
    time.sleep(max(0.0, start_at - time.time() - 0.02))
    on_start()
    lat, errors, cpu = [], 0, 0.0
    for _ in ps:
        l, e, c = q.get()
        lat += l
        errors += e
        cpu += c
    for p in ps:
        p.join()
    return lat, errors, cpu


def cpp_load(exe, port, model, shape, clients, seconds, on_start):
    """bench/serve_load.cc: (its JSON row, client CPU seconds). on_start runs at the end of its warm-up."""
    warmup = 1.0
    cmd = [exe, "--target", f"127.0.0.1:{port}", "--model", model, "--input", "x",
           "--shape", ",".join(str(d) for d in shape), "--clients", str(clients), "--seconds", str(seconds),
           "--warmup", str(warmup)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(warmup)
    on_start()
    out, err = proc.communicate(timeout=seconds + warmup + 120)
    if proc.returncode not in (0, 1) or not out.strip():
        sys.exit(f"sdx_serve_load failed ({proc.returncode}): {err}{out}")
    return json.loads(out)


def run_level(port, metrics_port, model, shape, clients, args, server_pid):
    marks = {}

    def on_start():  # as the timed requests begin
        marks["before"] = scrape(metrics_port)
        marks["cpu"] = process_cpu_seconds(server_pid)

    if args.load == "cpp":
        j = cpp_load(args.load_exe, port, model, shape, clients, args.seconds, on_start)
        n, errors, client_cpu = j["requests"], j["errors"], j["client_cpu_s"]
        p50, p99 = j["p50_us"], j["p99_us"]
    else:
        lat, errors, client_cpu = python_load(port, model, shape, clients, args.processes, args.seconds, on_start)
        n = len(lat)
        lat_us = np.array(lat) * 1e6
        p50 = float(np.percentile(lat_us, 50)) if n else None
        p99 = float(np.percentile(lat_us, 99)) if n else None
    server_cpu = process_cpu_seconds(server_pid) - marks["cpu"]
    after = scrape(metrics_port)
    before = marks["before"]
    row = {"model": model, "clients": clients, "load": args.load, "requests": n, "errors": errors,
           "throughput_rps": n / args.seconds, "p50_us": p50, "p99_us": p99,
           # The server's CPU counts what it did in the whole window (a cpp run's tail included): per request,
           # an estimate.
           "server_cpu_us_per_req": server_cpu / n * 1e6 if n else None,
           "client_cpu_us_per_req": client_cpu / n * 1e6 if n else None}
    for name, key in (("sdx_server_request_seconds", "server"), ("sdx_server_overhead_seconds", "server_minus_run"),
                      ("sdx_server_send_seconds", "send"), ("sdx_request_overhead_seconds", "handler_overhead"),
                      ("sdx_request_duration_seconds", "handler")):
        b, a = buckets(before, name, model), buckets(after, name, model)
        for qq in (0.5, 0.99):
            v = histogram_quantile(qq, b, a)
            row[f"{key}_p{int(qq * 100)}_us"] = v * 1e6 if v is not None else None
    bs, ba = buckets(before, "sdx_batch_size", model), buckets(after, "sdx_batch_size", model)
    if ba and ba[-1][1] - (bs[-1][1] if bs else 0) > 0:
        rows = re.search(rf'^sdx_batch_size_sum\{{model="{model}"\}} (\S+)$', after, re.M)
        rows0 = re.search(rf'^sdx_batch_size_sum\{{model="{model}"\}} (\S+)$', before, re.M)
        row["mean_batch_rows"] = (float(rows.group(1)) - (float(rows0.group(1)) if rows0 else 0)) / (
            ba[-1][1] - (bs[-1][1] if bs else 0))
    return row


FMT = lambda v, w=8: f"{v:{w}.1f}" if v is not None else " " * (w - 1) + "-"  # noqa: E731


def print_header():
    print(f"{'model':11} {'clients':>7} {'req/s':>8} {'p50 us':>8} {'p99 us':>8} {'srv p50':>8} {'s-run50':>8} "
          f"{'s-run99':>8} {'send50':>8} {'hdl-ovh':>8} {'srvCPU':>7} {'cliCPU':>7} {'batch':>5} {'err':>4}")


def print_row(r):
    print(f"{r['model']:11} {r['clients']:7d} {r['throughput_rps']:8.0f} {FMT(r['p50_us'])} {FMT(r['p99_us'])} "
          f"{FMT(r['server_p50_us'])} {FMT(r['server_minus_run_p50_us'])} {FMT(r['server_minus_run_p99_us'])} "
          f"{FMT(r['send_p50_us'])} {FMT(r['handler_overhead_p50_us'])} {FMT(r['server_cpu_us_per_req'], 7)} "
          f"{FMT(r['client_cpu_us_per_req'], 7)} {FMT(r.get('mean_batch_rows'), 5)} {r['errors']:4d}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", help="the sdx-serve executable (default: the sdx package's bin/sdx-serve)")
    ap.add_argument("--load", choices=("cpp", "python"), default="cpp",
                    help="load generator: cpp (bench/serve_load.cc) or python (tritonclient.grpc threads)")
    ap.add_argument("--load-exe", help="sdx_serve_load (default: beside the server in its build folder)")
    ap.add_argument("--clients", default=None, help="concurrency levels (comma-separated; default 1,4,16,64, "
                    "or 16 with --batching)")
    ap.add_argument("--models", default="add1,mlp", help=f"models to run ({', '.join(MODELS)})")
    ap.add_argument("--seconds", type=float, default=5.0, help="measured time per level")
    ap.add_argument("--processes", type=int, default=4, help="client processes of --load python")
    ap.add_argument("--model-concurrency", type=int, default=0, help="sdx-serve --model-concurrency (0: default)")
    ap.add_argument("--batching", action="store_true",
                    help="compare dynamic batching with none on the MLP (mlp_batch vs mlp_nobatch)")
    ap.add_argument("--batch-delay-us", type=int, default=5000, help="max_queue_delay_microseconds (--batching)")
    ap.add_argument("--preferred", default=None,
                    help="preferred batch sizes, comma-separated (--batching; default: the clients, so every batch "
                         "is padded to one size)")
    ap.add_argument("--no-pad", action="store_true", help="--batching without pad_to_preferred_batch_size")
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds of --batching")
    ap.add_argument("--mlp-width", type=int, default=1024, help="width of the MLP of --batching")
    ap.add_argument("--mlp-layers", type=int, default=3, help="Gemm+Relu layers of the MLP of --batching")
    ap.add_argument("--intra-op-threads", type=int, default=None,
                    help="the server's SDX_INTRA_OP_THREADS (default: unset, sdx's default of the physical cores)")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    MLP_WIDTH[0] = args.mlp_width
    MLP_LAYERS[0] = args.mlp_layers
    exe = find_server(args.server)
    if args.load == "cpp":
        args.load_exe = find_load(args.load_exe, exe)
    levels = [int(c) for c in (args.clients or ("16" if args.batching else "1,4,16,64")).split(",")]
    models = ["mlp_nobatch", "mlp_batch"] if args.batching else args.models.split(",")
    max_batch = max(levels)
    preferred = [int(p) for p in args.preferred.split(",")] if args.preferred else [max_batch]
    with tempfile.TemporaryDirectory() as repo:
        for name in models:
            os.makedirs(os.path.join(repo, name, "1"))
            onnx.save(MODELS[name][0](), os.path.join(repo, name, "1", "model.onnx"))
            if name == "mlp_batch":
                with open(os.path.join(repo, name, "config.json"), "w") as f:
                    json.dump(batch_config(max_batch, preferred, args.batch_delay_us, not args.no_pad), f)
        metrics_port = free_port()
        env = {"SDX_INTRA_OP_THREADS": str(args.intra_op_threads)} if args.intra_op_threads is not None else {}
        proc, port = start_server(exe, repo, metrics_port, args.model_concurrency, os.path.join(repo, "server.log"),
                                  env)
        rows = []
        try:
            batching = (f", MLP {args.mlp_layers} x {args.mlp_width}, preferred {preferred}, pad {not args.no_pad}, "
                        f"delay {args.batch_delay_us} us") if args.batching else ""
            print(f"sdx-serve {exe} on 127.0.0.1:{port}, {os.cpu_count()} CPUs, {args.seconds:g} s per level, "
                  f"load {args.load}, SDX_INTRA_OP_THREADS {args.intra_op_threads or 'unset'}{batching}")
            print_header()
            rounds = args.rounds if args.batching else 1
            for rnd in range(rounds):
                order = models if rnd % 2 == 0 else models[::-1]
                for name in order:
                    for n in levels:
                        shape = tuple(d[0] if isinstance(d, list) else d for d in MODELS[name][1])  # as set
                        r = run_level(port, metrics_port, name, shape, n, args, proc.pid)
                        r["round"] = rnd
                        rows.append(r)
                        print_row(r)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    add16 = [r for r in rows if r["model"] == "add1" and r["clients"] == 16]
    if add16 and add16[0]["server_minus_run_p50_us"] is not None:
        v = add16[0]["server_minus_run_p50_us"]
        print(f"issue 19 overhead acceptance (add1, 16 clients, server-side time minus the run, p50 <= 30 us): "
              f"{v:.1f} us ({'met' if v <= 30 else 'not met'})")
    for n in levels:
        ratios = []
        for rnd in range(args.rounds if args.batching else 1):
            pair = {r["model"]: r["throughput_rps"] for r in rows if r["clients"] == n and r.get("round") == rnd}
            if "mlp_batch" in pair and pair.get("mlp_nobatch"):
                ratios.append(pair["mlp_batch"] / pair["mlp_nobatch"])
        if ratios:
            med = float(np.median(ratios))
            print(f"dynamic batching, MLP {args.mlp_layers} x {args.mlp_width}, {n} clients: batched/unbatched "
                  f"throughput per round {', '.join(f'{x:.2f}' for x in ratios)}; median {med:.2f}x "
                  f"(issue 19 acceptance at 16 clients: >= 2x, {'met' if med >= 2 else 'not met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "seconds": args.seconds, "cpus": os.cpu_count(), "args": vars(args)}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
