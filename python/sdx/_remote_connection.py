"""sdx.remote.Connection: one session of `sdx serve`'s sdx.v1 service, over one gRPC channel: the lease and
its heartbeat thread, the calls under the retry policy and the circuit breaker (sdx/_retry.py), the bearer
token. Every sdx.remote.InferenceSession runs on a Connection (its own, or one shared so that refs chain
between models: refs are scoped to the server's session).

The session id is the client's: 32 random hex digits (uuid4, 122 random bits) proposed in OpenSession and sent
as the gRPC metadata key `sdx-session` on OpenSession and every later call, so that an L7 balancer hashing on
that key (deploy/envoy/envoy.yaml) sends the whole session, OpenSession included, to the server that holds it.
A server that predates proposed ids makes its own; the client then uses that one."""
from __future__ import annotations

import threading
import uuid
import weakref
from typing import Any, Optional, Sequence

from . import _sdx
from ._retry import CircuitBreaker, RetryPolicy, call_with_retries

try:
    import grpc
    from ._proto import remote_pb2 as pb
    from ._proto import remote_pb2_grpc as pb_grpc
except ImportError as e:  # pragma: no cover (depends on the installation)
    raise ImportError(f"sdx.remote needs grpcio and protobuf (pip install sdx-runtime[remote]) and the package's "
                      f"generated stubs sdx/_proto (built with grpcio-tools): {e}") from e

_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)
_ERRORS = {grpc.StatusCode.INVALID_ARGUMENT: _sdx.InvalidArgument, grpc.StatusCode.OUT_OF_RANGE: _sdx.OutOfRange,
           grpc.StatusCode.RESOURCE_EXHAUSTED: _sdx.ResourceExhausted,
           grpc.StatusCode.FAILED_PRECONDITION: _sdx.FailedPrecondition,
           grpc.StatusCode.UNIMPLEMENTED: _sdx.NotImplemented}


def pushback_s(e: BaseException, rpc: str) -> Optional[float]:
    """None: not transient. Else the server's retry hint in seconds (0: none given)."""
    code = e.code() if isinstance(e, grpc.RpcError) and hasattr(e, "code") else None
    if code not in _RETRYABLE or (rpc == "RegisterModel" and code == grpc.StatusCode.RESOURCE_EXHAUSTED):
        return None  # an upload over --max-model-bytes stays over it
    trailing = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
    for key, value in trailing or ():
        if key == "grpc-retry-pushback-ms":
            try:
                return max(0.0, int(value) / 1000.0)
            except ValueError:
                pass
    return 0.0


def _heartbeats(stub: Any, session_id: str, metadata: list, interval_s: float, timeout_s: float,
                stop: threading.Event, state: dict) -> None:
    """The lease's renewal loop. It holds no reference to the Connection, so a dropped one is collected
    (weakref.finalize sets `stop`) and the server frees its session when the lease runs out."""
    while not stop.wait(interval_s):
        try:
            stub.Heartbeat(pb.HeartbeatRequest(session_id=session_id), timeout=timeout_s, metadata=metadata)
            state["error"] = None
        except grpc.RpcError as e:
            state["error"] = e  # transient: the next beat tries again; NOT_FOUND: the lease is gone
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return


def _stop_and_close(stop: threading.Event, channel: Any) -> None:
    stop.set()
    if channel is not None:  # None: a channel the caller gave, theirs to close
        channel.close()


