"""sdx.remote, the Python client of `sdx serve`'s sdx.v1 service (python/sdx/remote.py): a model uploaded once
by fingerprint, outputs bitwise equal to the in-process sdx.InferenceSession, refs chained on the server,
heartbeats that keep a session past its lease, the context manager's close; and the retry policy and the
circuit breaker (python/sdx/_retry.py), against a dead address and without a server."""
import subprocess
import sys
import time
from concurrent import futures

import numpy as np
import pytest

from models import mlp_model

grpc = pytest.importorskip("grpc", reason="pip install grpcio (scripts/setup.sh)")
pytest.importorskip("sdx._proto.remote_pb2_grpc", reason="sdx built without grpcio-tools: no sdx.v1 stubs")

import sdx  # noqa: E402
import sdx.remote  # noqa: E402
from sdx._proto import remote_pb2 as pb, remote_pb2_grpc as pb_grpc  # noqa: E402
from sdx._retry import CircuitBreaker, RetryPolicy, call_with_retries  # noqa: E402
from sdx._remote_connection import pushback_s  # noqa: E402
from sdx.serve import find_server  # noqa: E402
from test_serve import start_server, stop_server  # noqa: E402
from test_serve_admission import free_port, sample, scrape  # noqa: E402
from test_serve import write_model  # noqa: E402
from test_serve_remote import scale_model  # noqa: E402

needs_server = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("client_models")  # empty: models come by RegisterModel
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("client") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port))
    try:
        yield f"127.0.0.1:{port}", metrics_port
    finally:
        stop_server(proc)


def registrations(metrics_port, result="new"):
    return sample(scrape(metrics_port), "sdx_model_registrations_total", result=result)


@needs_server
def test_upload_once_and_outputs_equal_local(server, tmp_path):
    address, metrics_port = server
    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp_model().SerializeToString())
    local = sdx.InferenceSession(str(path))
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    before, held = registrations(metrics_port), registrations(metrics_port, "already_held")
    with sdx.remote.InferenceSession(address, str(path), chunk_bytes=100) as first:
        assert first.uploaded and first.fingerprint == sdx.remote.fingerprint(path.read_bytes())
        assert registrations(metrics_port) == before + 1
        assert [(a.name, a.type, a.shape) for a in first.get_inputs()] == \
            [(a.name, a.type, a.shape) for a in local.get_inputs()]
        assert [a.name for a in first.get_outputs()] == ["probs", "logits"]
        got = first.run(None, {"x": x})
        want = local.run(None, {"x": x})
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        assert all(g.dtype == w.dtype and g.shape == w.shape for g, w in zip(got, want))
    # A second client, from the bytes: the server holds them, nothing is uploaded.
    with sdx.remote.InferenceSession(address, path.read_bytes()) as second:
        assert not second.uploaded
        (logits,) = second.run(["logits"], {"x": x})
        assert logits.tobytes() == local.run(["logits"], {"x": x})[0].tobytes()
    assert registrations(metrics_port) == before + 1
    assert registrations(metrics_port, "already_held") == held  # HasModel answered: no RegisterModel at all


