"""Element types across the Python boundary: numpy dtypes <-> sdx's type names (include/sdx/dtype_defs.inc)
<-> ONNX TensorProto codes, and the packing of sub-byte types (int4, uint4, int2, uint2, float4e2m1).

Types numpy lacks (bfloat16, float8, the sub-byte types) come from ml_dtypes, a dependency of onnx.
Sub-byte tensors cross into the engine packed, low bits first (the ONNX layout), and come back one
element per numpy item with the declared shape.
"""
from __future__ import annotations

from typing import Any

import numpy as np

# sdx name -> (ONNX code, numpy dtype or ml_dtypes name)
_TABLE: dict[str, tuple[int, Any]] = {
    "float": (1, np.float32), "uint8": (2, np.uint8), "int8": (3, np.int8), "uint16": (4, np.uint16),
    "int16": (5, np.int16), "int32": (6, np.int32), "int64": (7, np.int64), "string": (8, np.object_),
    "bool": (9, np.bool_), "float16": (10, np.float16), "double": (11, np.float64), "uint32": (12, np.uint32),
    "uint64": (13, np.uint64), "complex64": (14, np.complex64), "complex128": (15, np.complex128),
    "bfloat16": (16, "bfloat16"), "float8e4m3fn": (17, "float8_e4m3fn"), "float8e4m3fnuz": (18, "float8_e4m3fnuz"),
    "float8e5m2": (19, "float8_e5m2"), "float8e5m2fnuz": (20, "float8_e5m2fnuz"), "uint4": (21, "uint4"),
    "int4": (22, "int4"), "float4e2m1": (23, "float4_e2m1fn"), "float8e8m0": (24, "float8_e8m0fnu"),
    "uint2": (25, "uint2"), "int2": (26, "int2"),
}
# Bits per element of the packed types.
SUB_BYTE_BITS = {"uint4": 4, "int4": 4, "float4e2m1": 4, "uint2": 2, "int2": 2}
# Without ml_dtypes, the integer sub-byte types come back widened to one byte.
_WIDE_FALLBACK = {"uint4": np.uint8, "int4": np.int8, "uint2": np.uint8, "int2": np.int8}

NP_TO_SDX: dict[np.dtype, str] = {}
SDX_TO_NP: dict[str, np.dtype] = {}
ONNX_TO_SDX: dict[int, str] = {code: name for name, (code, _) in _TABLE.items()}
try:  # pragma: no cover - depends on the environment
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None
for _name, (_code, _np) in _TABLE.items():
    if isinstance(_np, str):
        if ml_dtypes is None or not hasattr(ml_dtypes, _np):
            continue
        _np = getattr(ml_dtypes, _np)
    _dt = np.dtype(_np)
    SDX_TO_NP[_name] = _dt
    if _name != "string":
        NP_TO_SDX[_dt] = _name


def numpy_dtype_of_onnx(code: int) -> np.dtype:
    name = ONNX_TO_SDX.get(int(code))
    if name is None:
        raise RuntimeError(f"sdx: {code} is not an ONNX element type (TensorProto.DataType)")
    if name not in SDX_TO_NP:
        raise RuntimeError(f"sdx: ONNX element type {code} ({name}) needs the ml_dtypes package (pip install ml_dtypes)")
    return SDX_TO_NP[name]


def sdx_name_of_numpy(dtype: np.dtype) -> str | None:
    name = NP_TO_SDX.get(dtype)  # before the kinds: ml_dtypes' types are of kind "V"
    if name is None and dtype.kind in ("U", "S", "O", "V"):
        return "string"
    return name


def onnx_type_of_numpy(dtype: np.dtype) -> int:
    name = sdx_name_of_numpy(np.dtype(dtype))
    if name is None:
        raise RuntimeError(f"sdx: numpy element type {dtype} has no ONNX element type")
    return _TABLE[name][0]


def type_string_of_numpy(dtype: np.dtype) -> str:
    """onnxruntime's type string, e.g. 'tensor(float)'."""
    name = sdx_name_of_numpy(np.dtype(dtype))
    if name is None:
        raise RuntimeError(f"sdx: numpy element type {dtype} has no ONNX element type")
    return f"tensor({name})"


def pack_sub_byte(arr: np.ndarray, name: str) -> np.ndarray:
    """The ONNX packed bytes of a sub-byte tensor given one element per item (ml_dtypes or integers)."""
    bits = SUB_BYTE_BITS[name]
    per_byte = 8 // bits
    codes = np.ascontiguousarray(arr).reshape(-1).view(np.uint8) & ((1 << bits) - 1)
    pad = (-codes.size) % per_byte
    if pad:
        codes = np.concatenate([codes, np.zeros(pad, np.uint8)])
    codes = codes.reshape(-1, per_byte)
    out = np.zeros(codes.shape[0], np.uint8)
    for i in range(per_byte):
        out |= codes[:, i] << (i * bits)
    return out


def unpack_sub_byte(raw: np.ndarray, name: str, shape: list) -> np.ndarray:
    """One element per item, with the declared shape, from the ONNX packed bytes of a sub-byte tensor."""
    bits = SUB_BYTE_BITS[name]
    per_byte = 8 // bits
    n = int(np.prod(shape)) if len(shape) else 1
    raw = np.asarray(raw, np.uint8).reshape(-1)
    codes = np.stack([(raw >> (i * bits)) & ((1 << bits) - 1) for i in range(per_byte)], axis=1).reshape(-1)[:n]
    dtype = SDX_TO_NP.get(name)
    if dtype is None:
        if name not in _WIDE_FALLBACK:
            raise RuntimeError(f"sdx: output of type {name} needs the ml_dtypes package (pip install ml_dtypes)")
        dtype = np.dtype(_WIDE_FALLBACK[name])
        if dtype == np.int8:  # sign-extend
            codes = ((codes.astype(np.int16) ^ (1 << (bits - 1))) - (1 << (bits - 1))).astype(np.int8)
        return codes.astype(dtype).reshape(shape)
    return codes.astype(np.uint8).view(dtype).reshape(shape)
