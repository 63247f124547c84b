"""IOBinding (onnxruntime's SessionIOBinding): inputs and outputs bound ahead of a run.

    b = sess.io_binding()
    b.bind_cpu_input("x", x)
    b.bind_output("y")                        # sdx allocates; or bind_ortvalue_output("y", preallocated)
    sess.run_with_iobinding(b)
    (y,) = b.copy_outputs_to_cpu()

Everything lives in CPU memory. An output bound to a preallocated OrtValue or buffer receives the result
by a copy after the run (its shape and element type must match).
"""
from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from ._ortvalue import OrtValue, OrtValueVector, _check_cpu
from ._types import numpy_dtype_of_onnx


def _dtype(element_type: Any) -> np.dtype:
    return numpy_dtype_of_onnx(element_type) if isinstance(element_type, int) else np.dtype(element_type)


def _array_at(ptr: int, element_type: Any, shape: Sequence[int]) -> np.ndarray:
    dtype = _dtype(element_type)
    count = int(np.prod(shape)) if len(shape) else 1
    if not ptr and count:
        raise RuntimeError("sdx: a bound buffer address is null")
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(ptr)) if count else bytearray()
    return np.frombuffer(buf, dtype=dtype, count=count).reshape([int(d) for d in shape])


class SessionIOBinding:
    def __init__(self, session: Any) -> None:
        self._session = session
        self._inputs: dict[str, Any] = {}
        self._outputs: dict[str, OrtValue | None] = {}
        self._results: list[OrtValue] = []

    # -- inputs
    def bind_cpu_input(self, name: str, arr_on_cpu: Any) -> None:
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name: str, device_type: str, device_id: int, element_type: Any, shape: Sequence[int],
                   buffer_ptr: int) -> None:
        _check_cpu(device_type, f"input '{name}'")
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._inputs[name] = ortvalue

    def synchronize_inputs(self) -> None:
        pass  # CPU memory: nothing in flight

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    # -- outputs
    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0, element_type: Any = None,
                    shape: Sequence[int] | None = None, buffer_ptr: int | None = None) -> None:
        _check_cpu(device_type, f"output '{name}'")
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise RuntimeError(f"sdx: output '{name}': a bound buffer needs its element_type and shape")
        self._outputs[name] = OrtValue(_array_at(buffer_ptr, element_type, shape))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        if not isinstance(ortvalue, OrtValue) or not ortvalue.is_tensor():
            raise TypeError(f"sdx: output '{name}' must be bound to a tensor OrtValue")
        self._outputs[name] = ortvalue

    def synchronize_outputs(self) -> None:
        pass

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def get_outputs(self) -> OrtValueVector:
        return OrtValueVector(self._results)

    def get_outputs_as_ortvaluevector(self) -> OrtValueVector:
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list:
        return [np.array(v.numpy(), copy=True) if v.is_tensor() else v.numpy() for v in self._results]

    # -- the run
    def _run(self, run_options: Any) -> None:
        if not self._outputs:
            raise RuntimeError("sdx: run_with_iobinding: no output is bound (bind_output)")
        names = list(self._outputs)
        values = self._session.run(names, dict(self._inputs), run_options)
        results = []
        for name, value in zip(names, values):
            bound = self._outputs[name]
            if bound is None:
                results.append(OrtValue.ortvalue_from_numpy(value) if isinstance(value, np.ndarray) else OrtValue(value))
                continue
            dst = bound.numpy()
            if value.shape != dst.shape or value.dtype != dst.dtype:
                raise RuntimeError(f"sdx: output '{name}' is {value.dtype}{list(value.shape)} but the bound buffer is "
                                   f"{dst.dtype}{list(dst.shape)}")
            np.copyto(dst, value)
            results.append(bound)
        self._results = results
