"""sdx: a compile-once, replay-many inference engine for ONNX models.

    import sdx
    sess = sdx.InferenceSession("model.onnx")
    (y,) = sess.run(None, {"x": x})
"""
from __future__ import annotations

from . import _sdx
from ._sdx import (  # noqa: F401  (exception types)
    Fail,
    FailedPrecondition,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    IoError,
    NoSuchFile,
    NotImplemented,
    OutOfRange,
    ResourceExhausted,
    SdxError,
)
from ._session import InferenceSession, NodeArg, SessionOptions
from .bundle import compile_bundle

__version__ = "0.1.0"
__all__ = ["InferenceSession", "NodeArg", "SessionOptions", "SdxError", "InvalidArgument", "InvalidGraph", "NotImplemented",
           "InvalidProtobuf", "NoSuchFile", "get_available_providers", "inspect_model", "compile_bundle"]


def get_available_providers() -> list[str]:
    return ["CPUExecutionProvider"]


def inspect_model(path: str) -> dict:
    """Inputs, outputs, opsets, op histogram and unsupported ops of a model file."""
    return _sdx.inspect_model(str(path))
