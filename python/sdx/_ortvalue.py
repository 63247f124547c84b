"""onnxruntime's value and device classes, for code written against onnxruntime's Python API.

    v = sdx.OrtValue.ortvalue_from_numpy(x)        # shares x's memory (CPU)
    (y,) = sess.run(None, {"x": v})                 # an OrtValue is accepted wherever an array is
    w = sdx.OrtValue.from_dlpack(torch_tensor)      # any DLPack producer, zero copy

sdx runs on the CPU: an OrtValue on another device is refused with a RuntimeError naming the device,
as onnxruntime does when its CUDA provider is absent. There is one class for the Python and the C
level (`OrtValue._ortvalue` and `_get_c_value()` return the value itself).
"""
from __future__ import annotations

import ctypes
import enum
from typing import Any, Sequence

import numpy as np

from ._types import numpy_dtype_of_onnx, onnx_type_of_numpy, type_string_of_numpy


class OrtDeviceVendorId(enum.IntEnum):
    NONE = 0
    AMD = 0x1002
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


# Device names as onnxruntime spells them, their OrtDevice type ids and default vendors.
_DEVICE_TYPES = {"cpu": (0, OrtDeviceVendorId.NONE), "cuda": (1, OrtDeviceVendorId.NVIDIA),
                 "gpu": (1, OrtDeviceVendorId.NONE), "fpga": (2, OrtDeviceVendorId.NONE),
                 "npu": (3, OrtDeviceVendorId.NONE), "dml": (1, OrtDeviceVendorId.MICROSOFT),
                 "cann": (3, OrtDeviceVendorId.HUAWEI)}


def _check_cpu(device_type: str, what: str) -> None:
    name = str(device_type).lower()
    if name not in _DEVICE_TYPES:
        raise RuntimeError(f"sdx: unknown device type '{device_type}' for {what}; known: {', '.join(_DEVICE_TYPES)}")
    if name != "cpu":
        raise RuntimeError(f"sdx: {what} on device '{device_type}' is not available: this sdx build runs on the CPU "
                           "only (get_available_providers() lists CPUExecutionProvider)")


class OrtDevice:
    """A device as onnxruntime names it: type (cpu 0, gpu 1, fpga 2, npu 3), vendor, memory type and id."""

    def __init__(self, device_type: int = 0, mem_type: int = 0, device_id: int = 0,
                 vendor_id: int = OrtDeviceVendorId.NONE) -> None:
        self._type, self._mem, self._id, self._vendor = int(device_type), int(mem_type), int(device_id), int(vendor_id)

    @staticmethod
    def make(device_type: str, device_id: int, vendor_id: int = -1) -> "OrtDevice":
        name = str(device_type).lower()
        if name not in _DEVICE_TYPES:
            raise RuntimeError(f"sdx: unknown device type '{device_type}'; known: {', '.join(_DEVICE_TYPES)}")
        type_id, vendor = _DEVICE_TYPES[name]
        return OrtDevice(type_id, 0, device_id, vendor if vendor_id < 0 else vendor_id)

    @staticmethod
    def cpu() -> int:
        return 0

    @staticmethod
    def cuda() -> int:
        return 1

    @staticmethod
    def fpga() -> int:
        return 2

    @staticmethod
    def npu() -> int:
        return 3

    @staticmethod
    def default_memory() -> int:
        return 0

    def device_id(self) -> int:
        return self._id

    def device_type(self) -> int:
        return self._type

    def device_vendor_id(self) -> int:
        return self._vendor

    def device_mem_type(self) -> int:
        return self._mem

    def __repr__(self) -> str:
        return f"OrtDevice(type={self._type}, mem_type={self._mem}, id={self._id}, vendor=0x{self._vendor:X})"