@needs_server
def test_keep_on_server_chains_two_models(server):
    address, metrics_port = server
    x = np.random.default_rng(7).standard_normal((5, 4)).astype(np.float32)
    logits_local = sdx.InferenceSession(mlp_model().SerializeToString()).run(["logits"], {"x": x})[0]
    want = sdx.InferenceSession(scale_model().SerializeToString()).run(["w"], {"z": logits_local})[0]
    with sdx.remote.Connection(address, lease_s=60) as conn:
        mlp = sdx.remote.InferenceSession(conn, mlp_model().SerializeToString())
        scale = sdx.remote.InferenceSession(conn, scale_model().SerializeToString())
        before = scrape(metrics_port)
        (logits,) = mlp.run(["logits"], {"x": x}, keep_on_server=True)
        assert isinstance(logits, sdx.remote.RemoteTensor)
        assert (logits.shape, logits.dtype) == ((5, 2), np.dtype(np.float32))  # known before any fetch
        (w,) = scale.run(None, {"z": logits}, keep_on_server=True)
        assert (w.shape, w.dtype, w.nbytes) == ((5, 2), np.dtype(np.float32), 40)
        mid = scrape(metrics_port)
        assert sample(mid, "sdx_remote_bytes_total", direction="sent") == \
            sample(before, "sdx_remote_bytes_total", direction="sent")  # nothing came back yet
        got = w.numpy()
        assert got.tobytes() == want.tobytes()
        assert w.numpy() is got  # cached: fetched once
        assert sample(scrape(metrics_port), "sdx_remote_bytes_total", direction="sent") - \
            sample(before, "sdx_remote_bytes_total", direction="sent") == want.nbytes
        logits.release()
        with pytest.raises(sdx.FailedPrecondition, match="released"):
            scale.run(None, {"z": logits})
        # A ref of another session is refused, with a message that says so.
        with sdx.remote.InferenceSession(address, scale_model().SerializeToString()) as other:
            with pytest.raises(sdx.InvalidArgument, match="another session"):
                other.run(None, {"z": w})
        assert sample(scrape(metrics_port), "sdx_remote_refs") >= 1
    assert sample(scrape(metrics_port), "sdx_remote_refs") == 0  # close freed the session's refs
    with pytest.raises(sdx.FailedPrecondition, match="closed"):
        mlp.run(None, {"x": x})


@needs_server
def test_heartbeats_keep_the_session_past_its_lease(server):
    address, metrics_port = server
    z = np.ones((2, 2), np.float32)
    with sdx.remote.InferenceSession(address, scale_model().SerializeToString(), lease_s=0.3) as sess:
        assert sess.connection.lease_s == pytest.approx(0.3)
        (w,) = sess.run(None, {"z": z}, keep_on_server=True)
        time.sleep(1.2)  # four leases, no call of ours: only the heartbeat thread speaks
        assert w.numpy().shape == (2, 2)
        assert sess.run(None, {"z": z})[0].tobytes() == w.numpy().tobytes()
    assert sample(scrape(metrics_port), "sdx_lease_expiries_total") == 0


@needs_server
def test_context_manager_closes_the_session(server):
    address, metrics_port = server
    with sdx.remote.InferenceSession(address, scale_model().SerializeToString(), token="t0k3n") as sess:
        assert sample(scrape(metrics_port), "sdx_sessions_open") == 1
        thread = sess.connection._heartbeat
        assert thread.is_alive()
    assert sample(scrape(metrics_port), "sdx_sessions_open") == 0
    assert not thread.is_alive()
    sess.close()  # a second close does nothing


def test_import_sdx_does_not_import_grpc():
    code = "import sys, sdx; assert 'grpc' not in sys.modules; sdx.RemoteUnavailable; print(sdx.remote.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "sdx.remote"


def test_dead_address_opens_the_breaker_quickly():
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    options = dict(max_attempts=3, backoff_base_s=0.01, backoff_cap_s=0.05, cooldown_s=30, timeout_s=2)
    started = time.monotonic()
    with pytest.raises(sdx.RemoteUnavailable, match="after 3 attempt.*UNAVAILABLE"):  # retries spent
        sdx.remote.Connection(address, failure_threshold=10, **options)
    with pytest.raises(sdx.RemoteUnavailable, match="circuit breaker open after 2 consecutive"):
        sdx.remote.InferenceSession(address, scale_model().SerializeToString(), failure_threshold=2, **options)
    assert time.monotonic() - started < 10
    assert issubclass(sdx.RemoteUnavailable, sdx.SdxError)


