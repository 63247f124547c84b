"""Several `sdx serve` processes on loopback behind gRPC client-side load balancing (issue 19 item 5):

- KServe v2 ModelInfer is stateless: one grpcio channel to `ipv4:127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`
  with the round_robin policy spreads the calls over all three servers (each one's /metrics counts its
  share), and every answer is right.
- sdx.v1 sessions are not: a session, its refs and the models registered for it live in one process. A
  session id sent to another process is NOT_FOUND, cleanly, which is why sessions need affinity. The
  client here pins a sub-channel per session (AffinityClient): OpenSession on the next server in turn, and
  every later call of that session on the same sub-channel, its id also in the metadata key `sdx-session`
  (what an L7 balancer hashes on, deploy/envoy/envoy.yaml).
- The same session calls over the round-robin channel instead fail on the servers that do not hold the
  session: round-robin alone is not enough for sdx.v1.
- With client-proposed session ids, an L7 balancer that hashes on `sdx-session` routes a whole session,
  OpenSession included, to one server. HashingChannel emulates it (explicit choice of a server's channel by
  a hash of each call's sdx-session value) under the unchanged sdx.remote client: every call of a session
  lands on the server that opened it, and sessions spread over the servers."""
from __future__ import annotations

import hashlib
import itertools
import random
import uuid

import numpy as np
import pytest

from test_serve import grpcclient, start_server, stop_server, write_model  # noqa: F401 (skips without tritonclient)
from test_serve_admission import free_port, sample, scrape
from test_serve_faults import add_model, wait_ready

grpc = pytest.importorskip("grpc", reason="pip install grpcio (scripts/setup.sh)")
pytest.importorskip("sdx._proto.remote_pb2_grpc", reason="sdx built without grpcio-tools: no sdx.v1 stubs")
from sdx._proto import remote_pb2 as pb, remote_pb2_grpc as pb_grpc  # noqa: E402
from sdx.serve import find_server  # noqa: E402
from tritonclient.grpc import service_pb2, service_pb2_grpc  # noqa: E402 (KServe v2 stubs, as tritonclient ships them)

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

SERVERS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster_models")
    write_model(root, "add", 1, add_model())
    logs = tmp_path_factory.mktemp("cluster")
    procs, ports, metrics_ports = [], [], []
    try:
        for i in range(SERVERS):
            metrics_port = free_port()
            proc, port = start_server(root, logs / f"server{i}.log", "--metrics-port", str(metrics_port))
            procs.append(proc)
            wait_ready(port, logs / f"server{i}.log")
            ports.append(port)
            metrics_ports.append(metrics_port)
        yield ports, metrics_ports
    finally:
        for proc in procs:
            assert stop_server(proc) == 0


def round_robin_channel(ports):
    target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)
    return grpc.insecure_channel(target, options=[("grpc.lb_policy_name", "round_robin")])


def infer_request(a, b):
    req = service_pb2.ModelInferRequest(model_name="add")
    for name, v in (("a", a), ("b", b)):
        t = req.inputs.add()
        t.name, t.datatype = name, "FP32"
        t.shape.extend(v.shape)
        req.raw_input_contents.append(v.tobytes())
    return req


