"""`sdx serve`'s sdx.v1.RemoteService (proto/sdx/v1/remote.proto): models registered by fingerprint in
chunks, sessions with leases, outputs kept on the server as refs that a second model takes without moving
bytes, Fetch bitwise equal to the in-process sdx.InferenceSession, refs scoped to their session, and a
session whose lease runs out freed by the server (the metrics show it).

The Python stubs are the package's (sdx/_proto), generated at build time from the proto with grpcio-tools."""
import hashlib
import re
import time
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from models import mlp_model

grpc = pytest.importorskip("grpc", reason="pip install grpcio (scripts/setup.sh)")

import sdx  # noqa: E402
from sdx.serve import find_server  # noqa: E402
from test_serve import start_server, stop_server  # noqa: E402
from test_serve_admission import free_port, sample, scrape  # noqa: E402

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

@pytest.fixture(scope="module")
def stubs():
    """remote_pb2 and remote_pb2_grpc: the package's own, generated from proto/sdx/v1/remote.proto at build
    time (cmake/serve.cmake). One copy per process: protobuf refuses the sdx.v1 messages defined twice, and
    sdx.remote (tests/python/test_remote_client.py) loads these."""
    remote_pb2_grpc = pytest.importorskip("sdx._proto.remote_pb2_grpc",
                                          reason="sdx built without grpcio-tools: no sdx.v1 stubs")
    from sdx._proto import remote_pb2

    return remote_pb2, remote_pb2_grpc


def scale_model() -> onnx.ModelProto:
    """z [N, 2] -> Relu(z * 3 - 1): the second link of a chain after the MLP's logits."""
    g = helper.make_graph([helper.make_node("Mul", ["z", "three"], ["m"]),
                           helper.make_node("Sub", ["m", "one"], ["s"]),
                           helper.make_node("Relu", ["s"], ["w"])], "scale",
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("w", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor("three", TensorProto.FLOAT, [], [3.0]),
                           helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def remote(stubs, tmp_path_factory):
    root = tmp_path_factory.mktemp("remote_models")  # an empty repository: models come by RegisterModel
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("remote") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--max-model-bytes", "1000000")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        yield stubs[0], stubs[1].RemoteServiceStub(channel), metrics_port, log_path
    finally:
        channel.close()
        stop_server(proc)


def chunks(pb2, data: bytes, size: int = 1000, fingerprint: str = ""):
    for i in range(0, len(data), size):
        yield pb2.ModelChunk(data=data[i:i + size], fingerprint=fingerprint if i == 0 else "")


def register(pb2, stub, model: onnx.ModelProto) -> str:
    data = model.SerializeToString()
    fp = "sha256:" + hashlib.sha256(data).hexdigest()
    if not stub.HasModel(pb2.HasModelRequest(fingerprint=fp), timeout=30).has_model:
        r = stub.RegisterModel(chunks(pb2, data), timeout=60)
        assert r.fingerprint == fp and r.model_bytes == len(data)
    return fp


def tensor(pb2, name, array):
    dt = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64"}[array.dtype]
    return pb2.Tensor(name=name, datatype=dt, shape=list(array.shape), raw_contents=array.tobytes())


def code_of(call):
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code(), e.value.details()


def test_register_in_chunks_then_by_fingerprint_only(remote):
    pb2, stub, metrics_port, _ = remote
    data = mlp_model().SerializeToString()
    fp = "sha256:" + hashlib.sha256(data).hexdigest()
    before = scrape(metrics_port)
    assert not stub.HasModel(pb2.HasModelRequest(fingerprint=fp)).has_model
    first = stub.RegisterModel(chunks(pb2, data, size=97), timeout=60)  # many chunks
    assert (first.fingerprint, first.already_held, first.model_bytes) == (fp, False, len(data))
    assert stub.HasModel(pb2.HasModelRequest(fingerprint=fp)).has_model
    # The same bytes again: held, nothing loaded.
    again = stub.RegisterModel(chunks(pb2, data), timeout=60)
    assert (again.fingerprint, again.already_held) == (fp, True)
    # Only the fingerprint: no upload at all.
    by_name = stub.RegisterModel(iter([pb2.ModelChunk(fingerprint=fp)]), timeout=60)
    assert (by_name.fingerprint, by_name.already_held, by_name.model_bytes) == (fp, True, 0)
    # A stream whose first chunk names a held fingerprint ends at that chunk: the rest is never read.
    early = stub.RegisterModel(chunks(pb2, data, size=97, fingerprint=fp), timeout=60)
    assert (early.already_held, early.model_bytes) == (True, 97)
    after = scrape(metrics_port)
    assert sample(after, "sdx_model_registrations_total", result="new") - \
        sample(before, "sdx_model_registrations_total", result="new") == 1
    assert sample(after, "sdx_model_registrations_total", result="already_held") - \
        sample(before, "sdx_model_registrations_total", result="already_held") == 3


def test_bad_uploads_are_refused(remote):
    pb2, stub, _, _ = remote
    code, details = code_of(lambda: stub.RegisterModel(iter([pb2.ModelChunk(data=b"not a model")]), timeout=30))
    # The loader's own status (not protobuf: DATA_LOSS), naming the upload's fingerprint.
    assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.DATA_LOSS) and "sha256:" in details, details
    data = scale_model().SerializeToString()
    code, details = code_of(lambda: stub.RegisterModel(chunks(pb2, data, fingerprint="sha256:" + "0" * 64),
                                                       timeout=30))
    assert code == grpc.StatusCode.DATA_LOSS and "hash to" in details, details
    big = iter([pb2.ModelChunk(data=b"\0" * 600000), pb2.ModelChunk(data=b"\0" * 600000)])
    code, details = code_of(lambda: stub.RegisterModel(big, timeout=30))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "--max-model-bytes" in details
    # A model whose weights live in an external file: refused for uploaded bytes.
    m = mlp_model()
    w = m.graph.initializer[0]
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.external_data.add(key="location", value="/etc/passwd")
    code, details = code_of(lambda: stub.RegisterModel(chunks(pb2, m.SerializeToString()), timeout=30))
    assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED,
                    grpc.StatusCode.FAILED_PRECONDITION), (code, details)
    assert "external" in details.lower(), details


