"""sdx.remote: an InferenceSession whose model runs in `sdx serve`, over its sdx.v1 service
(proto/sdx/v1/remote.proto). Needs grpcio and protobuf: `pip install sdx-runtime[remote]`.

    with sdx.remote.InferenceSession("127.0.0.1:8001", "mlp.onnx") as sess:
        (probs,) = sess.run(["probs"], {"x": x})                        # numpy arrays, as sdx.InferenceSession

    with sdx.remote.InferenceSession("127.0.0.1:8001", "add") as sess:  # a model of the server's repository
        (s,) = sess.run(None, {"a": a, "b": b})

    with sdx.remote.Connection("127.0.0.1:8001") as conn:                # one server session, two models
        mlp = sdx.remote.InferenceSession(conn, "mlp.onnx")
        scale = sdx.remote.InferenceSession(conn, "scale.onnx")
        (logits,) = mlp.run(["logits"], {"x": x}, keep_on_server=True)  # a RemoteTensor: shape, dtype now
        (w,) = scale.run(None, {"z": logits}, keep_on_server=True)       # chains on the server: no bytes move
        w.numpy()                                                        # fetches the bytes, once

A model given as bytes, or as the path of an existing file, is registered by fingerprint (sha256 of its
bytes): uploaded in chunks only when the server lacks it. Any other string names a model of the server's
repository (`sdx serve --model-repository`, the models KServe's ModelInfer serves); it runs through sdx.v1 Run
by name, so keep_on_server and refs work for it as for uploaded models (KServe's ModelInfer has no refs, and
the client would otherwise carry a second copy of KServe's protobuf messages, which clashes with
tritonclient's in one process). A name the server does not have raises sdx.remote.ModelNotFound naming the
model and the server. The Connection (sdx/_remote_connection.py) holds the server's session: its lease, renewed by a background
thread every lease/3; retries of UNAVAILABLE and RESOURCE_EXHAUSTED with exponential backoff and full jitter
(the server's `grpc-retry-pushback-ms` wins when it sends one); a circuit breaker that fails fast with
sdx.RemoteUnavailable once open (sdx/_retry.py). get_inputs()/get_outputs() of an uploaded model are read
from its bytes by sdx's own loader (sdx.inspect_model), on the client; a repository model's come from the
server (sdx.v1 ModelMetadata; a dimension the model leaves free is None).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from . import _remote_codec as codec
from . import _sdx
from ._remote_connection import Connection, grpc, pb
from ._retry import RemoteUnavailable
from ._session import NodeArg

__all__ = ["InferenceSession", "Connection", "RemoteTensor", "RemoteUnavailable", "ModelNotFound", "fingerprint"]


class ModelNotFound(_sdx.Fail, LookupError):
    """The server has no model of that name (or version) in its repository."""


def fingerprint(data: bytes) -> str:
    """The server's name for a model: "sha256:" and the 64 lowercase hex digits of its bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class RemoteTensor:
    """An output kept on the server: its shape and dtype are known at once; numpy() fetches the bytes (once).
    Feed it to another run() of the same session to chain on the server; release() frees it there."""

    def __init__(self, conn: Connection, skeleton: Any) -> None:
        self._conn = conn
        self.name = skeleton.name
        self.ref_id = int(skeleton.ref_id)
        self.datatype = skeleton.datatype
        self.shape = tuple(int(d) for d in skeleton.shape)
        self.dtype = codec.numpy_dtype(skeleton.datatype)
        self.nbytes = int(skeleton.byte_size)
        self._value: Optional[np.ndarray] = None
        self._released = False

    def numpy(self) -> np.ndarray:
        if self._value is None:
            self._check_live()
            req = pb.FetchRequest(session_id=self._conn.session_id, ref_id=self.ref_id)
            self._value = codec.decode(self._conn.call("Fetch", req).tensor)
        return self._value

    def release(self) -> None:
        """Frees the server's copy (a fetched value stays readable here). A second release does nothing."""
        if not self._released and not self._conn.closed:
            self._conn.call("Release", pb.ReleaseRequest(session_id=self._conn.session_id, ref_ids=[self.ref_id]))
        self._released = True

    def _check_live(self) -> None:
        if self._released:
            raise _sdx.FailedPrecondition(f"sdx.remote: RemoteTensor '{self.name}' (ref {self.ref_id}) was released")
        if self._conn.closed:
            raise _sdx.FailedPrecondition(f"sdx.remote: RemoteTensor '{self.name}' (ref {self.ref_id}): "
                                          "its session is closed")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"RemoteTensor(name='{self.name}', shape={self.shape}, dtype={self.dtype}, ref_id={self.ref_id})"


