"""`sdx serve` (sdx-serve, src/serve/) against Triton's own client library, tritonclient.grpc, unchanged:
health, metadata, the repository extension, ModelInfer with outputs bitwise equal to the in-process
sdx.InferenceSession, and bad requests, each answered with a clear gRPC status.

The server runs as `python -m sdx serve --port 0` (the CLI execs sdx-serve) on a temporary repository; the
port it picked is read from its "listening on" line. The fixture always stops it."""
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from models import mlp_model

grpcclient = pytest.importorskip("tritonclient.grpc", reason="pip install 'tritonclient[grpc]' (scripts/setup.sh)")
from tritonclient.utils import InferenceServerException, np_to_triton_dtype  # noqa: E402

import sdx  # noqa: E402
from sdx.serve import find_server  # noqa: E402

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")


def add_model() -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["sum"])], "add",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["N", 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def strings_model() -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "strings",
                          [helper.make_tensor_value_info("s", TensorProto.STRING, ["N"])],
                          [helper.make_tensor_value_info("t", TensorProto.STRING, ["N"])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


# Element types through an Identity each: (ONNX type, numpy dtype, KServe datatype).
TYPES = [(TensorProto.BOOL, np.bool_, "BOOL"), (TensorProto.UINT8, np.uint8, "UINT8"),
         (TensorProto.INT8, np.int8, "INT8"), (TensorProto.UINT16, np.uint16, "UINT16"),
         (TensorProto.INT16, np.int16, "INT16"), (TensorProto.INT32, np.int32, "INT32"),
         (TensorProto.INT64, np.int64, "INT64"), (TensorProto.UINT32, np.uint32, "UINT32"),
         (TensorProto.UINT64, np.uint64, "UINT64"), (TensorProto.FLOAT16, np.float16, "FP16"),
         (TensorProto.DOUBLE, np.float64, "FP64")]


def types_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Identity", [f"in_{dt}"], [f"out_{dt}"]) for _, _, dt in TYPES]
    g = helper.make_graph(nodes, "types", [helper.make_tensor_value_info(f"in_{dt}", t, [2, 2]) for t, _, dt in TYPES],
                          [helper.make_tensor_value_info(f"out_{dt}", t, [2, 2]) for t, _, dt in TYPES])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def write_model(root, name, version, model):
    d = root / name / str(version)
    d.mkdir(parents=True)
    onnx.save(model, str(d / "model.onnx"))


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    write_model(root, "add", 1, add_model())
    write_model(root, "add", 2, add_model())
    write_model(root, "mlp", 1, mlp_model())
    write_model(root, "strings", 1, strings_model())
    write_model(root, "types", 1, types_model())
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"not a model")
    return root


def start_server(repository, log_path, *extra):
    log = open(log_path, "w")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    if "--metrics-port" not in extra:
        extra = ("--metrics-port", "0", *extra)  # several servers run at once: no fixed metrics port
    proc = subprocess.Popen([sys.executable, "-m", "sdx", "serve", "--model-repository", str(repository),
                             "--port", "0", *extra], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 120
    while time.time() < deadline:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log_path).read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"sdx serve did not start:\n{open(log_path).read()}")


def wait_ready(client, log_path, timeout_s=60.0):
    """Until the server says it is ready (its log in the assertion message otherwise)."""
    deadline = time.time() + timeout_s
    while not client.is_server_ready():
        assert time.time() < deadline, open(log_path).read()
        time.sleep(0.05)


def stop_server(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@pytest.fixture(scope="module")
def server(repository, tmp_path_factory):
    log_path = tmp_path_factory.mktemp("serve") / "server.log"
    proc, port = start_server(repository, log_path)
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(client, log_path)
        yield client, port, proc, log_path
    finally:
        stop_server(proc)


def status_of(call):
    with pytest.raises(InferenceServerException) as e:
        call()
    return e.value.status(), e.value.message()


def infer_input(name, array, datatype=None):
    inp = grpcclient.InferInput(name, list(array.shape), datatype or np_to_triton_dtype(array.dtype))
    inp.set_data_from_numpy(array)
    return inp


def test_health_and_server_metadata(server):
    client, port, _, _ = server
    assert client.is_server_live()
    assert client.is_server_ready()
    meta = client.get_server_metadata()
    assert meta.name == "sdx" and meta.version == sdx.__version__
    assert "model_repository" in meta.extensions
    # The standard health service (grpc.health.v1.Health/Check, empty service name): SERVING, encoded as
    # field 1 = 1. Called raw, so that no health-checking package is needed.
    import grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        assert check(b"", timeout=10) == b"\x08\x01"


def test_model_metadata(server):
    client = server[0]
    meta = client.get_model_metadata("mlp")
    assert meta.name == "mlp" and list(meta.versions) == ["1"]
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.inputs] == [("x", "FP32", [-1, 4])]
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.outputs] == [("probs", "FP32", [-1, 2]),
                                                                          ("logits", "FP32", [-1, 2])]
    assert list(client.get_model_metadata("add").versions) == ["1", "2"]
    assert client.is_model_ready("add") and client.is_model_ready("add", "1")
    assert not client.is_model_ready("add", "3")
    assert not client.is_model_ready("nope")