class BusyServer(pb_grpc.RemoteServiceServicer):
    """An in-process sdx.v1 server whose Run answers RESOURCE_EXHAUSTED with a retry hint `busy` times, as
    sdx serve's admission control does when a model's queue is full. Its OpenSession makes its own id ("s1"),
    as servers before client-proposed ids did: the client then uses that one."""

    def __init__(self, busy):
        self.busy, self.runs, self.metadata = busy, 0, []

    def HasModel(self, request, context):
        return pb.HasModelResponse(has_model=True)

    def OpenSession(self, request, context):
        return pb.OpenSessionResponse(session_id="s1", lease_ms=request.lease_ms)

    def Heartbeat(self, request, context):
        return pb.HeartbeatResponse(lease_ms=1000)

    def CloseSession(self, request, context):
        return pb.CloseSessionResponse()

    def Run(self, request, context):
        self.runs += 1
        self.metadata.append(dict(context.invocation_metadata()))
        if self.runs <= self.busy:
            context.set_trailing_metadata((("grpc-retry-pushback-ms", "40"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full; retry in about 40 ms")
        z = request.inputs[0]
        return pb.RunResponse(outputs=[pb.Tensor(name="w", datatype=z.datatype, shape=z.shape,
                                                 raw_contents=z.raw_contents)])


def test_resource_exhausted_from_a_server_is_retried_after_its_pushback():
    servicer = BusyServer(busy=2)
    server = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_RemoteServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with sdx.remote.InferenceSession(f"127.0.0.1:{port}", scale_model().SerializeToString(),
                                         token="secret", backoff_base_s=5.0) as sess:
            z = np.arange(4, dtype=np.float32).reshape(2, 2)
            started = time.monotonic()
            (w,) = sess.run(None, {"z": z})
            waited = time.monotonic() - started
        assert w.tobytes() == z.tobytes() and servicer.runs == 3
        assert 0.08 <= waited < 2.0  # two hints of 40 ms, not the 5 s backoff base
        md = servicer.metadata[-1]
        assert md["authorization"] == "Bearer secret" and md["sdx-session"] == "s1"
    finally:
        server.stop(0)


class FakeError(grpc.RpcError):
    def __init__(self, code, pushback=None):
        self._code, self._pushback = code, pushback

    def code(self):
        return self._code

    def details(self):
        return "fake"

    def trailing_metadata(self):
        return (("grpc-retry-pushback-ms", str(self._pushback)),) if self._pushback is not None else ()


def test_backoff_is_exponential_with_full_jitter_and_capped():
    p = RetryPolicy(base_s=0.1, cap_s=0.5)
    assert [p.backoff(k, rng=lambda: 1.0) for k in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    assert p.backoff(3, rng=lambda: 0.0) == 0.0
    assert p.backoff(2, rng=lambda: 0.5) == pytest.approx(0.2)


def test_resource_exhausted_is_retried_with_the_servers_pushback():
    fails = [FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, pushback=250), FakeError(grpc.StatusCode.UNAVAILABLE)]
    slept = []

    def attempt():
        if fails:
            raise fails.pop(0)
        return "ok"

    out = call_with_retries(attempt, lambda e: pushback_s(e, "Run"), RetryPolicy(base_s=0.1, cap_s=1.0),
                            CircuitBreaker(5, 1.0), "Run", sleep=slept.append, rng=lambda: 1.0)
    assert out == "ok" and slept == [0.25, 0.2]  # the hint, then the backoff of the second retry
    # Not transient: raised at once. An upload over the server's limit is not retried either.
    assert pushback_s(FakeError(grpc.StatusCode.INVALID_ARGUMENT), "Run") is None
    assert pushback_s(FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED), "RegisterModel") is None
    with pytest.raises(FakeError):
        call_with_retries(lambda: (_ for _ in ()).throw(FakeError(grpc.StatusCode.NOT_FOUND)),
                          lambda e: pushback_s(e, "Run"), RetryPolicy(), CircuitBreaker(), "Run", sleep=slept.append)


def test_retries_are_bounded_in_attempts_and_time():
    calls, now = [], [0.0]

    def attempt():
        calls.append(1)
        raise FakeError(grpc.StatusCode.UNAVAILABLE)

    with pytest.raises(sdx.RemoteUnavailable, match="after 4 attempt"):
        call_with_retries(attempt, lambda e: pushback_s(e, "Run"), RetryPolicy(max_attempts=4), CircuitBreaker(99),
                          "Run", sleep=lambda s: None)
    calls.clear()

    def sleep(s):
        now[0] += s

    with pytest.raises(sdx.RemoteUnavailable):  # each wait is 1 s: the 2.5 s budget allows two
        call_with_retries(attempt, lambda e: 1.0, RetryPolicy(max_attempts=100, total_s=2.5), CircuitBreaker(99),
                          "Run", sleep=sleep, clock=lambda: now[0])
    assert len(calls) == 3


def test_circuit_breaker_opens_probes_and_closes():
    now = [0.0]
    b = CircuitBreaker(failure_threshold=3, cooldown_s=10.0, clock=lambda: now[0])
    for _ in range(2):
        b.before_call("Run")
        b.record_failure()
    assert b.state == "closed"
    b.before_call("Run")
    b.record_failure()
    assert b.state == "open"
    with pytest.raises(sdx.RemoteUnavailable, match="circuit breaker open"):
        b.before_call("Run")
    now[0] = 10.0
    assert b.state == "half-open"
    b.before_call("Run")  # the probe goes through ...
    with pytest.raises(sdx.RemoteUnavailable):
        b.before_call("Run")  # ... alone
    b.record_failure()  # the probe failed: open for another cool-down
    assert b.state == "open"
    now[0] = 20.0
    b.before_call("Run")
    b.record_success()
    assert b.state == "closed"
    b.before_call("Run")


def test_open_breaker_fails_fast_without_calling():
    b = CircuitBreaker(failure_threshold=1, cooldown_s=60.0)
    calls = []

    def attempt():
        calls.append(1)
        raise FakeError(grpc.StatusCode.UNAVAILABLE)

    with pytest.raises(sdx.RemoteUnavailable):
        call_with_retries(attempt, lambda e: pushback_s(e, "Run"), RetryPolicy(max_attempts=5), b, "Run",
                          sleep=lambda s: None)
    assert len(calls) == 1  # opened at the first failure: the retry met the open breaker
    with pytest.raises(sdx.RemoteUnavailable, match="circuit breaker open"):
        call_with_retries(attempt, lambda e: 0.0, RetryPolicy(), b, "Run")
    assert len(calls) == 1


class LostAnswerServer(pb_grpc.RemoteServiceServicer):
    """OpenSession takes the proposed id, then loses its answer (UNAVAILABLE) once: the client's retry gets
    ALREADY_EXISTS, as from sdx serve, and must take the session as its own (confirmed by a Heartbeat)."""

    def __init__(self):
        self.ids, self.open_metadata, self.heartbeats = set(), [], 0

    def OpenSession(self, request, context):
        self.open_metadata.append((request.session_id, dict(context.invocation_metadata())))
        if request.session_id in self.ids:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, f"session '{request.session_id}' is already open")
        self.ids.add(request.session_id)
        context.abort(grpc.StatusCode.UNAVAILABLE, "the answer was lost")

    def Heartbeat(self, request, context):
        self.heartbeats += 1
        if request.session_id not in self.ids:
            context.abort(grpc.StatusCode.NOT_FOUND, "no such session")
        return pb.HeartbeatResponse(lease_ms=7000)

    def CloseSession(self, request, context):
        self.ids.discard(request.session_id)
        return pb.CloseSessionResponse()


def test_connection_proposes_its_session_id_and_survives_a_lost_open_answer():
    servicer = LostAnswerServer()
    server = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_RemoteServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with sdx.remote.Connection(f"127.0.0.1:{port}", lease_s=60, backoff_base_s=0.01) as conn:
            sid = conn.session_id
            assert len(sid) == 32 and int(sid, 16) >= 0  # uuid4 hex
            assert conn.lease_s == 7.0 and servicer.heartbeats >= 1
            # Both attempts proposed the same id, in the field and as the affinity key.
            assert [(r, md.get("sdx-session")) for r, md in servicer.open_metadata] == [(sid, sid)] * 2
        assert sid not in servicer.ids  # closed
        # Another Connection proposes another id; a caller's own id whose open fails is not taken over.
        servicer.ids.add("z" * 20)
        with pytest.raises(sdx.Fail, match="ALREADY_EXISTS"):
            sdx.remote.Connection(f"127.0.0.1:{port}", session_id="z" * 20)
    finally:
        server.stop(0)


# ---------------------------------------------------------------------------------------------------------
# Models by name: a model of the server's repository, run through sdx.v1 (refs work for it too)

@pytest.fixture(scope="module")
def repo_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("client_repo_models")
    write_model(root, "mlp", 1, mlp_model())
    write_model(root, "scale", 1, scale_model())
    write_model(root, "scale", 2, scale_model())
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("client_repo") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port))
    try:
        yield f"127.0.0.1:{port}", metrics_port
    finally:
        stop_server(proc)


