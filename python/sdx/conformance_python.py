"""One ONNX node-suite case run through the Python API (`sdx conformance --via python`): the model
loaded by sdx.InferenceSession, inputs and expected outputs read with onnx's own readers
(onnx.numpy_helper: read-only arrays, sequences as lists, optionals as None), compared as the native
runner compares them (src/testing/conformance.cc): floats within rtol/atol (NaN matches NaN, infinities
match exactly, bfloat16 at rtol >= 1/64), everything else exactly. Four runs per data set: warmup,
capture, two replays, each equal to the reference and bit for bit to the first.
"""
from __future__ import annotations

import glob
import os
import time
from typing import Any

import numpy as np

_FLOAT_KINDS = ("float16", "float32", "float64", "bfloat16")


def _read(path: str, type_proto: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    with open(path, "rb") as f:
        data = f.read()
    which = type_proto.WhichOneof("value")
    if which == "sequence_type":
        proto = onnx.SequenceProto()
        proto.ParseFromString(data)
        return numpy_helper.to_list(proto)
    if which == "optional_type":
        proto = onnx.OptionalProto()
        proto.ParseFromString(data)
        return numpy_helper.to_optional(proto)
    proto = onnx.TensorProto()
    proto.ParseFromString(data)
    return numpy_helper.to_array(proto)


def _compare_tensor(got: Any, want: np.ndarray, rtol: float, atol: float) -> str | None:
    if not isinstance(got, np.ndarray):
        return f"expected a tensor, got {type(got).__name__}"
    if want.dtype.kind in ("U", "S", "O"):
        if got.shape != want.shape:
            return f"shape {list(got.shape)}, expected {list(want.shape)}"
        for i, (a, b) in enumerate(zip(got.reshape(-1).tolist(), want.reshape(-1).tolist())):
            if (a.decode() if isinstance(a, bytes) else a) != (b.decode() if isinstance(b, bytes) else b):
                return f"string at flat index {i} is {a!r}, expected {b!r}"
        return None
    if got.dtype != want.dtype:
        return f"element type {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.name in _FLOAT_KINDS:
        a, b = got.astype(np.float64), want.astype(np.float64)
        if want.dtype.name == "bfloat16":
            rtol = max(rtol, 1.0 / 64)
        with np.errstate(invalid="ignore"):
            ok = np.where(np.isnan(b), np.isnan(a), np.where(np.isinf(b), a == b, np.abs(a - b) <= atol + rtol * np.abs(b)))
        if not ok.all():
            first = int(np.flatnonzero(~ok.reshape(-1))[0])
            return (f"{int((~ok).sum())} of {ok.size} values differ (rtol={rtol}, atol={atol}); first at flat index {first}: "
                    f"got {a.reshape(-1)[first]}, expected {b.reshape(-1)[first]}")
        return None
    if not np.array_equal(got.view(np.uint8) if got.dtype.itemsize == 1 else got,
                          want.view(np.uint8) if want.dtype.itemsize == 1 else want):
        return f"values differ ({want.dtype} compared exactly)"
    return None


def _compare(got: Any, want: Any, rtol: float, atol: float) -> str | None:
    if want is None or got is None:
        return None if (want is None) == (got is None) else ("expected an empty optional" if want is None else "got an empty optional")
    if isinstance(want, list):
        if not isinstance(got, list):
            return "expected a sequence"
        if len(got) != len(want):
            return f"sequence length {len(got)}, expected {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            why = _compare_tensor(a, b, rtol, atol)
            if why:
                return f"sequence item {i}: {why}"
        return None
    return _compare_tensor(got, want, rtol, atol)


def _same_bits(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_same_bits, a, b))
    if a is None or b is None:
        return a is b
    if a.dtype.kind == "O":
        return a.shape == b.shape and a.tolist() == b.tolist()
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def run_case(case_dir: str, rtol: float, atol: float) -> tuple[str, str, float, bool, str]:
    """(outcome "passed" | "failed" | "skipped", reason, milliseconds, replayed, replay note)."""
    import onnx

    import sdx

    t0 = time.perf_counter()

    def done(outcome: str, reason: str, replayed: bool = False, note: str = "") -> tuple:
        return outcome, reason, (time.perf_counter() - t0) * 1e3, replayed, note

    model_path = os.path.join(case_dir, "model.onnx")
    try:
        sess = sdx.InferenceSession(model_path)
    except sdx.NotImplemented as e:
        return done("skipped", f"load: {e}")
    except Exception as e:  # noqa: BLE001 - every other load failure is the case's failure
        return done("failed", f"load: {type(e).__name__}: {e}")
    graph = onnx.load(model_path, load_external_data=False).graph
    sets = sorted(glob.glob(os.path.join(case_dir, "test_data_set_*")))
    if not sets:
        return done("failed", "no test_data_set folders")
    replayed, note = False, ""
    for ds in sets:
        feeds = {}
        for i, vi in enumerate(graph.input):
            path = os.path.join(ds, f"input_{i}.pb")
            if os.path.exists(path):
                feeds[vi.name] = _read(path, vi.type)
        wants = [_read(os.path.join(ds, f"output_{i}.pb"), vi.type) for i, vi in enumerate(graph.output)]
        first = None
        for which in ("", " (capture run)", " (replay run)", " (second replay run)"):
            try:
                if which.startswith(" (second"):
                    outs, report = sess.run_with_report(None, feeds)
                    replayed = report.get("execution_mode") == "CPU_REPLAY"
                    note = "replayed" if replayed else str(report.get("fallback_reason") or "not replayed")
                else:
                    outs = sess.run(None, feeds)
            except sdx.NotImplemented as e:
                return done("skipped", f"run{which}: {e}")
            except Exception as e:  # noqa: BLE001
                return done("failed", f"run{which}: {type(e).__name__}: {e}")
            for vi, got, want in zip(graph.output, outs, wants):
                why = _compare(got, want, rtol, atol)
                if why:
                    return done("failed", f"output '{vi.name}'{which}: {why}")
            if first is None:
                first = outs
            elif not all(map(_same_bits, outs, first)):
                return done("failed", f"an output differs between the warmup run and the{which}")
    return done("passed", "", replayed, note)