def test_infer_is_bitwise_equal_to_in_process_sdx(server, repository):
    client = server[0]
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    result = client.infer("mlp", [infer_input("x", x)], request_id="r-7")
    local = sdx.InferenceSession(str(repository / "mlp" / "1" / "model.onnx"))
    probs, logits = local.run(["probs", "logits"], {"x": x})
    assert result.get_response().id == "r-7"
    assert result.get_response().model_version == "1"
    assert result.as_numpy("probs").tobytes() == probs.tobytes()
    assert result.as_numpy("logits").tobytes() == logits.tobytes()
    assert result.as_numpy("probs").shape == (5, 2)


def test_concurrent_clients_get_their_own_results(server, repository):
    from concurrent.futures import ThreadPoolExecutor

    port = server[1]
    local = sdx.InferenceSession(str(repository / "mlp" / "1" / "model.onnx"))
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1 + i % 3, 4)).astype(np.float32) for i in range(8)]

    def client_loop(x):
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        want = local.run(["probs"], {"x": x})[0].tobytes()
        return all(client.infer("mlp", [infer_input("x", x)]).as_numpy("probs").tobytes() == want for _ in range(20))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(client_loop, xs))


def test_infer_requested_outputs_and_versions(server):
    client = server[0]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float32)
    out = [grpcclient.InferRequestedOutput("sum")]
    result = client.infer("add", [infer_input("a", a), infer_input("b", b)], outputs=out)
    assert result.get_response().model_version == "2"  # the latest by default
    np.testing.assert_array_equal(result.as_numpy("sum"), a + b)
    result = client.infer("add", [infer_input("a", a), infer_input("b", b)], model_version="1")
    assert result.get_response().model_version == "1"


def test_infer_strings(server):
    client = server[0]
    s = np.array([b"hello", b"", "wörld".encode()], dtype=np.object_)
    result = client.infer("strings", [infer_input("s", s, "BYTES")])
    assert list(result.as_numpy("t")) == list(s)


def test_every_fixed_size_datatype_round_trips(server):
    client = server[0]
    meta = client.get_model_metadata("types")
    assert [t.datatype for t in meta.inputs] == [dt for _, _, dt in TYPES]
    rng = np.random.default_rng(3)
    arrays = {dt: (rng.standard_normal((2, 2)) * 100).astype(np_dtype) for _, np_dtype, dt in TYPES}
    result = client.infer("types", [infer_input(f"in_{dt}", a) for dt, a in arrays.items()])
    for dt, a in arrays.items():
        out = result.as_numpy(f"out_{dt}")
        assert out.dtype == a.dtype and out.tobytes() == a.tobytes(), dt


def test_repository_index_load_unload(server):
    client = server[0]
    index = client.get_model_repository_index()
    rows = {(m.name, m.version, m.state) for m in index.models}
    assert {("add", "1", "READY"), ("add", "2", "READY"), ("mlp", "1", "READY")} <= rows
    broken = [m for m in index.models if m.name == "broken"]
    assert broken and broken[0].state == "UNAVAILABLE" and "broken" in broken[0].reason

    client.unload_model("add")
    assert not client.is_model_ready("add")
    assert status_of(lambda: client.get_model_metadata("add"))[0] == "StatusCode.NOT_FOUND"
    index = client.get_model_repository_index()
    assert ("add", "", "UNAVAILABLE") in {(m.name, m.version, m.state) for m in index.models}
    client.load_model("add")
    assert client.is_model_ready("add")

    code, message = status_of(lambda: client.load_model("no_such_model"))
    assert code == "StatusCode.NOT_FOUND" and "no_such_model" in message
    code, message = status_of(lambda: client.load_model("broken"))
    assert code == "StatusCode.DATA_LOSS" and "model 'broken' version 1" in message  # not a protobuf
    code, _ = status_of(lambda: client.unload_model("no_such_model"))
    assert code == "StatusCode.NOT_FOUND"


