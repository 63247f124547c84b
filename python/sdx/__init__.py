"""sdx: a compile-once, replay-many inference engine for ONNX models.

    import sdx
    sess = sdx.InferenceSession("model.onnx")
    (y,) = sess.run(None, {"x": x})

The module offers onnxruntime's Python API under the same names (InferenceSession, SessionOptions,
RunOptions, OrtValue, IOBinding, the enums, get_available_providers, ...); code written for onnxruntime
runs with `import sdx as onnxruntime` (see sdx.capi for its lower-level module names).
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
from ._iobinding import SessionIOBinding
from ._lora import AdapterFormat, LoraAdapter
from ._module_info import (
    __version__,
    disable_telemetry_events,
    enable_telemetry_events,
    get_build_info,
    get_device,
    get_version_string,
    set_default_logger_callback,
    set_default_logger_severity,
    set_default_logger_verbosity,
)
from ._options import ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions, SessionOptions
from ._ortvalue import (
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDevice,
    OrtDeviceMemoryType,
    OrtDeviceVendorId,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
    OrtSparseFormat,
    OrtValue,
    OrtValueVector,
    SparseTensor,
    create_and_register_allocator,
    create_and_register_allocator_v2,
)
from ._providers import get_all_providers, get_available_providers
from ._retry import RemoteUnavailable  # sdx.remote's error; sdx.remote itself (grpcio) loads on first use
from ._session import InferenceSession, ModelMetadata, NodeArg
from .bundle import compile_bundle
from .generate import GenerationResult, generate, generate_stream
from .buckets import choose_buckets, choose_buckets_2d

IOBinding = SessionIOBinding

# `from sdx import *` exports no name that shadows a builtin: sdx.NotImplemented (an exception class)
# stays reachable as an attribute only.
__all__ = [
    "InferenceSession", "NodeArg", "ModelMetadata", "SessionOptions", "RunOptions", "GraphOptimizationLevel",
    "ExecutionMode", "ExecutionOrder", "OrtValue", "OrtValueVector", "SparseTensor", "OrtDevice", "OrtMemoryInfo",
    "OrtArenaCfg", "OrtAllocatorType", "OrtMemType", "OrtDeviceMemoryType", "OrtDeviceVendorId",
    "OrtMemoryInfoDeviceType", "OrtSparseFormat", "IOBinding", "SessionIOBinding", "AdapterFormat", "LoraAdapter",
    "SdxError", "Fail", "InvalidArgument", "InvalidGraph", "InvalidProtobuf", "NoSuchFile", "IoError",
    "OutOfRange", "ResourceExhausted", "FailedPrecondition", "RemoteUnavailable",
    "get_available_providers", "get_all_providers", "get_device", "get_version_string", "get_build_info",
    "set_default_logger_severity", "set_default_logger_verbosity", "set_default_logger_callback",
    "enable_telemetry_events", "disable_telemetry_events", "create_and_register_allocator",
    "create_and_register_allocator_v2", "inspect_model", "compile_bundle", "get_include", "get_lib_dir",
    "get_cmake_dir", "generate", "generate_stream", "GenerationResult", "choose_buckets", "choose_buckets_2d",
    "__version__",
]


def get_include() -> str:
    """The folder holding sdx/*.h (the C/C++ SDK's headers)."""
    from ._paths import get_include as f  # imported on use: `python -m sdx._paths` runs it as a script

    return f()


def get_lib_dir() -> str:
    """The folder holding libsdx.so."""
    from ._paths import get_lib_dir as f

    return f()


def get_cmake_dir() -> str:
    """The folder to put on CMAKE_PREFIX_PATH (or sdx_DIR) for find_package(sdx)."""
    from ._paths import get_cmake_dir as f

    return f()


def inspect_model(path: str) -> dict:
    """Inputs, outputs, opsets, op histogram and unsupported ops of a model file."""
    return _sdx.inspect_model(str(path))


def __getattr__(name: str):
    if name == "remote":  # `sdx.remote` without `import sdx.remote`; grpcio is imported only then
        import importlib

        return importlib.import_module(".remote", __name__)
    raise AttributeError(f"module 'sdx' has no attribute '{name}'")
