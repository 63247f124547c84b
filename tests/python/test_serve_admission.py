"""`sdx serve` admission control, deadlines and the Prometheus /metrics endpoint, against tritonclient.grpc:
a full queue answers RESOURCE_EXHAUSTED at once with a retry hint (never a hang), a request whose deadline
passes while it waits is not run, and /metrics is valid Prometheus text whose counters move.

The slow model is a chain of 512x512 MatMuls on a 4-byte input (tens of milliseconds a run); --model-concurrency 1 makes
the requests behind a running one wait."""
import re
import socket
import threading
import time
import urllib.request

import numpy as np
import pytest
from onnx import TensorProto, helper

from test_serve import add_model, grpcclient, start_server, stop_server, wait_ready, write_model  # noqa: F401 (skips)
from tritonclient.utils import InferenceServerException

N = 512


def slow_model(steps: int = 12, n: int = N):
    """x [1, 1] expanded to [n, n], then `steps` MatMuls: a request of 4 bytes that computes for a while."""
    nodes = [helper.make_node("Expand", ["x", "shape"], ["m"])]
    prev = "m"
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [prev, "m"], [f"y{i}"]))
        prev = f"y{i}"
    nodes.append(helper.make_node("ReduceSum", [prev], ["out"], keepdims=0))
    g = helper.make_graph(nodes, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [])],
                          [helper.make_tensor("shape", TensorProto.INT64, [2], [n, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def admission_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("admission_models")
    write_model(root, "slow", 1, slow_model())
    write_model(root, "add", 1, add_model())
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("admission") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--max-queue", "1",
                              "--model-concurrency", "1", "--log-requests")
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(client, log_path)
        client.infer("slow", slow_inputs())  # warm up: later runs take their steady time
        yield client, port, metrics_port, log_path
    finally:
        stop_server(proc)


def slow_inputs():
    x = np.full((1, 1), 1.0 / N, np.float32)
    inp = grpcclient.InferInput("x", [1, 1], "FP32")
    inp.set_data_from_numpy(x)
    return [inp]


# One sample line of the text format: name, optional {labels}, a value (a float, +Inf, -Inf or NaN).
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? '
                    r'(-?[0-9.]+(e[-+]?[0-9]+)?|[+-]Inf|NaN)$')


def scrape(metrics_port) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def sample(text, name, **labels) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(name + ("{" + want + "}" if want else "") + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_text_is_valid_prometheus_and_counters_move(admission_server):
    client, _, metrics_port, _ = admission_server
    before = scrape(metrics_port)
    a = np.ones((2, 3), np.float32)
    inputs = []
    for name in ("a", "b"):
        inp = grpcclient.InferInput(name, [2, 3], "FP32")
        inp.set_data_from_numpy(a)
        inputs.append(inp)
    for _ in range(5):
        client.infer("add", inputs)
    with pytest.raises(InferenceServerException):
        client.infer("no_such_model", inputs)
    text = scrape(metrics_port)
    types = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            types[name] = kind
            continue
        assert SAMPLE.match(line), f"not a Prometheus sample line: {line!r}"
        base = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        assert re.sub(r"_(bucket|sum|count)$", "", base) in types or base in types, line
    for name, kind in [("sdx_requests_total", "counter"), ("sdx_request_duration_seconds", "histogram"),
                       ("sdx_request_overhead_seconds", "histogram"), ("sdx_queue_depth", "gauge"),
                       ("sdx_inflight", "gauge"), ("sdx_rejected_total", "counter"), ("sdx_models_loaded", "gauge")]:
        assert types.get(name) == kind, name
    assert sample(text, "sdx_requests_total", model="add", status="OK") == \
        sample(before, "sdx_requests_total", model="add", status="OK") + 5
    assert sample(text, "sdx_requests_total", model="", status="NOT_FOUND") >= 1
    assert sample(text, "sdx_models_loaded") == 2
    count = sample(text, "sdx_request_duration_seconds_count", model="add")
    assert count >= 5 and sample(text, "sdx_request_duration_seconds_bucket", model="add", le="+Inf") == count
    assert sample(text, "sdx_request_overhead_seconds_count", model="add") == count
    # Buckets are cumulative.
    buckets = [float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
               if l.startswith('sdx_request_duration_seconds_bucket{model="add"')]
    assert buckets == sorted(buckets) and len(buckets) > 10
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/nothing", timeout=10)
    assert e.value.code == 404


def test_full_queue_answers_resource_exhausted_at_once(admission_server):
    client, _, metrics_port, _ = admission_server
    rejected_before = sample(scrape(metrics_port), "sdx_rejected_total", model="slow", reason="queue_full")
    results, lock = [], threading.Lock()

    def call():
        t0 = time.monotonic()
        try:
            client.infer("slow", slow_inputs(), client_timeout=60)
            outcome = ("OK", "")
        except InferenceServerException as e:
            outcome = (e.status(), e.message())
        with lock:
            results.append((*outcome, time.monotonic() - t0))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a request hung"
    codes = [r[0] for r in results]
    assert "OK" in codes, results
    full = [r for r in results if r[0] == "StatusCode.RESOURCE_EXHAUSTED"]
    assert full, results  # --max-queue 1: while one runs, the others are refused
    assert set(codes) <= {"OK", "StatusCode.RESOURCE_EXHAUSTED"}, results
    for _, message, _ in full:
        assert "queue full" in message and re.search(r"retry in about \d+ ms", message), message
    after = sample(scrape(metrics_port), "sdx_rejected_total", model="slow", reason="queue_full")
    assert after - rejected_before == len(full)


def test_retry_pushback_is_in_the_trailing_metadata(admission_server):
    grpc = pytest.importorskip("grpc")
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    _, port, _, _ = admission_server
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
    req = service_pb2.ModelInferRequest(model_name="slow")
    req.inputs.add(name="x", datatype="FP32", shape=[1, 1])
    req.raw_input_contents.append(np.full((1, 1), 1.0 / N, np.float32).tobytes())
    futures = [stub.ModelInfer.future(req, timeout=60) for _ in range(6)]
    refused = []
    for f in futures:
        try:
            f.result()
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
            refused.append(dict(e.trailing_metadata() or ()))
    channel.close()
    assert refused
    for md in refused:
        assert int(md["grpc-retry-pushback-ms"]) >= 1, md


@pytest.fixture(scope="module")
def deadline_server(tmp_path_factory):
    """Room to wait (--max-queue 8), one run at a time."""
    root = tmp_path_factory.mktemp("deadline_models")
    write_model(root, "slow", 1, slow_model(steps=16, n=1024))  # 34 GFLOP: well over 20 ms
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("deadline") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--max-queue", "8",
                              "--model-concurrency", "1")
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        client.infer("slow", slow_inputs(), client_timeout=60)  # warm up
        yield client, metrics_port
    finally:
        stop_server(proc)


def wait_for(metrics_port, predicate, seconds=20.0):
    deadline = time.time() + seconds
    while True:
        text = scrape(metrics_port)
        if predicate(text) or time.time() > deadline:
            return text
        time.sleep(0.01)


def test_request_past_its_deadline_is_not_run(deadline_server):
    client, metrics_port = deadline_server
    before = scrape(metrics_port)
    ok_before = sample(before, "sdx_requests_total", model="slow", status="OK")
    late_before = sample(before, "sdx_rejected_total", model="slow", reason="deadline")
    runner = threading.Thread(target=lambda: client.infer("slow", slow_inputs(), client_timeout=60))
    runner.start()
    wait_for(metrics_port, lambda t: sample(t, "sdx_inflight", model="slow") == 1)
    # The only run slot is taken: this request waits, and its 20 ms deadline passes before its turn.
    with pytest.raises(InferenceServerException) as e:
        client.infer("slow", slow_inputs(), client_timeout=0.02)
    runner_was_running = runner.is_alive()
    runner.join(timeout=60)
    assert runner_was_running, "the slow model finished within the deadline; make it slower"
    assert e.value.status() == "StatusCode.DEADLINE_EXCEEDED", e.value
    after = wait_for(metrics_port,
                     lambda t: sample(t, "sdx_rejected_total", model="slow", reason="deadline") > late_before)
    assert sample(after, "sdx_rejected_total", model="slow", reason="deadline") == late_before + 1
    assert sample(after, "sdx_requests_total", model="slow", status="OK") == ok_before + 1  # only the runner ran
    assert sample(after, "sdx_requests_total", model="slow", status="DEADLINE_EXCEEDED") >= 1
    assert sample(after, "sdx_queue_depth", model="slow") == 0 and sample(after, "sdx_inflight", model="slow") == 0


def test_a_taken_metrics_port_stops_the_start(tmp_path):
    root = tmp_path / "models"
    write_model(root, "add", 1, add_model())
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        taken = held.getsockname()[1]
        with pytest.raises(AssertionError, match=r"cannot serve metrics on 127\.0\.0\.1:%d" % taken):
            start_server(root, tmp_path / "server.log", "--metrics-port", str(taken))