def test_round_robin_spreads_modelinfer_over_every_server(cluster):
    ports, metrics_ports = cluster
    before = [sample(scrape(m), "sdx_requests_total", model="add", status="OK") for m in metrics_ports]
    calls = 30
    rng = np.random.default_rng(0)
    with round_robin_channel(ports) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        for _ in range(calls):
            a = rng.standard_normal((2, 16)).astype(np.float32)
            b = rng.standard_normal((2, 16)).astype(np.float32)
            r = stub.ModelInfer(infer_request(a, b), timeout=30)
            got = np.frombuffer(r.raw_output_contents[0], np.float32).reshape(2, 16)
            assert got.tobytes() == (a + b).tobytes()
    share = [sample(scrape(m), "sdx_requests_total", model="add", status="OK") - b
             for m, b in zip(metrics_ports, before)]
    print(f"ModelInfer over {SERVERS} servers by round_robin: {share}")
    assert sum(share) == calls
    # round_robin starts once every sub-channel is ready, then takes them in turn: an even share, give or
    # take the calls made while the last sub-channels were still connecting.
    assert all(s >= calls // SERVERS - 3 for s in share), share


class AffinityClient:
    """sdx.v1 over several servers: a sub-channel per server, and each session pinned to the server that
    opened it (session id -> sub-channel). Stateless calls could take any sub-channel; a session's must not."""

    def __init__(self, ports):
        self.channels = [grpc.insecure_channel(f"127.0.0.1:{p}") for p in ports]
        self.stubs = [pb_grpc.RemoteServiceStub(c) for c in self.channels]
        self._next = itertools.cycle(range(len(ports)))
        self.pinned: dict[str, int] = {}

    def open_session(self, lease_ms=60000) -> str:
        i = next(self._next)
        sid = self.stubs[i].OpenSession(pb.OpenSessionRequest(lease_ms=lease_ms), timeout=30).session_id
        self.pinned[sid] = i
        return sid

    def call(self, sid: str, rpc: str, request, **kw):
        """A call of session `sid`, on its server; the id also goes in `sdx-session` (the affinity key)."""
        return getattr(self.stubs[self.pinned[sid]], rpc)(request, timeout=30, metadata=[("sdx-session", sid)], **kw)

    def close(self):
        for c in self.channels:
            c.close()


def register(stub, data: bytes) -> str:
    fp = "sha256:" + hashlib.sha256(data).hexdigest()
    if not stub.HasModel(pb.HasModelRequest(fingerprint=fp), timeout=30).has_model:
        stub.RegisterModel(iter([pb.ModelChunk(data=data)]), timeout=60)
    return fp


def run_request(sid, fp, a, b, keep=False):
    return pb.RunRequest(session_id=sid, fingerprint=fp,
                         inputs=[pb.Tensor(name=n, datatype="FP32", shape=list(v.shape), raw_contents=v.tobytes())
                                 for n, v in (("a", a), ("b", b))],
                         outputs=[pb.RunRequest.RequestedOutput(name="sum", keep_on_server=keep)])


def remote_calls(metrics_port) -> float:
    text = scrape(metrics_port)
    return sum(sample(text, "sdx_remote_requests_total", rpc=rpc, status="OK") for rpc in ("Run", "Fetch", "Heartbeat"))


def test_sessions_pinned_to_their_server_and_refused_elsewhere(cluster):
    ports, metrics_ports = cluster
    client = AffinityClient(ports)
    data = add_model().SerializeToString()
    rng = np.random.default_rng(1)
    try:
        sessions = [client.open_session() for _ in range(SERVERS)]  # one on each server
        assert sorted(client.pinned.values()) == list(range(SERVERS))
        for sid in sessions:
            fp = register(client.stubs[client.pinned[sid]], data)
            before = [remote_calls(m) for m in metrics_ports]
            a, b = (rng.standard_normal((3, 16)).astype(np.float32) for _ in range(2))
            kept = client.call(sid, "Run", run_request(sid, fp, a, b, keep=True)).kept[0]
            for _ in range(5):  # the ref chains on its own server, call after call
                kept = client.call(sid, "Run", pb.RunRequest(
                    session_id=sid, fingerprint=fp,
                    ref_inputs=[pb.RunRequest.RefInput(name="a", ref_id=kept.ref_id)],
                    inputs=[pb.Tensor(name="b", datatype="FP32", shape=[3, 16], raw_contents=b.tobytes())],
                    outputs=[pb.RunRequest.RequestedOutput(name="sum", keep_on_server=True)])).kept[0]
                a = a + b
            fetched = client.call(sid, "Fetch", pb.FetchRequest(session_id=sid, ref_id=kept.ref_id)).tensor
            assert fetched.raw_contents == (a + b).tobytes()
            client.call(sid, "Heartbeat", pb.HeartbeatRequest(session_id=sid))
            moved = [remote_calls(m) - x for m, x in zip(metrics_ports, before)]
            home = client.pinned[sid]
            assert moved[home] == 8 and sum(moved) == 8, moved  # 6 Runs, a Fetch, a Heartbeat: all at home

        # The same session id on another process: refused cleanly, NOT_FOUND naming the session.
        sid = sessions[0]
        home = client.pinned[sid]
        for other in (i for i in range(SERVERS) if i != home):
            for rpc, req in (("Heartbeat", pb.HeartbeatRequest(session_id=sid)),
                             ("Fetch", pb.FetchRequest(session_id=sid, ref_id=1))):
                with pytest.raises(grpc.RpcError) as e:
                    getattr(client.stubs[other], rpc)(req, timeout=30, metadata=[("sdx-session", sid)])
                assert e.value.code() == grpc.StatusCode.NOT_FOUND, (rpc, e.value.code(), e.value.details())
                assert sid in e.value.details() or "session" in e.value.details(), e.value.details()
        # Its home server still has it: the refusals elsewhere did not disturb it.
        client.call(sid, "Heartbeat", pb.HeartbeatRequest(session_id=sid))

        # Round-robin without affinity: the session's calls reach all three servers, and two of them
        # refuse it (NOT_FOUND) — the reason sessions need a pinned sub-channel or a hashing balancer.
        codes = []
        with round_robin_channel(ports) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            stub = pb_grpc.RemoteServiceStub(channel)
            for _ in range(3 * SERVERS):
                try:
                    stub.Heartbeat(pb.HeartbeatRequest(session_id=sid), timeout=30)
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as e:
                    codes.append(e.code())
        assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.NOT_FOUND}, codes
        assert codes.count(grpc.StatusCode.NOT_FOUND) >= codes.count(grpc.StatusCode.OK), codes

        for sid in sessions:
            assert client.call(sid, "CloseSession", pb.CloseSessionRequest(session_id=sid)).refs_freed >= 1
        assert all(sample(scrape(m), "sdx_sessions_open") == 0 for m in metrics_ports)
        assert all(sample(scrape(m), "sdx_remote_refs") == 0 for m in metrics_ports)
    finally:
        client.close()