@needs_server
def test_repository_model_by_name(repo_server):
    address, metrics_port = repo_server
    local = sdx.InferenceSession(mlp_model().SerializeToString())
    x = np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32)
    ok_before = sample(scrape(metrics_port), "sdx_requests_total", model="mlp", status="OK")
    with sdx.remote.Connection(address) as conn:
        mlp = sdx.remote.InferenceSession(conn, "mlp")
        assert (mlp.model_name, mlp.model_version, mlp.fingerprint, mlp.uploaded) == ("mlp", "1", "", False)
        # get_inputs/get_outputs from the server's ModelMetadata: names and types as the local session's,
        # a dimension the model leaves free is None.
        for remote_args, local_args in ((mlp.get_inputs(), local.get_inputs()),
                                        (mlp.get_outputs(), local.get_outputs())):
            assert [(a.name, a.type) for a in remote_args] == [(a.name, a.type) for a in local_args]
            assert [[d if isinstance(d, int) else None for d in a.shape] for a in local_args] == \
                [a.shape for a in remote_args]
        got = mlp.run(None, {"x": x})
        want = local.run(None, {"x": x})
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        # Refs work for repository models: chained by name on the server, no bytes moved in between.
        scale = sdx.remote.InferenceSession(conn, "scale")
        assert scale.model_version == "2"  # the latest, pinned for every run
        assert sdx.remote.InferenceSession(conn, "scale", model_version="1").model_version == "1"
        (logits,) = mlp.run(["logits"], {"x": x}, keep_on_server=True)
        (w,) = scale.run(None, {"z": logits}, keep_on_server=True)
        want_w = sdx.InferenceSession(scale_model().SerializeToString()).run(None, {"z": want[1]})[0]
        assert w.numpy().tobytes() == want_w.tobytes()
    assert sample(scrape(metrics_port), "sdx_requests_total", model="mlp", status="OK") == ok_before + 2


@needs_server
def test_unknown_model_name_raises_naming_the_model_and_server(repo_server):
    address, metrics_port = repo_server
    # A string that is no existing file is a model name: a mistyped path is reported as an unknown model.
    for name, kw, what in (("no_such_model", {}, "model 'no_such_model'"),
                           ("mlp", {"model_version": "9"}, "model 'mlp' version 9"),
                           ("missing/file.onnx", {}, "model 'missing/file.onnx'")):
        with pytest.raises(sdx.remote.ModelNotFound) as e:
            sdx.remote.InferenceSession(address, name, **kw)
        msg = str(e.value)
        assert f"{what} is not in the repository of the server at {address}" in msg, msg
        assert isinstance(e.value, sdx.Fail) and isinstance(e.value, LookupError)
    assert sample(scrape(metrics_port), "sdx_sessions_open") == 0  # each failed session closed its Connection
    with pytest.raises(TypeError, match="model_version"):
        sdx.remote.InferenceSession(address, mlp_model().SerializeToString(), model_version="1")