class InferenceSession:
    """A model served by `sdx serve`, with sdx.InferenceSession's run / get_inputs / get_outputs.

    address: "host:port" of sdx serve, or a Connection to share (its server session, lease and channel: refs
    chain between the models of one Connection). model: a model path (an existing file) or the model's bytes,
    registered by fingerprint; or else the name of a model in the server's repository (model_version: its
    version, default the latest). `model_name` is that name, None for an uploaded model.
    Other keywords (lease_s, token, credentials, timeout_s, the retry and circuit breaker options) make this
    session's own Connection; see sdx.remote.Connection for them and their defaults.
    chunk_bytes: the upload's chunk size (default 1 MiB). `uploaded` says whether the bytes were sent.
    close() (or leaving a `with` block) closes an own Connection; a shared one stays open.
    """

    def __init__(self, address: "str | Connection", model: "str | bytes | os.PathLike", *,
                 chunk_bytes: int = 1 << 20, model_version: str = "", **connection_options: Any) -> None:
        data: Optional[bytes] = None
        self.model_name: Optional[str] = None
        self.model_version = ""
        self.fingerprint = ""
        if isinstance(model, (bytes, bytearray, memoryview)):
            data, path = bytes(model), None
        elif isinstance(model, os.PathLike) or (isinstance(model, str) and os.path.isfile(model)):
            path = os.fspath(model)
            with open(path, "rb") as f:
                data = f.read()
        elif isinstance(model, str) and model:
            self.model_name, path = model, None
        else:
            raise TypeError(f"sdx.remote: model must be a model path, the model's bytes or a model name of the "
                            f"server's repository, not {type(model).__name__} {model!r}")
        if data is not None:
            if model_version:
                raise TypeError("sdx.remote: model_version names a version of a repository model, not of uploaded bytes")
            self.fingerprint = fingerprint(data)
            self._inputs, self._outputs = _node_args(data, path)
        self._chunk_bytes = max(1, int(chunk_bytes))
        if isinstance(address, Connection):
            if connection_options:
                raise TypeError(f"sdx.remote: {sorted(connection_options)} belong to the shared Connection")
            self.connection, self._owns_connection = address, False
        else:
            self.connection, self._owns_connection = Connection(address, **connection_options), True
        try:
            if data is not None:
                self.uploaded = self._ensure_model(data)
            else:
                self.uploaded = False
                self._inputs, self._outputs = self._repository_model(model_version)
        except BaseException:
            self.close()
            raise

    def get_inputs(self) -> list:
        return list(self._inputs)

    def get_outputs(self) -> list:
        return list(self._outputs)

    def run(self, output_names: Optional[Sequence[str]], input_feed: dict, run_options: Any = None,
            keep_on_server: bool = False) -> list:
        """Outputs in the order of output_names (None: every output of the model): numpy arrays, or with
        keep_on_server=True RemoteTensors. RemoteTensors in input_feed are taken on the server (no bytes move);
        they must come from this session's Connection. A retried Run (UNAVAILABLE) may leave an unused ref on
        the server, freed with the session."""
        conn = self.connection
        conn.check_open()
        if not isinstance(input_feed, dict):
            raise TypeError(f"sdx.remote: input_feed must be a dict, not {type(input_feed).__name__}")
        names = [o.name for o in self._outputs] if not output_names else list(output_names)
        req = pb.RunRequest(session_id=conn.session_id, fingerprint=self.fingerprint,
                            model_name=self.model_name or "", model_version=self.model_version)
        for name, value in input_feed.items():
            if isinstance(value, RemoteTensor):
                if value._conn is not conn:
                    raise _sdx.InvalidArgument(
                        f"sdx.remote: input '{name}': RemoteTensor '{value.name}' (ref {value.ref_id}) belongs to "
                        "another session; refs are scoped to the session that made them (share a "
                        "sdx.remote.Connection between the models, or pass .numpy())")
                value._check_live()
                req.ref_inputs.add(name=name, ref_id=value.ref_id)
            else:
                req.inputs.append(codec.encode(pb.Tensor, name, value))
        for name in names:
            req.outputs.add(name=name, keep_on_server=bool(keep_on_server))
        resp = conn.call("Run", req)
        got = {t.name: codec.decode(t) for t in resp.outputs}
        got.update({k.name: RemoteTensor(conn, k) for k in resp.kept})
        missing = [n for n in names if n not in got]
        if missing:
            raise _sdx.Fail(f"sdx.remote: Run: the server's answer lacks outputs {missing}")
        return [got[n] for n in names]

    def close(self) -> None:
        """Closes this session's own Connection (CloseSession, heartbeats stopped, channel closed)."""
        if self._owns_connection:
            self.connection.close()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _repository_model(self, version: str) -> tuple:
        """Inputs and outputs of the repository model self.model_name, from the server's ModelMetadata; pins
        the version the server resolved (the latest, when none was asked), so that every run() uses it."""
        conn = self.connection
        try:
            meta = conn.call("ModelMetadata", pb.ModelMetadataRequest(model_name=self.model_name,
                                                                      model_version=version))
        except _sdx.Fail as e:
            cause = e.__cause__
            if isinstance(cause, grpc.RpcError) and cause.code() == grpc.StatusCode.NOT_FOUND:
                what = f"model '{self.model_name}'" + (f" version {version}" if version else "")
                raise ModelNotFound(
                    f"sdx.remote: {what} is not in the repository of the server at {conn.address} "
                    f"({cause.details()}); give a model file's path or bytes to upload one") from cause
            raise
        self.model_version = meta.version

        def args(tensors: Any) -> list:
            return [NodeArg(t.name, codec.onnx_type(t.datatype), [int(d) if d >= 0 else None for d in t.shape])
                    for t in tensors]

        return args(meta.inputs), args(meta.outputs)

    def _ensure_model(self, data: bytes) -> bool:
        """Registers the model unless the server holds it; True when its bytes were uploaded."""
        conn = self.connection
        if conn.call("HasModel", pb.HasModelRequest(fingerprint=self.fingerprint)).has_model:
            return False

        def chunks() -> Iterable[Any]:
            step = self._chunk_bytes
            for i in range(0, max(len(data), 1), step):
                yield pb.ModelChunk(data=data[i:i + step], fingerprint=self.fingerprint if i == 0 else "")

        resp = conn.call("RegisterModel", None, stream=chunks)
        if resp.fingerprint != self.fingerprint:
            raise _sdx.Fail(f"sdx.remote: the server registered {resp.fingerprint}, not {self.fingerprint}")
        return not resp.already_held


def _node_args(data: bytes, path: Optional[str]) -> tuple:
    """Inputs and outputs of the model as NodeArgs, read by sdx's loader (sdx.inspect_model) on the client."""
    if path is None:
        fd, tmp = tempfile.mkstemp(suffix=".onnx")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            info = _sdx.inspect_model(tmp)
        finally:
            os.unlink(tmp)
    else:
        info = _sdx.inspect_model(path)
    return [NodeArg(*x) for x in info["inputs"]], [NodeArg(*x) for x in info["outputs"]]