def test_sdx_remote_connection_per_server_keeps_its_session(cluster):
    """sdx.remote as it is: a Connection is one server's session (its channel names one address), so a
    client with several servers holds a Connection per server; each one's refs chain on its own server."""
    import sdx.remote

    ports, metrics_ports = cluster
    data = add_model().SerializeToString()
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    conns = [sdx.remote.Connection(f"127.0.0.1:{p}", lease_s=5) for p in ports]
    try:
        for i, conn in enumerate(conns):
            sess = sdx.remote.InferenceSession(conn, data)
            (s,) = sess.run(None, {"a": x, "b": x}, keep_on_server=True)
            (t,) = sess.run(None, {"a": s, "b": x}, keep_on_server=True)
            assert t.numpy().tobytes() == (3 * x).tobytes()
            assert sample(scrape(metrics_ports[i]), "sdx_remote_refs") == 2
    finally:
        for conn in conns:
            conn.close()
    assert all(sample(scrape(m), "sdx_sessions_open") == 0 for m in metrics_ports)


class HashingChannel:
    """An L7 balancer in miniature, as a grpc.Channel: each call goes to the server picked by a hash of its
    `sdx-session` metadata value (as Envoy's RING_HASH on that header, deploy/envoy/envoy.yaml); a call without
    the key goes to the first server. `routed` records (method, session, server index) for every call."""

    def __init__(self, ports):
        self.channels = [grpc.insecure_channel(f"127.0.0.1:{p}") for p in ports]
        self.routed: list = []

    def pick(self, metadata) -> tuple:
        sid = dict(metadata or ()).get("sdx-session", "")
        i = int(hashlib.sha256(sid.encode()).hexdigest(), 16) % len(self.channels) if sid else 0
        return sid, i

    def _multi(self, kind, method, *args, **kwargs):
        per_channel = [getattr(c, kind)(method, *args, **kwargs) for c in self.channels]
        outer = self

        class MultiCallable:
            def __call__(self, request, timeout=None, metadata=None, **kw):
                sid, i = outer.pick(metadata)
                outer.routed.append((method.rsplit("/", 1)[-1], sid, i))
                return per_channel[i](request, timeout=timeout, metadata=metadata, **kw)

        return MultiCallable()

    def unary_unary(self, method, *args, **kwargs):
        return self._multi("unary_unary", method, *args, **kwargs)

    def stream_unary(self, method, *args, **kwargs):
        return self._multi("stream_unary", method, *args, **kwargs)

    def unary_stream(self, method, *args, **kwargs):
        return self._multi("unary_stream", method, *args, **kwargs)

    def stream_stream(self, method, *args, **kwargs):
        return self._multi("stream_stream", method, *args, **kwargs)

    def close(self):
        for c in self.channels:
            c.close()