class OrtMemoryInfo:
    """Where a tensor lives (onnxruntime.OrtMemoryInfo). sdx's inputs and outputs live in CPU memory."""

    def __init__(self, name: str, allocator_type: int, device_id: int, mem_type: int) -> None:
        self.name = str(name)
        self.allocator_type = OrtAllocatorType(int(allocator_type))
        self.device_id = int(device_id)
        self.mem_type = OrtMemType(int(mem_type))
        self.device_mem_type = OrtDeviceMemoryType.DEFAULT
        self.device_vendor_id = 0
        self.device_type = OrtMemoryInfoDeviceType.CPU
        self.alignment = 0

    @staticmethod
    def create_v2(name: str, device_type: int, vendor_id: int, device_id: int, device_mem_type: int,
                  alignment: int, allocator_type: int) -> "OrtMemoryInfo":
        info = OrtMemoryInfo(name, allocator_type, device_id, OrtMemType.DEFAULT)
        info.device_type = OrtMemoryInfoDeviceType(int(device_type))
        info.device_vendor_id = int(vendor_id)
        info.device_mem_type = OrtDeviceMemoryType(int(device_mem_type))
        info.alignment = int(alignment)
        return info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrtMemoryInfo) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (f"OrtMemoryInfo(name='{self.name}', device_id={self.device_id}, mem_type={self.mem_type.name}, "
                f"allocator_type={self.allocator_type.name})")


def cpu_memory_info() -> OrtMemoryInfo:
    return OrtMemoryInfo("Cpu", OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, OrtMemType.DEFAULT)


_ARENA_KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
               "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes")


class OrtArenaCfg:
    """onnxruntime's arena settings, kept as given. sdx plans every buffer of a frozen plan ahead of time
    and has no growing arena, so a registered allocator does not change how a session allocates."""

    def __init__(self, *args: Any) -> None:
        values = dict.fromkeys(_ARENA_KEYS, -1)
        values["arena_extend_strategy"] = -1
        if len(args) == 1 and isinstance(args[0], dict):
            for key, val in args[0].items():
                if key not in values:
                    raise ValueError(f"sdx: invalid OrtArenaCfg option '{key}'; the options are {', '.join(_ARENA_KEYS)}")
                values[key] = int(val)
        elif len(args) == 4:
            for key, val in zip(_ARENA_KEYS[:4], args):
                values[key] = int(val)
        elif args:
            raise TypeError("sdx: OrtArenaCfg takes (max_mem, arena_extend_strategy, initial_chunk_size_bytes, "
                            "max_dead_bytes_per_chunk) or a dict of options")
        for key, val in values.items():
            object.__setattr__(self, key, val)


_registered_allocators: list[tuple[OrtMemoryInfo, Any]] = []


def create_and_register_allocator(mem_info: OrtMemoryInfo, arena_cfg: OrtArenaCfg | None) -> None:
    """Accepted for compatibility: sdx sessions allocate their planned buffers themselves (see OrtArenaCfg)."""
    if not isinstance(mem_info, OrtMemoryInfo):
        raise TypeError("sdx: create_and_register_allocator needs an OrtMemoryInfo")
    if mem_info.device_type != OrtMemoryInfoDeviceType.CPU or mem_info.name.lower() not in ("cpu", "test"):
        _check_cpu(mem_info.name, "an allocator")
    _registered_allocators.append((mem_info, arena_cfg))


def create_and_register_allocator_v2(provider_type: str, mem_info: OrtMemoryInfo, provider_options: dict,
                                     arena_cfg: OrtArenaCfg | None) -> None:
    if provider_type != "CPUExecutionProvider":
        raise RuntimeError(f"sdx: cannot register an allocator for {provider_type}: it is not available")
    create_and_register_allocator(mem_info, arena_cfg)


# ---- DLPack

_DLPACK_CAPSULE = b"dltensor"
_DLPACK_VERSIONED = b"dltensor_versioned"
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_dtype(capsule: Any) -> tuple[int, int]:
    """(type code, bits) of the DLTensor in an unconsumed DLPack capsule, read without consuming it."""
    if _is_valid(capsule, _DLPACK_CAPSULE):
        base = _get_pointer(capsule, _DLPACK_CAPSULE)  # DLManagedTensor: the DLTensor comes first
    elif _is_valid(capsule, _DLPACK_VERSIONED):
        base = _get_pointer(capsule, _DLPACK_VERSIONED) + 32  # version, manager_ctx, deleter, flags
    else:
        raise TypeError("sdx: expected an unconsumed DLPack capsule ('dltensor')")
    # DLTensor: void* data; DLDevice {int32, int32}; int32 ndim; DLDataType {uint8 code, uint8 bits, uint16 lanes}
    raw = ctypes.string_at(base + 20, 2)
    return raw[0], raw[1]


