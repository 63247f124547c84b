"""`sdx serve` under faults, with nothing lost or leaked (issue 19, "Faults"):

- a client process killed mid-session: its session and refs are freed by the server within the lease + 1 s
  (sdx_sessions_open, sdx_remote_refs, sdx_remote_ref_bytes back to their baseline), and the server's RSS
  does not keep the refs' bytes, cycle after cycle;
- SIGTERM during load: every request either answers with the right outputs (bitwise equal to the in-process
  sdx.InferenceSession) or fails with UNAVAILABLE or CANCELLED; none is half-answered, none hangs; every
  request the server ran is answered to its client; the server exits 0;
- a bounded soak: SDX_SOAK_REQUESTS requests (default 20000 in CI, a few seconds) of tritonclient ModelInfer, with sdx.v1
  sessions, refs and Fetch mixed in: the server's VmRSS after warmup and at the end within 5%, its open fd
  count not growing.

The issue's 200k-request soak runs standalone, with its figures printed:

    PYTHONPATH=build/serve/python python3 tests/python/test_serve_faults.py --soak 200000

The server is `python -m sdx serve`, which execs sdx-serve: the Popen's pid is the server's, so
/proc/PID/status and /proc/PID/fd are the server's own."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from test_serve import grpcclient, start_server, stop_server, write_model  # noqa: F401 (skips without tritonclient)
from test_serve_admission import free_port, sample, scrape
from tritonclient.utils import InferenceServerException

import sdx  # noqa: E402
from sdx.serve import find_server  # noqa: E402

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

REF_SIDE = 1024  # a kept ref of big_model is REF_SIDE x REF_SIDE floats: 4 MiB


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def big_model():
    """x [1, 1] -> Expand to [REF_SIDE, REF_SIDE]: a 4-byte request whose output is 4 MiB (a large ref)."""
    g = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["y"])], "big",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [REF_SIDE, REF_SIDE])],
                          [helper.make_tensor("shape", TensorProto.INT64, [2], [REF_SIDE, REF_SIDE])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def busy_model(steps: int = 4, n: int = 512):
    """x [1, 64] -> x + sum(m^(steps+1)), m all 1/n (n x n): each row sums to exactly n, so y = x + n exactly,
    after `steps` n x n MatMuls (milliseconds of work). The output depends on the request: a mixed-up or
    half-written answer shows."""
    nodes = [helper.make_node("Expand", ["fill", "shape"], ["m"])]
    prev = "m"
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [prev, "m"], [f"p{i}"]))
        prev = f"p{i}"
    nodes += [helper.make_node("ReduceSum", [prev], ["s"], keepdims=0),
              helper.make_node("Add", ["x", "s"], ["y"])]
    g = helper.make_graph(nodes, "busy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor("fill", TensorProto.FLOAT, [1, 1], [1.0 / n]),
                           helper.make_tensor("shape", TensorProto.INT64, [2], [n, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def add_model():
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["sum"])], "add",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 16]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["N", 16])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def wait_ready(port: int, log_path, timeout_s: float = 60) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    deadline = time.time() + timeout_s
    while not client.is_server_ready():
        assert time.time() < deadline, open(log_path).read()
        time.sleep(0.05)
    client.close()


def launch(root, log_path, *extra):
    """(proc, port, metrics_port) of a ready sdx serve on root."""
    metrics_port = free_port()
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), *extra)
    try:
        wait_ready(port, log_path)
    except BaseException:
        stop_server(proc)
        raise
    return proc, port, metrics_port


# ---------------------------------------------------------------------------------------------------------
# A client killed mid-session

# The child: one sdx.remote Connection with a short lease, `refs` outputs of big_model kept on the server,
# then "ready <session id>" on stdout, and it waits to be killed (its heartbeat thread keeps the lease).
CHILD = r"""
import sys, time
import numpy as np
import sdx.remote
address, model_path, refs, lease_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
conn = sdx.remote.Connection(address, lease_s=lease_s)
sess = sdx.remote.InferenceSession(conn, model_path)
kept = [sess.run(["y"], {"x": np.full((1, 1), i, np.float32)}, keep_on_server=True)[0] for i in range(refs)]
print("ready", conn.session_id, flush=True)
while True:
    time.sleep(60)