def test_chain_through_a_ref_moves_no_bytes(remote):
    pb2, stub, metrics_port, _ = remote
    mlp_fp = register(pb2, stub, mlp_model())
    scale_fp = register(pb2, stub, scale_model())
    session = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=60000))
    assert len(session.session_id) == 32 and session.lease_ms == 60000
    sid = session.session_id
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    before = scrape(metrics_port)

    r1 = stub.Run(pb2.RunRequest(session_id=sid, fingerprint=mlp_fp, inputs=[tensor(pb2, "x", x)],
                                 outputs=[pb2.RunRequest.RequestedOutput(name="logits", keep_on_server=True)]))
    assert len(r1.outputs) == 0 and len(r1.kept) == 1
    sk = r1.kept[0]
    assert (sk.name, sk.datatype, list(sk.shape), sk.byte_size) == ("logits", "FP32", [5, 2], 40)
    r2 = stub.Run(pb2.RunRequest(session_id=sid, fingerprint=scale_fp,
                                 ref_inputs=[pb2.RunRequest.RefInput(name="z", ref_id=sk.ref_id)],
                                 outputs=[pb2.RunRequest.RequestedOutput(name="w", keep_on_server=True)]))
    final = r2.kept[0]
    assert (final.datatype, list(final.shape)) == ("FP32", [5, 2])
    mid = scrape(metrics_port)
    # x went in (80 bytes); nothing came back, and the intermediate never crossed the wire.
    assert sample(mid, "sdx_remote_bytes_total", direction="received") - \
        sample(before, "sdx_remote_bytes_total", direction="received") == x.nbytes
    assert sample(mid, "sdx_remote_bytes_total", direction="sent") == \
        sample(before, "sdx_remote_bytes_total", direction="sent")
    assert sample(mid, "sdx_remote_refs") >= 2

    fetched = stub.Fetch(pb2.FetchRequest(session_id=sid, ref_id=final.ref_id)).tensor
    got = np.frombuffer(fetched.raw_contents, np.float32).reshape(list(fetched.shape))
    logits = sdx.InferenceSession(mlp_model().SerializeToString()).run(["logits"], {"x": x})[0]
    want = sdx.InferenceSession(scale_model().SerializeToString()).run(["w"], {"z": logits})[0]
    assert got.tobytes() == want.tobytes()
    assert sample(scrape(metrics_port), "sdx_remote_bytes_total", direction="sent") - \
        sample(before, "sdx_remote_bytes_total", direction="sent") == want.nbytes
    # A slice along the first dimension.
    part = stub.Fetch(pb2.FetchRequest(session_id=sid, ref_id=final.ref_id, begin=1, end=3)).tensor
    assert list(part.shape) == [2, 2] and part.raw_contents == want[1:3].tobytes()
    code, _ = code_of(lambda: stub.Fetch(pb2.FetchRequest(session_id=sid, ref_id=final.ref_id, begin=2, end=9)))
    assert code == grpc.StatusCode.OUT_OF_RANGE
    # Outputs returned as bytes, as the in-process session computes them.
    r3 = stub.Run(pb2.RunRequest(session_id=sid, fingerprint=mlp_fp, inputs=[tensor(pb2, "x", x)]))
    assert [o.name for o in r3.outputs] == ["probs", "logits"]
    assert r3.outputs[1].raw_contents == logits.tobytes()

    assert stub.Release(pb2.ReleaseRequest(session_id=sid, ref_ids=[sk.ref_id])).released == 1
    code, details = code_of(lambda: stub.Fetch(pb2.FetchRequest(session_id=sid, ref_id=sk.ref_id)))
    assert code == grpc.StatusCode.NOT_FOUND and f"ref {sk.ref_id}" in details
    assert stub.CloseSession(pb2.CloseSessionRequest(session_id=sid)).refs_freed == 1
    assert sample(scrape(metrics_port), "sdx_remote_refs") == 0  # close freed the session's last ref
    code, _ = code_of(lambda: stub.Heartbeat(pb2.HeartbeatRequest(session_id=sid)))
    assert code == grpc.StatusCode.NOT_FOUND


