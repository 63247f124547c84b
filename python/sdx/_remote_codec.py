"""numpy arrays <-> the sdx.v1 Tensor of sdx serve (KServe's encoding): datatype names ("FP32", "INT64",
"BYTES", ...), shapes and raw little-endian contents, BYTES as 4-byte little-endian length-prefixed elements.
Used by sdx.remote; free of gRPC (the message class is passed in)."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from . import _sdx

_NUMERIC = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}


def _bf16():
    import ml_dtypes  # a dependency of sdx; imported on use

    return np.dtype(ml_dtypes.bfloat16)


def numpy_dtype(datatype: str) -> np.dtype:
    """The numpy dtype of a KServe datatype name (BYTES: object)."""
    if datatype in _NUMERIC:
        return np.dtype(_NUMERIC[datatype])
    if datatype == "BF16":
        return _bf16()
    if datatype == "BYTES":
        return np.dtype(object)
    raise _sdx.NotImplemented(f"sdx.remote: the server answered datatype {datatype!r}, which has no numpy form here")


def datatype_of(arr: np.ndarray, name: str) -> str:
    if arr.dtype.kind in ("U", "S", "O"):
        return "BYTES"
    for dt, np_type in _NUMERIC.items():
        if arr.dtype == np.dtype(np_type):
            return dt
    if arr.dtype == _bf16():
        return "BF16"
    raise _sdx.InvalidArgument(f"sdx.remote: input '{name}': numpy element type {arr.dtype} has no KServe datatype")


def encode(tensor_cls: Any, name: str, value: Any) -> Any:
    """A tensor message of a feed value (arrays, lists and scalars as numpy reads them)."""
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    datatype = datatype_of(arr, name)
    if datatype == "BYTES":
        parts = []
        for x in arr.reshape(-1).tolist():
            b = x if isinstance(x, bytes) else str(x).encode()
            parts.append(struct.pack("<I", len(b)) + b)
        raw = b"".join(parts)
    else:
        raw = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return tensor_cls(name=name, datatype=datatype, shape=list(arr.shape), raw_contents=raw)


def decode(tensor: Any) -> np.ndarray:
    """The numpy array of a tensor message (BYTES: an object array of bytes)."""
    shape = [int(d) for d in tensor.shape]
    dtype = numpy_dtype(tensor.datatype)
    raw = tensor.raw_contents
    if tensor.datatype == "BYTES":
        items, at = [], 0
        while at < len(raw):
            (n,) = struct.unpack_from("<I", raw, at)
            items.append(raw[at + 4:at + 4 + n])
            at += 4 + n
        return np.array(items, dtype=object).reshape(shape)
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape).copy()


_ONNX_TYPES = {
    "BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64", "INT8": "int8",
    "INT16": "int16", "INT32": "int32", "INT64": "int64", "FP16": "float16", "FP32": "float", "FP64": "double",
    "BF16": "bfloat16", "BYTES": "string",
}


def onnx_type(datatype: str) -> str:
    """The ONNX type string (as NodeArg.type: "tensor(float)") of a KServe datatype name; "" (not a tensor of
    a KServe datatype): "unknown"."""
    return f"tensor({_ONNX_TYPES[datatype]})" if datatype in _ONNX_TYPES else "unknown"