"""


def remote_gauges(metrics_port):
    text = scrape(metrics_port)
    return tuple(sample(text, name) for name in ("sdx_sessions_open", "sdx_remote_refs", "sdx_remote_ref_bytes"))


def test_killed_client_frees_its_session_refs_and_memory(tmp_path, monkeypatch):
    pytest.importorskip("sdx._proto.remote_pb2_grpc", reason="sdx built without grpcio-tools: no sdx.v1 stubs")
    root = tmp_path / "models"
    root.mkdir()  # empty: the child registers big_model by fingerprint
    model_path = tmp_path / "big.onnx"
    model_path.write_bytes(big_model().SerializeToString())
    # glibc raises its mmap threshold the first time a large mmapped chunk is freed, and from then on keeps
    # freed chunks of that size in its arenas: RSS would stay up though the server freed the refs. The server
    # calls malloc_trim(0) once a session's refs are freed (src/serve/memory_trimmer.h), so RSS shows what it
    # holds without MALLOC_MMAP_THRESHOLD_ (made sure it is unset here: an outer setting would hide a regression).
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    proc, port, metrics_port = launch(root, tmp_path / "server.log")
    lease_s, refs = 1.0, 8
    ref_bytes = refs * REF_SIDE * REF_SIDE * 4  # 32 MiB held by each child
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        baseline = remote_gauges(metrics_port)
        assert baseline == (0, 0, 0)
        rss_after, rss_held = [], []
        for cycle in range(4):  # cycle 0 warms the server's allocator; 1..3 would each add 32 MiB if leaked
            child = subprocess.Popen([sys.executable, "-c", CHILD, f"127.0.0.1:{port}", str(model_path), str(refs),
                                      str(lease_s)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
            try:
                line = child.stdout.readline()
                assert line.startswith("ready "), (line, child.stderr.read() if child.poll() is not None else "")
                held = remote_gauges(metrics_port)
                assert held == (1, refs, ref_bytes), held
                rss_held.append(rss_bytes(proc.pid))
                time.sleep(1.5 * lease_s)  # past one lease: the child's heartbeats keep the session alive
                assert remote_gauges(metrics_port) == held
            finally:
                trims_before = sample(scrape(metrics_port), "sdx_malloc_trim_seconds_count")
                child.send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                child.wait()
            while remote_gauges(metrics_port) != baseline:
                assert time.monotonic() - killed_at <= lease_s + 1.0, \
                    f"cycle {cycle}: not freed within lease + 1 s: {remote_gauges(metrics_port)}"
                time.sleep(0.02)
            freed_after = time.monotonic() - killed_at
            # The trim runs on the server's trimmer thread just after the refs are freed: RSS is read once it
            # has (the same lease + 1 s bound).
            while sample(scrape(metrics_port), "sdx_malloc_trim_seconds_count") <= trims_before:
                assert time.monotonic() - killed_at <= lease_s + 1.0, f"cycle {cycle}: no malloc_trim after the free"
                time.sleep(0.005)
            rss_after.append(rss_bytes(proc.pid))
            print(f"cycle {cycle}: freed {freed_after:.2f} s after SIGKILL; RSS held {rss_held[-1] >> 20} MiB, "
                  f"after {rss_after[-1] >> 20} MiB")
        final = scrape(metrics_port)
        assert sample(final, "sdx_lease_expiries_total") == 4
        trims, trim_s = sample(final, "sdx_malloc_trim_seconds_count"), sample(final, "sdx_malloc_trim_seconds_sum")
        print(f"malloc_trim: {trims:.0f} calls, mean {1e3 * trim_s / max(trims, 1):.3f} ms")
        # RSS sees the refs (it drops by most of their 32 MiB when a cycle's session is freed) and does not keep
        # them: after the warm-up cycle (which loads the model), RSS once freed stays within half the refs' bytes
        # of cycle 0's. Kept refs would add their 32 MiB each cycle; the slack is for the allocator's and gRPC's
        # own buffers (CI saw 12 MiB of those once, under load, left over from cycle 0 and gone by cycle 1: the
        # drop is measured within each cycle so that such leftovers cannot hide the refs).
        for cycle in range(1, len(rss_after)):
            assert rss_held[cycle] - rss_after[cycle] >= 0.75 * ref_bytes, (cycle, rss_held, rss_after)
            assert rss_after[cycle] - rss_after[0] < ref_bytes // 2, \
                f"cycle {cycle}: RSS {rss_after[cycle] >> 20} MiB vs {rss_after[0] >> 20} MiB after cycle 0: " \
                "the refs' bytes stay"
    finally:
        assert stop_server(proc) == 0


# ---------------------------------------------------------------------------------------------------------
# SIGTERM during load

def status_name(e: InferenceServerException) -> str:
    return (e.status() or "").replace("StatusCode.", "")


def test_sigterm_during_load_answers_every_request_and_exits_0(tmp_path):
    root = tmp_path / "models"
    write_model(root, "busy", 1, busy_model())
    log_path = tmp_path / "server.log"
    proc, port, _ = launch(root, log_path, "--log-requests")
    local = sdx.InferenceSession(busy_model().SerializeToString())
    clients, stop_after_s = 24, 0.5
    results: list[list[tuple]] = [[] for _ in range(clients)]
    go = threading.Event()

    def worker(k: int) -> None:
        rng = np.random.default_rng(k)
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        go.wait()
        try:
            for i in range(100000):
                x = rng.standard_normal((1, 64)).astype(np.float32)
                inp = grpcclient.InferInput("x", [1, 64], "FP32")
                inp.set_data_from_numpy(x)
                try:
                    r = client.infer("busy", [inp], request_id=f"c{k}-{i}", client_timeout=60)
                except InferenceServerException as e:
                    results[k].append(("error", status_name(e), str(e)))
                    return  # the server is going: this client is done
                y = r.as_numpy("y")
                want = local.run(["y"], {"x": x})[0]
                results[k].append(("ok", y is not None and y.tobytes() == want.tobytes(), f"c{k}-{i}"))
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    go.set()
    # Under way first: every client answered at least once (on a loaded machine that takes a while), then
    # SIGTERM while their next requests are in flight.
    deadline = time.time() + 60
    while not all(results) and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(stop_after_s)
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=45)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"sdx serve did not exit after SIGTERM:\n{log_path.read_text()[-3000:]}")
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a request hangs after SIGTERM"
    assert code == 0, log_path.read_text()[-3000:]

    flat = [r for rs in results for r in rs]
    ok = [r for r in flat if r[0] == "ok"]
    errors = [r for r in flat if r[0] == "error"]
    assert all(r[1] for r in ok), "a request was answered with wrong outputs"
    assert all(any(r[0] == "ok" for r in rs) for rs in results), "a client never got going before SIGTERM"
    assert {r[1] for r in errors} <= {"UNAVAILABLE", "CANCELLED"}, errors
    # Every request the server ran to completion reached its client: its id is among the answered ones.
    log = log_path.read_text()
    served = {line.split(" id=")[1].split()[0] for line in log.splitlines()
              if line.startswith("sdx-serve: request") and " status=OK " in line}
    answered = {r[2] for r in ok}
    assert served == answered, (f"run but not answered: {sorted(served - answered)[:5]}; "
                                f"answered but not logged: {sorted(answered - served)[:5]}")
    print(f"SIGTERM during load: {len(ok)} answered right, {len(errors)} refused "
          f"({sorted({r[1] for r in errors})}), exit {code}")


# ---------------------------------------------------------------------------------------------------------
# A bounded soak

def soak(total: int, clients: int = 8, warmup: int | None = None, log_dir: str | None = None) -> dict:
    """Runs `total` requests against a fresh server (clients threads; every 50th a sdx.v1 session that keeps
    a ref, fetches it and closes) and returns the server's RSS and fd counts after warmup and at the end."""
    warmup = warmup if warmup is not None else max(1000, total // 10)
    with tempfile.TemporaryDirectory(dir=log_dir) as tmp:
        root = Path(tmp) / "models"
        write_model(root, "add", 1, add_model())
        log_path = Path(tmp) / "server.log"
        proc, port, metrics_port = launch(root, log_path)
        try:
            try:
                from sdx._proto import remote_pb2 as pb
                from sdx._proto import remote_pb2_grpc as pb_grpc
                import grpc
            except ImportError:
                pb = None
            counter = {"next": 0, "bad": 0, "errors": []}
            lock = threading.Lock()
            # Measured when every client has finished a phase and waits: nothing in flight.
            phase_done = threading.Barrier(clients, action=lambda: measures.append(
                (rss_bytes(proc.pid), fd_count(proc.pid), time.monotonic())))
            marks = [warmup, total]
            measures = []
            fp = None
            if pb is not None:
                import hashlib
                data = add_model().SerializeToString()
                fp = "sha256:" + hashlib.sha256(data).hexdigest()
                with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
                    pb_grpc.RemoteServiceStub(ch).RegisterModel(iter([pb.ModelChunk(data=data)]), timeout=60)

            def take(limit):
                with lock:
                    if counter["next"] >= limit:
                        return None
                    counter["next"] += 1
                    return counter["next"]

            def worker(k):
                rng = np.random.default_rng(k)
                client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
                channel = grpc.insecure_channel(f"127.0.0.1:{port}") if pb is not None else None
                stub = pb_grpc.RemoteServiceStub(channel) if pb is not None else None
                try:
                    for limit in marks:
                        while (i := take(limit)) is not None:
                            a = rng.standard_normal((2, 16)).astype(np.float32)
                            b = rng.standard_normal((2, 16)).astype(np.float32)
                            try:
                                if stub is not None and i % 50 == 0:
                                    got = remote_round(pb, stub, fp, a, b)
                                else:
                                    ins = []
                                    for name, v in (("a", a), ("b", b)):
                                        inp = grpcclient.InferInput(name, [2, 16], "FP32")
                                        inp.set_data_from_numpy(v)
                                        ins.append(inp)
                                    got = client.infer("add", ins, client_timeout=60).as_numpy("sum")
                                if got.tobytes() != (a + b).tobytes():
                                    with lock:
                                        counter["bad"] += 1
                            except Exception as e:  # noqa: BLE001 (counted and reported)
                                with lock:
                                    counter["errors"].append(repr(e)[:300])
                        phase_done.wait()
                finally:
                    client.close()
                    if channel is not None:
                        channel.close()

            threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=3600)
            assert len(measures) == 2, counter["errors"][:5]
            (rss0, fds0, t_warm), (rss1, fds1, t_end) = measures
            text = scrape(metrics_port)
            return {"requests": total, "clients": clients, "warmup": warmup, "rss_warm": rss0, "rss_end": rss1,
                    "rss_change": (rss1 - rss0) / rss0, "fds_warm": fds0, "fds_end": fds1,
                    "seconds": t_end - t0, "rate": (total - warmup) / max(1e-9, t_end - t_warm),
                    "bad": counter["bad"], "errors": counter["errors"],
                    "sessions_open": sample(text, "sdx_sessions_open"), "refs": sample(text, "sdx_remote_refs"),
                    "served": sample(text, "sdx_requests_total", model="add", status="OK")
                    + sample(text, "sdx_remote_requests_total", rpc="Run", status="OK"),
                    "exit": stop_server(proc)}
        finally:
            stop_server(proc)