def test_another_sessions_ref_is_refused(remote):
    pb2, stub, _, _ = remote
    fp = register(pb2, stub, scale_model())
    a = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=60000)).session_id
    b = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=60000)).session_id
    z = np.ones((2, 2), np.float32)
    ref = stub.Run(pb2.RunRequest(session_id=a, fingerprint=fp, inputs=[tensor(pb2, "z", z)],
                                  outputs=[pb2.RunRequest.RequestedOutput(name="w", keep_on_server=True)])).kept[0]
    code, details = code_of(lambda: stub.Fetch(pb2.FetchRequest(session_id=b, ref_id=ref.ref_id)))
    assert code == grpc.StatusCode.PERMISSION_DENIED and "another session" in details
    code, _ = code_of(lambda: stub.Run(pb2.RunRequest(
        session_id=b, fingerprint=fp, ref_inputs=[pb2.RunRequest.RefInput(name="z", ref_id=ref.ref_id)])))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = code_of(lambda: stub.Release(pb2.ReleaseRequest(session_id=b, ref_ids=[ref.ref_id])))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = code_of(lambda: stub.Fetch(pb2.FetchRequest(session_id=a, ref_id=10 ** 12)))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(lambda: stub.Run(pb2.RunRequest(session_id=a, fingerprint="sha256:" + "1" * 64)))
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = code_of(lambda: stub.Run(pb2.RunRequest(
        session_id=a, fingerprint=fp, inputs=[pb2.Tensor(name="z", datatype="FP32", shape=[2, 2], raw_contents=b"x")])))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "'z'" in details
    code, _ = code_of(lambda: stub.Run(pb2.RunRequest(session_id="no-such-session", fingerprint=fp)))
    assert code == grpc.StatusCode.NOT_FOUND
    # The session id as gRPC metadata (the balancer's affinity key), the field left empty.
    assert stub.Fetch(pb2.FetchRequest(ref_id=ref.ref_id), metadata=[("sdx-session", a)]).tensor.shape == [2, 2]
    code, _ = code_of(lambda: stub.Heartbeat(pb2.HeartbeatRequest(session_id=a), metadata=[("sdx-session", b)]))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    for s in (a, b):
        stub.CloseSession(pb2.CloseSessionRequest(session_id=s))


def test_expired_lease_frees_the_sessions_refs(remote):
    pb2, stub, metrics_port, _ = remote
    fp = register(pb2, stub, scale_model())
    expiries = sample(scrape(metrics_port), "sdx_lease_expiries_total")
    lease = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=400))
    assert lease.lease_ms == 400
    z = np.ones((64, 2), np.float32)
    for _ in range(3):
        stub.Run(pb2.RunRequest(session_id=lease.session_id, fingerprint=fp, inputs=[tensor(pb2, "z", z)],
                                outputs=[pb2.RunRequest.RequestedOutput(name="w", keep_on_server=True)]))
    text = scrape(metrics_port)
    assert sample(text, "sdx_remote_refs") >= 3 and sample(text, "sdx_remote_ref_bytes") >= 3 * z.nbytes
    ended = time.monotonic()
    while True:  # the client went away: no heartbeat
        text = scrape(metrics_port)
        if sample(text, "sdx_remote_refs") == 0 and sample(text, "sdx_sessions_open") == 0:
            break
        assert time.monotonic() - ended < 0.4 + 1.0, text
        time.sleep(0.02)
    assert sample(text, "sdx_remote_ref_bytes") == 0
    assert sample(text, "sdx_lease_expiries_total") == expiries + 1
    code, _ = code_of(lambda: stub.Heartbeat(pb2.HeartbeatRequest(session_id=lease.session_id)))
    assert code == grpc.StatusCode.NOT_FOUND


def test_heartbeats_keep_a_session_alive(remote):
    pb2, stub, _, _ = remote
    sid = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=300)).session_id
    for _ in range(6):
        time.sleep(0.1)
        assert stub.Heartbeat(pb2.HeartbeatRequest(session_id=sid)).lease_ms == 300
    assert stub.CloseSession(pb2.CloseSessionRequest(session_id=sid)).refs_freed == 0


def test_remote_metrics_are_listed(remote):
    text = scrape(remote[2])
    for name in ("sdx_remote_requests_total", "sdx_remote_bytes_total", "sdx_model_registrations_total",
                 "sdx_remote_models", "sdx_sessions_open", "sdx_lease_expiries_total", "sdx_remote_refs",
                 "sdx_remote_ref_bytes"):
        assert re.search(rf"^# TYPE {name} ", text, re.M), name
    assert sample(text, "sdx_remote_requests_total", rpc="Run", status="OK") >= 1
