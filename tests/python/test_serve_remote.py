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


# ---------------------------------------------------------------------------------------------------------
# Client-proposed session ids (the affinity key a balancer routes OpenSession on)

def test_client_proposed_session_ids_are_checked_and_unique(remote):
    pb2, stub, metrics_port, _ = remote
    fp = register(pb2, stub, scale_model())
    sid = "c0ffee" * 4 + "_-0123"  # 30 of [A-Za-z0-9_-]
    md = [("sdx-session", sid)]
    opened = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=5000, session_id=sid), metadata=md)
    assert opened.session_id == sid and opened.lease_ms == 5000
    z = np.ones((2, 2), np.float32)
    r = stub.Run(pb2.RunRequest(fingerprint=fp, inputs=[tensor(pb2, "z", z)]), metadata=md)  # the id by metadata only
    assert np.frombuffer(r.outputs[0].raw_contents, np.float32).tolist() == [2.0] * 4
    # A live id again, by field or by metadata: ALREADY_EXISTS; the live session is unharmed.
    for kw in ({"request": pb2.OpenSessionRequest(session_id=sid)},
               {"request": pb2.OpenSessionRequest(), "metadata": md}):
        code, details = code_of(lambda: stub.OpenSession(**kw))
        assert code == grpc.StatusCode.ALREADY_EXISTS and sid in details, details
    assert stub.Heartbeat(pb2.HeartbeatRequest(session_id=sid)).lease_ms == 5000
    # Malformed ids: INVALID_ARGUMENT saying what an id is; nothing opened.
    open_before = sample(scrape(metrics_port), "sdx_sessions_open")
    for bad in ("short", "x" * 65, "0123456789abcdef/..", "0123456789abcdef\u00e9", "0123456789 abcdefg"):
        code, details = code_of(lambda: stub.OpenSession(pb2.OpenSessionRequest(session_id=bad)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (bad, code)
        assert "16 to 64 characters of [A-Za-z0-9_-]" in details, details
    # Field and metadata that disagree.
    code, details = code_of(lambda: stub.OpenSession(pb2.OpenSessionRequest(session_id="a" * 16),
                                                     metadata=[("sdx-session", "b" * 16)]))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "disagree" in details, details
    assert sample(scrape(metrics_port), "sdx_sessions_open") == open_before
    # Closed, the id may be proposed again; an empty one still gets a server-made id (older clients).
    stub.CloseSession(pb2.CloseSessionRequest(session_id=sid))
    assert stub.OpenSession(pb2.OpenSessionRequest(session_id=sid)).session_id == sid
    stub.CloseSession(pb2.CloseSessionRequest(session_id=sid))
    made = stub.OpenSession(pb2.OpenSessionRequest()).session_id
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    stub.CloseSession(pb2.CloseSessionRequest(session_id=made))


# ---------------------------------------------------------------------------------------------------------
# Admission control on Run: the same per-model queue as KServe ModelInfer (test_serve_admission.py), keyed by
# fingerprint: a full queue is RESOURCE_EXHAUSTED at once with the grpc-retry-pushback-ms hint, and a Run whose
# deadline passes while it waits is not run.

@pytest.fixture(scope="module")
def admission_remote(stubs, tmp_path_factory):
    from test_serve_admission import slow_model

    root = tmp_path_factory.mktemp("remote_admission_models")
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("remote_admission") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--max-queue", "2",
                              "--model-concurrency", "1")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        pb2, stub = stubs[0], stubs[1].RemoteServiceStub(channel)
        fp = register(pb2, stub, slow_model(steps=16, n=1024))  # 34 GFLOP a run: well over 20 ms
        sid = stub.OpenSession(pb2.OpenSessionRequest(lease_ms=600000)).session_id
        stub.Run(slow_run(pb2, sid, fp), timeout=120)  # warm up
        yield pb2, stub, metrics_port, fp, sid
    finally:
        channel.close()
        stop_server(proc)


def slow_run(pb2, sid, fp):
    x = np.full((1, 1), 1.0 / 1024, np.float32)
    return pb2.RunRequest(session_id=sid, fingerprint=fp, inputs=[tensor(pb2, "x", x)])


def wait_for_metric(metrics_port, predicate, seconds=30.0):
    deadline = time.monotonic() + seconds
    while True:
        text = scrape(metrics_port)
        if predicate(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.01)


def test_full_run_queue_answers_resource_exhausted_with_a_hint(admission_remote):
    pb2, stub, metrics_port, fp, sid = admission_remote
    before = scrape(metrics_port)
    t0 = time.monotonic()
    futures = [stub.Run.future(slow_run(pb2, sid, fp), timeout=120) for _ in range(8)]
    ok, refused = 0, []
    for f in futures:
        try:
            f.result()
            ok += 1
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (e.code(), e.details())
            refused.append((e.details(), dict(e.trailing_metadata() or ())))
    print(f"8 Runs at once, --max-queue 2: {ok} ran, {len(refused)} refused, {time.monotonic() - t0:.2f} s")
    assert ok >= 1 and refused, (ok, refused)
    for details, md in refused:
        assert f"model {fp}" in details and "queue full" in details, details
        assert re.search(r"retry in about \d+ ms", details), details
        assert int(md["grpc-retry-pushback-ms"]) >= 1, md
    after = scrape(metrics_port)
    assert sample(after, "sdx_rejected_total", model=fp, reason="queue_full") == \
        sample(before, "sdx_rejected_total", model=fp, reason="queue_full") + len(refused)
    assert sample(after, "sdx_requests_total", model=fp, status="RESOURCE_EXHAUSTED") == \
        sample(before, "sdx_requests_total", model=fp, status="RESOURCE_EXHAUSTED") + len(refused)
    assert sample(after, "sdx_requests_total", model=fp, status="OK") == \
        sample(before, "sdx_requests_total", model=fp, status="OK") + ok
    assert sample(after, "sdx_queue_depth", model=fp) == 0 and sample(after, "sdx_inflight", model=fp) == 0


def test_run_past_its_deadline_is_not_run(admission_remote):
    import threading

    pb2, stub, metrics_port, fp, sid = admission_remote
    before = scrape(metrics_port)
    ok_before = sample(before, "sdx_requests_total", model=fp, status="OK")
    late_before = sample(before, "sdx_rejected_total", model=fp, reason="deadline")
    runner = threading.Thread(target=lambda: stub.Run(slow_run(pb2, sid, fp), timeout=120))
    runner.start()
    wait_for_metric(metrics_port, lambda t: sample(t, "sdx_inflight", model=fp) == 1)
    # The only run slot is taken: this Run waits, and its 20 ms deadline passes before its turn.
    code, _ = code_of(lambda: stub.Run(slow_run(pb2, sid, fp), timeout=0.02))
    runner_was_running = runner.is_alive()
    runner.join(timeout=120)
    assert runner_was_running, "the slow model finished within the deadline; make it slower"
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    after = wait_for_metric(metrics_port, lambda t: sample(t, "sdx_rejected_total", model=fp, reason="deadline") >
                            late_before)
    assert sample(after, "sdx_rejected_total", model=fp, reason="deadline") == late_before + 1
    assert sample(after, "sdx_requests_total", model=fp, status="OK") == ok_before + 1  # only the runner ran
    assert sample(after, "sdx_queue_depth", model=fp) == 0 and sample(after, "sdx_inflight", model=fp) == 0