class Connection:
    """A session of sdx serve at `address` ("host:port"): a lease renewed every lease/3 by a background
    thread until close(). A context manager.

    lease_s: the lease (default 30 s; the server clamps it to 0.1 s .. 10 min).
    token: sent as `authorization: Bearer <token>` on every call (sdx serve --auth-token-file checks it).
    credentials: grpc.ChannelCredentials for TLS (default: a plaintext channel).
    timeout_s: the deadline of each call (default 60 s).
    max_attempts, backoff_base_s, backoff_cap_s, retry_total_s: retries of UNAVAILABLE and RESOURCE_EXHAUSTED
    (defaults: 5 calls in all, 50 ms, 2 s, 30 s). failure_threshold, cooldown_s: the circuit breaker opens
    after this many consecutive transient failures (default 5) and lets one probe through after the
    cool-down (default 5 s); while open, calls raise sdx.RemoteUnavailable at once.
    channel_options: passed to gRPC (e.g. message size limits).
    channel: a grpc.Channel to call through instead of dialing `address` (e.g. one with its own balancing or
    interceptors); the Connection does not close it. `address` then only names the server in messages.
    session_id: the id to propose (default: uuid4().hex); 16 to 64 of [A-Za-z0-9_-].
    """

    def __init__(self, address: str, *, lease_s: float = 30.0, token: Optional[str] = None, credentials: Any = None,
                 timeout_s: float = 60.0, max_attempts: int = 5, backoff_base_s: float = 0.05,
                 backoff_cap_s: float = 2.0, retry_total_s: float = 30.0, failure_threshold: int = 5,
                 cooldown_s: float = 5.0, channel_options: Sequence[tuple] = (), channel: Any = None,
                 session_id: Optional[str] = None) -> None:
        self.closed = True  # until the session is open
        self.address = address
        # Proposed now and sent (metadata()) with OpenSession itself: the balancer routes it by this id.
        self.session_id = uuid.uuid4().hex if session_id is None else session_id
        self._own_id = session_id is None
        self.timeout_s = timeout_s
        self.policy = RetryPolicy(max_attempts, backoff_base_s, backoff_cap_s, retry_total_s)
        self.breaker = CircuitBreaker(failure_threshold, cooldown_s)
        self._auth = [("authorization", f"Bearer {token}")] if token else []
        options = list(channel_options)
        if channel is not None:
            self._channel, owned = channel, False
        else:
            self._channel, owned = (grpc.secure_channel(address, credentials, options) if credentials is not None
                                    else grpc.insecure_channel(address, options)), True
        self.stub = pb_grpc.RemoteServiceStub(self._channel)
        try:
            lease_ms = self._open(max(1, int(lease_s * 1000)))
        except BaseException:
            if owned:
                self._channel.close()
            raise
        self.lease_s = lease_ms / 1000.0
        self.closed = False
        self._stop = threading.Event()
        self._heartbeat_state: dict = {"error": None}
        self._heartbeat = threading.Thread(
            target=_heartbeats, name=f"sdx.remote heartbeat {self.session_id[:8]}", daemon=True,
            args=(self.stub, self.session_id, self.metadata(), self.lease_s / 3, min(timeout_s, self.lease_s),
                  self._stop, self._heartbeat_state))
        self._heartbeat.start()
        self._finalizer = weakref.finalize(self, _stop_and_close, self._stop, self._channel if owned else None)

    def _open(self, lease_ms: int) -> int:
        """OpenSession with the proposed id; the lease granted. A retried OpenSession whose first attempt
        reached the server (its answer lost) is ALREADY_EXISTS: the id is ours (128 random bits), so the
        session is confirmed by a Heartbeat instead."""
        req = pb.OpenSessionRequest(lease_ms=lease_ms, session_id=self.session_id)
        try:
            opened = self.call("OpenSession", req)
        except _sdx.Fail as e:
            cause = e.__cause__
            if not (self._own_id and isinstance(cause, grpc.RpcError)
                    and cause.code() == grpc.StatusCode.ALREADY_EXISTS):
                raise  # a caller's own id that another client holds is theirs to resolve
            return self.call("Heartbeat", pb.HeartbeatRequest(session_id=self.session_id)).lease_ms
        if opened.session_id != self.session_id:  # a server that makes its own ids
            self.session_id = opened.session_id
        return opened.lease_ms

    def close(self) -> None:
        """Closes the server's session (freeing its refs), stops the heartbeats, closes the channel."""
        if self.closed:
            return
        self.closed = True
        self._stop.set()
        try:
            self.stub.CloseSession(pb.CloseSessionRequest(session_id=self.session_id),
                                   timeout=min(self.timeout_s, 5.0), metadata=self.metadata())
        except grpc.RpcError:
            pass  # the server is gone or the lease ran out: the session is freed there either way
        finally:
            self._heartbeat.join(timeout=5.0)
            self._finalizer()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def metadata(self) -> list:
        return ([("sdx-session", self.session_id)] if self.session_id else []) + self._auth

    def check_open(self) -> None:
        if self.closed:
            raise _sdx.FailedPrecondition("sdx.remote: the session is closed")
        err = self._heartbeat_state["error"]
        if err is not None and err.code() == grpc.StatusCode.NOT_FOUND:
            raise _sdx.FailedPrecondition(f"sdx.remote: the server dropped session {self.session_id} "
                                          f"(its lease ran out): {err.details()}")

    def call(self, rpc: str, request: Any, stream: Optional[Any] = None) -> Any:
        """One unary RPC (or, with `stream`, a client-streaming one: a function that makes the request
        iterator anew for each attempt) under the retry policy and the breaker; gRPC errors other than the
        transient ones become sdx exceptions naming the RPC and the status."""
        method = getattr(self.stub, rpc)

        def attempt() -> Any:
            return method(stream() if stream is not None else request, timeout=self.timeout_s,
                          metadata=self.metadata())

        try:
            return call_with_retries(attempt, lambda e: pushback_s(e, rpc), self.policy, self.breaker,
                                     f"{rpc} at {self.address}")
        except grpc.RpcError as e:
            raise _ERRORS.get(e.code(), _sdx.Fail)(f"sdx.remote: {rpc}: {e.code().name}: {e.details()}") from e