def is_dlpack_uint8_tensor(capsule: Any) -> bool:
    code, bits = _dlpack_dtype(capsule)
    return code == 1 and bits == 8  # kDLUInt, 8 bits


class _Capsule:
    """Presents a raw DLPack capsule to numpy.from_dlpack, which wants an object with __dlpack__."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _array_from_dlpack(data: Any) -> np.ndarray:
    if type(data).__name__ == "PyCapsule":
        return np.from_dlpack(_Capsule(data))
    if not hasattr(data, "__dlpack__"):
        raise TypeError(f"sdx: from_dlpack needs a DLPack capsule or an object with __dlpack__, not {type(data).__name__}")
    device = data.__dlpack_device__() if hasattr(data, "__dlpack_device__") else (1, 0)
    if int(device[0]) not in (1, 3):  # kDLCPU, kDLCUDAHost
        raise RuntimeError(f"sdx: from_dlpack: the tensor is on DLPack device {tuple(device)}; sdx reads CPU memory")
    return np.from_dlpack(data)


# ---- OrtValue

class OrtValue:
    """A tensor (or sequence, or sparse tensor) as onnxruntime's run_with_ort_values and IOBinding take it.

    A tensor OrtValue holds a C-contiguous numpy array; ortvalue_from_numpy shares the caller's memory
    when it can, as onnxruntime does on the CPU (keep the array alive while the value is used)."""

    __slots__ = ("_value", "_sparse", "__weakref__")

    def __init__(self, value: Any = None, sparse: "SparseTensor | None" = None) -> None:
        self._value = value
        self._sparse = sparse

    # -- construction
    @staticmethod
    def ortvalue_from_numpy(numpy_obj: Any, device_type: str = "cpu", device_id: int = 0,
                            vendor_id: int = -1) -> "OrtValue":
        _check_cpu(device_type, "an OrtValue")
        arr = numpy_obj if isinstance(numpy_obj, np.ndarray) else np.asarray(numpy_obj)
        if arr.dtype.kind == "U" or arr.dtype.kind == "S":
            arr = arr.astype(object)
        if not arr.flags.c_contiguous or not arr.dtype.isnative:
            arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
        return OrtValue(arr)

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data: np.ndarray, onnx_element_type: int) -> "OrtValue":
        want = numpy_dtype_of_onnx(int(onnx_element_type))
        arr = np.asarray(data)
        if arr.dtype != want:
            if arr.dtype.itemsize != want.itemsize:
                raise RuntimeError(f"sdx: ortvalue_from_numpy_with_onnx_type: a {arr.dtype} array cannot hold ONNX "
                                   f"element type {int(onnx_element_type)} ({want})")
            arr = arr.view(want)
        return OrtValue.ortvalue_from_numpy(arr)

    @staticmethod
    def ortvalue_from_shape_and_type(shape: Sequence[int], element_type: Any, device_type: str = "cpu",
                                     device_id: int = 0, vendor_id: int = -1) -> "OrtValue":
        _check_cpu(device_type, "an OrtValue")
        dtype = numpy_dtype_of_onnx(element_type) if isinstance(element_type, int) else np.dtype(element_type)
        return OrtValue(np.empty([int(d) for d in shape], dtype=dtype))

    @staticmethod
    def ort_value_from_sparse_tensor(sparse_tensor: "SparseTensor") -> "OrtValue":
        if not isinstance(sparse_tensor, SparseTensor):
            raise TypeError("sdx: ort_value_from_sparse_tensor needs a SparseTensor")
        return OrtValue(None, sparse_tensor)

    @staticmethod
    def from_dlpack(data: Any, is_bool_tensor: bool = False) -> "OrtValue":
        arr = _array_from_dlpack(data)
        if is_bool_tensor and arr.dtype == np.uint8:
            arr = arr.view(np.bool_)
        return OrtValue(arr)

    # -- the C-level object is this one
    @property
    def _ortvalue(self) -> "OrtValue":
        return self

    def _get_c_value(self) -> "OrtValue":
        return self

    # -- queries
    def _tensor(self, what: str) -> np.ndarray:
        if not isinstance(self._value, np.ndarray):
            raise RuntimeError(f"sdx: OrtValue.{what}: this OrtValue is not a tensor ({self.data_type()})")
        return self._value

    def data_ptr(self) -> int:
        return int(self._tensor("data_ptr").ctypes.data)

    def device_name(self) -> str:
        return "cpu"

    def shape(self) -> list[int]:
        if self._sparse is not None:
            return self._sparse.dense_shape()
        return list(self._tensor("shape").shape)

    def data_type(self) -> str:
        if self._sparse is not None:
            return self._sparse.data_type()
        if isinstance(self._value, list):
            inner = type_string_of_numpy(self._value[0].dtype) if self._value else "tensor(float)"
            return f"seq({inner})"
        if self._value is None:
            return "optional"
        return type_string_of_numpy(self._value.dtype)

    def element_type(self) -> int:
        return onnx_type_of_numpy(self._tensor("element_type").dtype)

    def has_value(self) -> bool:
        return self._value is not None or self._sparse is not None

    def is_tensor(self) -> bool:
        return isinstance(self._value, np.ndarray)

    def is_sparse_tensor(self) -> bool:
        return self._sparse is not None

    def is_tensor_sequence(self) -> bool:
        return isinstance(self._value, list)

    def as_sparse_tensor(self) -> "SparseTensor":
        if self._sparse is None:
            raise RuntimeError("sdx: OrtValue.as_sparse_tensor: this OrtValue is not a sparse tensor")
        return self._sparse

    def tensor_size_in_bytes(self) -> int:
        return int(self._tensor("tensor_size_in_bytes").nbytes)

    def numpy(self) -> Any:
        if self._sparse is not None:
            raise RuntimeError("sdx: OrtValue.numpy: a sparse tensor has no dense numpy form; use as_sparse_tensor()")
        if isinstance(self._value, list):
            return list(self._value)
        return self._value

    def update_inplace(self, np_arr: np.ndarray) -> None:
        dst = self._tensor("update_inplace")
        src = np.asarray(np_arr)
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise RuntimeError(f"sdx: update_inplace: got {src.dtype}{list(src.shape)}, the value is "
                               f"{dst.dtype}{list(dst.shape)}")
        np.copyto(dst, src)

    # -- protocols
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self._tensor("__array__")
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def to_dlpack(self) -> Any:
        return self._tensor("to_dlpack").__dlpack__()

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._tensor("__dlpack__").__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    def __repr__(self) -> str:
        shape = self.shape() if self.is_tensor() or self._sparse is not None else ""
        return f"OrtValue({self.data_type()}{shape}, cpu)"


class OrtValueVector(list):
    """The list of OrtValues run_with_ort_values returns (onnxruntime.capi...OrtValueVector)."""

    def push_back(self, value: OrtValue) -> None:
        self.append(value)

    def numpy(self) -> list:
        return [v.numpy() for v in self]

    def element_type_at(self, i: int) -> int:
        return self[i].element_type()

    def to_dlpacks(self, to_tensor: Any = None) -> list:
        caps = [v.to_dlpack() for v in self]
        return [to_tensor(c) for c in caps] if to_tensor else caps


# ---- sparse tensors

def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


class _CooView:
    def __init__(self, indices: np.ndarray) -> None:
        self._indices = indices

    def indices(self) -> np.ndarray:
        return _read_only(self._indices)


class _CsrcView:
    def __init__(self, inner: np.ndarray, outer: np.ndarray) -> None:
        self._inner, self._outer = inner, outer

    def inner(self) -> np.ndarray:
        return _read_only(self._inner)

    def outer(self) -> np.ndarray:
        return _read_only(self._outer)


class SparseTensor:
    """A sparse tensor in COO or CSR form (onnxruntime.SparseTensor), on the CPU. sdx's graphs take
    sparse tensors only as SparseTensorProto initializers of Constant nodes, so these are values for
    onnxruntime-style code, not run() inputs."""

    def __init__(self, fmt: OrtSparseFormat, dense_shape: Sequence[int], values: np.ndarray,
                 indices: tuple[np.ndarray, ...]) -> None:
        self._format = fmt
        self._shape = [int(d) for d in dense_shape]
        self._values = values
        self._indices = indices

    @staticmethod
    def _values_array(values: Any) -> np.ndarray:
        arr = np.asarray(values)
        if arr.dtype.kind in ("U", "S"):
            arr = arr.astype(object)
        return np.ascontiguousarray(arr)

    @staticmethod
    def _index_array(a: Any, what: str) -> np.ndarray:
        arr = np.ascontiguousarray(a)
        if arr.dtype != np.int64 or arr.ndim != 1:
            raise RuntimeError(f"sdx: sparse tensor {what} must be a 1-D int64 array, not {arr.dtype}{list(arr.shape)}")
        return arr

    @staticmethod
    def sparse_coo_from_numpy(dense_shape: Sequence[int], values: Any, indices: Any, ort_device: OrtDevice) -> "SparseTensor":
        if ort_device.device_type() != 0:
            _check_cpu("cuda", "a sparse tensor")
        vals = SparseTensor._values_array(values)
        idx = SparseTensor._index_array(indices, "indices")
        shape = [int(d) for d in dense_shape]
        if idx.size == vals.size:  # linear indices
            bound = int(np.prod(shape)) if shape else 1
            fits = not idx.size or (idx.min() >= 0 and idx.max() < bound)
        else:  # one (row, col) pair per value, of a 2-D tensor
            coords = idx.reshape(-1, 2) if idx.size == 2 * vals.size and len(shape) == 2 else None
            fits = coords is not None and (not idx.size or bool(((coords >= 0) & (coords < shape)).all()))
        if not fits:
            raise RuntimeError(f"sdx: COO indices ({idx.size}) do not fit {vals.size} values of shape {shape}")
        return SparseTensor(OrtSparseFormat.ORT_SPARSE_COO, dense_shape, vals, (idx,))

    @staticmethod
    def sparse_csr_from_numpy(dense_shape: Sequence[int], values: Any, inner_indices: Any, outer_indices: Any,
                              ort_device: OrtDevice) -> "SparseTensor":
        if ort_device.device_type() != 0:
            _check_cpu("cuda", "a sparse tensor")
        if len(dense_shape) != 2:
            raise RuntimeError(f"sdx: a CSR sparse tensor is 2-D, not {list(dense_shape)}")
        vals = SparseTensor._values_array(values)
        inner = SparseTensor._index_array(inner_indices, "inner indices")
        outer = SparseTensor._index_array(outer_indices, "outer indices")
        if inner.size != vals.size or outer.size != int(dense_shape[0]) + 1:
            raise RuntimeError(f"sdx: CSR indices do not fit: {vals.size} values, {inner.size} inner and "
                               f"{outer.size} outer indices for {int(dense_shape[0])} rows")
        return SparseTensor(OrtSparseFormat.ORT_SPARSE_CSRC, dense_shape, vals, (inner, outer))

    def format(self) -> OrtSparseFormat:
        return self._format

    def dense_shape(self) -> list[int]:
        return list(self._shape)

    def data_type(self) -> str:
        return "sparse_" + type_string_of_numpy(self._values.dtype)

    def device_name(self) -> str:
        return "cpu"

    def values(self) -> np.ndarray:
        return _read_only(self._values)

    def as_coo_view(self) -> _CooView:
        if self._format != OrtSparseFormat.ORT_SPARSE_COO:
            raise RuntimeError("sdx: as_coo_view: this sparse tensor is not in COO format")
        return _CooView(self._indices[0])

    def as_csrc_view(self) -> _CsrcView:
        if self._format != OrtSparseFormat.ORT_SPARSE_CSRC:
            raise RuntimeError("sdx: as_csrc_view: this sparse tensor is not in CSR format")
        return _CsrcView(*self._indices)

    def to_cuda(self, ort_device: OrtDevice) -> "SparseTensor":
        _check_cpu("cuda", "SparseTensor.to_cuda")
        raise AssertionError("unreachable")
