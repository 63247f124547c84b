"""LoRA adapters in onnxruntime's adapter file format (.onnx_adapter: a FlatBuffer, identifier "TORT",
schema onnxruntime/lora/adapter_format/adapter_schema.fbs: Adapter {format_version, adapter_version,
model_version, parameters: [Parameter {name, dims, data_type, raw_data}]}), read and written with the
`flatbuffers` package. Files written by onnxruntime load here and the other way round.

    adapter = sdx.LoraAdapter(); adapter.Load("model.onnx_adapter")
    ro = sdx.RunOptions(); ro.add_active_adapter(adapter)
    sess.run(None, feeds, ro)     # each parameter is fed as the model input of its name

A parameter is fed as the graph input of the same name (onnxruntime's LoRA models declare the
low-rank weights as inputs with default initializers); the caller's own feeds win.
"""
from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from ._ortvalue import OrtValue
from ._types import numpy_dtype_of_onnx, onnx_type_of_numpy

_FORMAT_VERSION = 1
_IDENTIFIER = b"TORT"


def _flatbuffers() -> Any:
    try:
        import flatbuffers
    except ImportError:  # pragma: no cover - a dependency of the package
        raise RuntimeError("sdx: LoRA adapter files need the flatbuffers package (pip install flatbuffers)") from None
    return flatbuffers


def _write(path: str, adapter_version: int, model_version: int, params: dict[str, np.ndarray]) -> None:
    fb = _flatbuffers()
    b = fb.Builder(1024)
    offsets = []
    for name, arr in params.items():
        name_off = b.CreateString(name)
        b.StartVector(8, arr.ndim, 8)
        for d in reversed(arr.shape):
            b.PrependInt64(int(d))
        dims_off = b.EndVector()
        raw = np.ascontiguousarray(arr).tobytes()
        b.StartVector(1, len(raw), 8)  # raw_data: force_align 8
        b.head -= len(raw)
        b.Bytes[b.head:b.head + len(raw)] = raw
        raw_off = b.EndVector()
        b.StartObject(4)
        b.PrependUOffsetTRelativeSlot(0, name_off, 0)
        b.PrependUOffsetTRelativeSlot(1, dims_off, 0)
        b.PrependInt32Slot(2, onnx_type_of_numpy(arr.dtype), 0)
        b.PrependUOffsetTRelativeSlot(3, raw_off, 0)
        offsets.append(b.EndObject())
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    params_off = b.EndVector()
    b.StartObject(4)
    b.PrependInt32Slot(0, _FORMAT_VERSION, 0)
    b.PrependInt32Slot(1, int(adapter_version), 0)
    b.PrependInt32Slot(2, int(model_version), 0)
    b.PrependUOffsetTRelativeSlot(3, params_off, 0)
    b.Finish(b.EndObject(), file_identifier=_IDENTIFIER)
    with open(path, "wb") as f:
        f.write(b.Output())


def _read(path: str) -> tuple[int, int, dict[str, np.ndarray]]:
    fb = _flatbuffers()
    from flatbuffers import number_types as N
    from flatbuffers.table import Table

    with open(path, "rb") as f:
        buf = bytearray(f.read())
    where = f"adapter file '{path}'"
    if len(buf) < 8 or bytes(buf[4:8]) != _IDENTIFIER:
        raise RuntimeError(f"sdx: {where} is not an onnxruntime adapter (no 'TORT' identifier)")
    try:
        root = Table(buf, fb.encode.Get(N.UOffsetTFlags.packer_type, buf, 0))

        def i32(t: Table, slot: int) -> int:
            o = t.Offset(4 + 2 * slot)
            return t.Get(N.Int32Flags, o + t.Pos) if o else 0

        if i32(root, 0) != _FORMAT_VERSION:
            raise RuntimeError(f"sdx: {where}: format version {i32(root, 0)}; sdx reads version {_FORMAT_VERSION}")
        params: dict[str, np.ndarray] = {}
        o = root.Offset(10)
        for j in range(root.VectorLen(o) if o else 0):
            p = Table(buf, root.Indirect(root.Vector(o) + 4 * j))
            name = p.String(p.Offset(4) + p.Pos).decode() if p.Offset(4) else ""
            od = p.Offset(6)
            dims = [int(x) for x in p.GetVectorAsNumpy(N.Int64Flags, od)] if od else []
            dtype = numpy_dtype_of_onnx(i32(p, 2))
            orw = p.Offset(10)
            raw = bytes(p.GetVectorAsNumpy(N.Uint8Flags, orw)) if orw else b""
            count = int(np.prod(dims)) if dims else 1
            if len(raw) != count * dtype.itemsize:
                raise RuntimeError(f"sdx: {where}: parameter '{name}' holds {len(raw)} bytes but dims {dims} of "
                                   f"{dtype} need {count * dtype.itemsize}")
            params[name] = np.frombuffer(raw, dtype=dtype).reshape(dims).copy()
        return i32(root, 1), i32(root, 2), params
    except (IndexError, ValueError, UnicodeDecodeError, TypeError, OverflowError, struct.error) as e:  # truncated, corrupt
        raise RuntimeError(f"sdx: {where} is corrupt: {e}") from None


class AdapterFormat:
    """An adapter's parameters and versions, to write (export_adapter) or read (read_adapter)."""

    def __init__(self) -> None:
        self._adapter_version = 0
        self._model_version = 0
        self._parameters: dict[str, OrtValue] = {}

    @staticmethod
    def read_adapter(file_path: str | os.PathLike) -> "AdapterFormat":
        adapter_version, model_version, params = _read(os.fspath(file_path))
        a = AdapterFormat()
        a._adapter_version, a._model_version = adapter_version, model_version
        a._parameters = {k: OrtValue.ortvalue_from_numpy(v) for k, v in params.items()}
        return a

    def export_adapter(self, file_path: str | os.PathLike) -> None:
        _write(os.fspath(file_path), self._adapter_version, self._model_version,
               {k: np.asarray(v.numpy()) for k, v in self._parameters.items()})

    def get_adapter_version(self) -> int:
        return self._adapter_version

    def set_adapter_version(self, adapter_version: int) -> None:
        self._adapter_version = int(adapter_version)

    def get_model_version(self) -> int:
        return self._model_version

    def set_model_version(self, model_version: int) -> None:
        self._model_version = int(model_version)

    def get_parameters(self) -> dict[str, OrtValue]:
        return dict(self._parameters)

    def set_parameters(self, params: dict[str, Any]) -> None:
        out = {}
        for name, value in params.items():
            v = value if isinstance(value, OrtValue) else OrtValue.ortvalue_from_numpy(np.asarray(value))
            if not v.is_tensor() or v.numpy().dtype.kind in ("U", "S", "O"):
                raise RuntimeError(f"sdx: adapter parameter '{name}' must be a numeric tensor")
            out[str(name)] = v
        self._parameters = out


class LoraAdapter:
    """An adapter loaded for runs (RunOptions.add_active_adapter)."""

    def __init__(self) -> None:
        self._parameters: dict[str, np.ndarray] = {}

    def Load(self, adapter_file_path: str | os.PathLike) -> None:  # noqa: N802 - onnxruntime's name
        self._parameters = _read(os.fspath(adapter_file_path))[2]
