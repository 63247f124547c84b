"""onnxruntime's lower-level names (onnxruntime.capi._pybind_state, onnxruntime_pybind11_state and
onnxruntime_inference_collection), for code that imports them: alias the modules to this one.

    import sys, sdx, sdx.capi
    sys.modules["onnxruntime"] = sdx
    for name in ("capi", "capi._pybind_state", "capi.onnxruntime_pybind11_state",
                 "capi.onnxruntime_inference_collection"):
        sys.modules["onnxruntime." + name] = sdx.capi
"""
from __future__ import annotations

import sys

from ._sdx import (  # noqa: F401  (exception types)
    Fail,
    FailedPrecondition,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    IoError,
    NoSuchFile,
    OutOfRange,
    ResourceExhausted,
    SdxError,
)
from ._options import (  # noqa: F401
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
    get_default_session_options,
)
from ._ortvalue import (  # noqa: F401
    OrtDevice,
    OrtValue,
    OrtValueVector,
    SparseTensor,
    is_dlpack_uint8_tensor,
)
from ._providers import check_and_normalize_provider_args, get_all_providers, get_available_providers  # noqa: F401
from ._session import InferenceSession, NodeArg, ModelMetadata  # noqa: F401
from ._sdx import NotImplemented  # noqa: F401,A004 - onnxruntime's class name (this module has no __all__)

# onnxruntime's other error classes, by their names.
RuntimeException = Fail
EPFail = Fail

# The module names onnxruntime's submodules have, as attributes (`from onnxruntime.capi import _pybind_state`).
_pybind_state = sys.modules[__name__]
onnxruntime_pybind11_state = sys.modules[__name__]
onnxruntime_inference_collection = sys.modules[__name__]