def test_hashing_on_sdx_session_keeps_whole_sessions_on_one_server(cluster):
    """sdx.remote proposes its session id and sends it as sdx-session from OpenSession on: behind a balancer
    that hashes on it, OpenSession and every later call of a session land on one server (the server's own
    counts agree), refs chain there, and 12 sessions spread over the 3 servers."""
    import sdx.remote

    ports, metrics_ports = cluster
    data = add_model().SerializeToString()
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    balancer = HashingChannel(ports)
    sessions = 12
    # Random 128-bit ids as sdx.remote makes them (uuid4 hex), from a seeded generator so that the spread
    # checked below is the same on every run (with unseeded ids a server would get none of 12 in 2% of runs).
    rng = random.Random(19)
    ids = [uuid.UUID(int=rng.getrandbits(128), version=4).hex for _ in range(sessions)]
    opened_before = [sample(scrape(m), "sdx_remote_requests_total", rpc="OpenSession", status="OK")
                     for m in metrics_ports]
    try:
        homes = {}
        for proposed in ids:
            with sdx.remote.Connection("hashed-cluster", lease_s=30, channel=balancer, session_id=proposed) as conn:
                sess = sdx.remote.InferenceSession(conn, data)
                (s,) = sess.run(None, {"a": x, "b": x}, keep_on_server=True)
                (t,) = sess.run(None, {"a": s, "b": x}, keep_on_server=True)  # a ref: fails off its server
                assert t.numpy().tobytes() == (3 * x).tobytes()
                sid = conn.session_id
                assert sid == proposed
            calls = [(m, i) for m, s_, i in balancer.routed if s_ == sid]
            methods = [m for m, _ in calls]
            assert methods[0] == "OpenSession" and "Run" in methods and methods[-1] == "CloseSession", methods
            servers = {i for _, i in calls}
            assert len(servers) == 1, calls  # the whole session, OpenSession included, on one server
            homes[sid] = servers.pop()
        # Calls without a session (HasModel, RegisterModel) carry no key: the sdx.remote client sends the
        # key on every call, so there are none.
        assert all(s_ for _, s_, _ in balancer.routed), [r for r in balancer.routed if not r[1]]
        spread = [list(homes.values()).count(i) for i in range(SERVERS)]
        print(f"{sessions} sessions hashed on sdx-session over {SERVERS} servers: {spread}")
        assert all(n >= 1 for n in spread), spread
        opened = [sample(scrape(m), "sdx_remote_requests_total", rpc="OpenSession", status="OK") - b
                  for m, b in zip(metrics_ports, opened_before)]
        assert opened == spread, (opened, spread)  # each server opened exactly the sessions hashed to it
        assert all(sample(scrape(m), "sdx_sessions_open") == 0 for m in metrics_ports)
    finally:
        balancer.close()