def test_bad_requests_get_clear_statuses(server):
    client = server[0]
    a = np.ones((2, 3), np.float32)

    code, message = status_of(lambda: client.infer("nope", [infer_input("a", a)]))
    assert code == "StatusCode.NOT_FOUND" and "nope" in message
    code, message = status_of(lambda: client.infer("add", [infer_input("a", a), infer_input("b", a)],
                                                   model_version="9"))
    assert code == "StatusCode.NOT_FOUND" and "version '9'" in message

    short = infer_input("b", a)
    short.set_shape([2, 4])  # 24 bytes of data for a shape that takes 32
    code, message = status_of(lambda: client.infer("add", [infer_input("a", a), short]))
    assert code == "StatusCode.INVALID_ARGUMENT"
    assert "input 'b'" in message and "24 bytes" in message and "takes 32" in message

    code, message = status_of(lambda: client.infer("add", [infer_input("a", a), infer_input("b", a.astype(np.float64))]))
    assert code == "StatusCode.INVALID_ARGUMENT" and "input 'b'" in message and "FP32" in message

    code, message = status_of(lambda: client.infer("add", [infer_input("a", a)]))
    assert code == "StatusCode.INVALID_ARGUMENT" and "input 'b'" in message and "missing" in message

    code, message = status_of(lambda: client.infer("add", [infer_input("a", a), infer_input("zz", a)]))
    assert code == "StatusCode.INVALID_ARGUMENT" and "input 'zz'" in message

    code, message = status_of(lambda: client.infer("add", [infer_input("a", a), infer_input("b", np.ones((2, 4), np.float32))]))
    assert code == "StatusCode.INVALID_ARGUMENT"  # the engine's shape check, passed through

    outs = [grpcclient.InferRequestedOutput("nope")]
    code, message = status_of(lambda: client.infer("add", [infer_input("a", a), infer_input("b", a)], outputs=outs))
    assert code == "StatusCode.INVALID_ARGUMENT" and "output 'nope'" in message

    code, _ = status_of(lambda: client.get_model_config("add"))
    assert code == "StatusCode.UNIMPLEMENTED"
    assert client.is_server_live()  # none of it hurt the server


def test_malformed_protobuf_is_refused(server):
    import grpc

    client, port = server[0], server[1]
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        with pytest.raises(grpc.RpcError) as e:
            infer(b"\x0a\xff\xff\xff\xff\x0f", timeout=10)  # a length-delimited field far past the end
        assert e.value.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT)
    assert client.is_server_live()


def test_oversize_message_is_resource_exhausted(repository, tmp_path):
    proc, port = start_server(repository, tmp_path / "server.log", "--max-message-bytes", "4096")
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        big = np.ones((1000, 3), np.float32)  # 12 kB of raw contents
        code, _ = status_of(lambda: client.infer("add", [infer_input("a", big), infer_input("b", big)]))
        assert code == "StatusCode.RESOURCE_EXHAUSTED"
        small = np.ones((2, 3), np.float32)
        client.infer("add", [infer_input("a", small), infer_input("b", small)])  # still serving
    finally:
        assert stop_server(proc) == 0


def test_sigterm_stops_the_server_cleanly(repository, tmp_path):
    proc, port = start_server(repository, tmp_path / "server.log")
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        assert client.is_server_live()
    finally:
        rc = stop_server(proc)
    log = (tmp_path / "server.log").read_text()
    assert rc == 0, log
    assert "SIGTERM: shutting down" in log and "stopped" in log


def slow_model(n: int, depth: int) -> onnx.ModelProto:
    """y = x @ x @ ... @ x (depth products of n x n): long enough to be in flight when SIGTERM comes."""
    nodes, prev = [], "x"
    for i in range(depth):
        nodes.append(helper.make_node("MatMul", [prev, "x"], [f"p{i}"]))
        prev = f"p{i}"
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    g = helper.make_graph(nodes, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_sigterm_lets_the_request_in_flight_finish(tmp_path):
    n = 1024
    write_model(tmp_path / "models", "slow", 1, slow_model(n, 100))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics_port = s.getsockname()[1]
    proc, port = start_server(tmp_path / "models", tmp_path / "server.log", "--metrics-port", str(metrics_port))
    done = []
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        x = np.full((n, n), 1.0 / n, np.float32)  # idempotent: every product is exactly x again
        inputs = [infer_input("x", x)]
        client.infer("slow", inputs)  # warmup
        client.async_infer("slow", inputs, callback=lambda result, error: done.append((result, error)))
        # SIGTERM while the server says the request runs (its inflight gauge), not after a guessed delay.
        inflight = re.compile(r'^sdx_inflight\{model="slow"\} 1$', re.M)
        deadline = time.time() + 60
        while not inflight.search(urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
                                  .read().decode()):
            assert time.time() < deadline and not done, "the request never showed as in flight"
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=120)
    finally:
        stop_server(proc)
    log = (tmp_path / "server.log").read_text()
    assert rc == 0, log
    deadline = time.time() + 10
    while not done and time.time() < deadline:
        time.sleep(0.05)
    assert done, "no answer"
    result, error = done[0]
    assert error is None, f"{error} (server log:\n{log})"
    assert result.as_numpy("y").tobytes() == x.tobytes()  # in flight at SIGTERM, answered in full


def test_a_taken_port_is_an_error(server, repository):
    port = server[1]
    r = subprocess.run([sys.executable, "-m", "sdx", "serve", "--model-repository", str(repository), "--port", str(port)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert f"sdx-serve: error: cannot listen on 127.0.0.1:{port}" in r.stderr


def test_cli_usage_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sdx", "serve", "--model-repository", str(tmp_path / "none")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("sdx: error: model repository")
    assert "Traceback" not in r.stderr