def remote_round(pb, stub, fp, a, b):
    """One sdx.v1 session: Run keeping the sum on the server, Fetch it, CloseSession."""
    sid = stub.OpenSession(pb.OpenSessionRequest(lease_ms=10000), timeout=60).session_id
    try:
        r = stub.Run(pb.RunRequest(session_id=sid, fingerprint=fp,
                                   inputs=[pb.Tensor(name=n, datatype="FP32", shape=[2, 16], raw_contents=v.tobytes())
                                           for n, v in (("a", a), ("b", b))],
                                   outputs=[pb.RunRequest.RequestedOutput(name="sum", keep_on_server=True)]), timeout=60)
        t = stub.Fetch(pb.FetchRequest(session_id=sid, ref_id=r.kept[0].ref_id), timeout=60).tensor
        return np.frombuffer(t.raw_contents, np.float32).reshape(list(t.shape))
    finally:
        stub.CloseSession(pb.CloseSessionRequest(session_id=sid), timeout=60)


def report(f: dict) -> str:
    return (f"soak: {f['requests']} requests ({f['clients']} clients, warmup {f['warmup']}) in {f['seconds']:.1f} s "
            f"({f['rate']:.0f} req/s after warmup); VmRSS {f['rss_warm'] / 2**20:.1f} MiB after warmup, "
            f"{f['rss_end'] / 2**20:.1f} MiB at the end ({100 * f['rss_change']:+.2f}%); open fds {f['fds_warm']} -> "
            f"{f['fds_end']}; wrong answers {f['bad']}, errors {len(f['errors'])}; sessions open {f['sessions_open']:g}, "
            f"refs {f['refs']:g}; server-side runs {f['served']:g}; exit {f['exit']}")


def check_soak(f: dict) -> None:
    assert not f["errors"], f["errors"][:5]
    assert f["bad"] == 0
    assert abs(f["rss_change"]) <= 0.05, report(f)
    assert f["fds_end"] <= f["fds_warm"], report(f)
    assert f["sessions_open"] == 0 and f["refs"] == 0
    assert f["served"] == f["requests"], f"the server counts {f['served']:g} requests run, not {f['requests']}"
    assert f["exit"] == 0


def test_soak_rss_flat_and_no_fd_growth():
    total = int(os.environ.get("SDX_SOAK_REQUESTS", "20000"))
    f = soak(total, warmup=max(1, total // 4))  # the allocator settles in the first few thousand
    print(report(f))
    check_soak(f)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--soak", type=int, required=True, metavar="N", help="requests in all (the issue: 200000)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=None, help="requests before the first measure (default N/10)")
    args = parser.parse_args()
    figures = soak(args.soak, args.clients, args.warmup)
    print(report(figures))
    check_soak(figures)
