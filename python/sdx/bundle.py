"""`.sdx` bundles: a model compiled once (optimized, and warmed up for the input shapes it will see) so a
new process starts replaying at once. The format and its checks: src/frontend/bundle/bundle_format.h.

    import sdx
    data = sdx.compile_bundle("model.onnx", [{"x": np.zeros((1, 3, 224, 224), np.float32)}])
    open("model.sdx", "wb").write(data)
    sess = sdx.InferenceSession("model.sdx")   # no optimizer, no warmup, no capture run: the first call replays

Each input set fixes one input signature (element types and shapes; the values only drive the warmup
run, so any representative values do). Calls with other shapes still work: they warm up as usual.
"""
from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np

from . import _sdx
from ._session import SessionOptions


def compile_bundle(model: str | bytes | os.PathLike, input_sets: Iterable[dict[str, Any]],
                   sess_options: SessionOptions | None = None) -> bytes:
    """The bundle's bytes for `model` (a path or ONNX bytes), with a frozen plan per dict in `input_sets`
    (input name -> array; every graph input that is not an initializer)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif isinstance(model, (str, os.PathLike)):
        with open(os.fspath(model), "rb") as f:
            data = f.read()
    else:
        raise TypeError(f"sdx: model must be a path or the model's bytes, not {type(model).__name__}")
    opts = sess_options or SessionOptions()
    sets = []
    for k, feeds in enumerate(input_sets):
        if not isinstance(feeds, dict):
            raise TypeError(f"sdx: input set {k} must be a dict of input name -> array, not {type(feeds).__name__}")
        sets.append({name: np.ascontiguousarray(value) for name, value in feeds.items()})
    if not sets:
        raise ValueError("sdx: compile_bundle needs at least one input set (the shapes to freeze plans for)")
    return _sdx.compile_bundle(data, opts._to_dict(), sets)
