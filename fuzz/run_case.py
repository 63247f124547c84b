"""The child side of the fuzz harness: loads one model with sdx and, when it loads, runs it.

One case: create sdx.InferenceSession(path or bytes); if it loads, feed random inputs of the declared
element types and shapes (at most MAX_ELEMENTS elements per input) and
run it RUNS times (warm-up, capture, replay); symbolic dims take the spec's sym_dim (default 1, the
fuzzer also uses 0 and larger values). Prints one JSON line:

    {"status": "ok" | "load_error" | "run_error" | "not_run", "stage": ..., "error_type": ...,
     "error": ..., "clean": bool, "load_s": float, "run_s": float}

`clean` is true for the errors sdx promises (sdx.SdxError and its ValueError / TypeError /
NotImplementedError / FileNotFoundError cousins) carrying a message. A crash shows up to the parent as
a signal or as an exit without this line.

    python3 fuzz/run_case.py MODEL.onnx [--bytes] [--sym-dim N]      # one case
    python3 fuzz/run_case.py --serve                    # cases as JSON lines on stdin (the harness pool)
"""
from __future__ import annotations

import faulthandler
import json
import sys
import time

import numpy as np

MAX_ELEMENTS = 1 << 20
RUNS = 3
CLEAN_TYPES = (ValueError, TypeError, NotImplementedError, FileNotFoundError, LookupError, OverflowError)

_NP = {"float": np.float32, "double": np.float64, "float16": np.float16, "int8": np.int8, "int16": np.int16,
       "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
       "uint64": np.uint64, "bool": np.bool_}


class InputError(Exception):
    """An input the harness will not build (huge or unsupported); the case counts as loaded, not run."""


def _dims(shape, sym_dim: int) -> list:
    """Fixed dims as declared; symbolic or unknown ones = sym_dim; negative ones = 1."""
    return [d if isinstance(d, int) and d >= 0 else (1 if isinstance(d, int) else sym_dim) for d in shape or []]


def _tensor(elem: str, shape, rng, sym_dim: int = 1) -> np.ndarray:
    dims = _dims(shape, sym_dim)
    n = 1
    for d in dims:
        n *= d
    if n > MAX_ELEMENTS:
        raise InputError(f"input of {n} elements")
    if elem == "string":
        return np.array(["a"] * n, dtype=object).reshape(dims)
    dt = _NP.get(elem)
    if dt is None:
        raise InputError(f"element type {elem}")
    if dt == np.bool_:
        return rng.integers(0, 2, dims).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 3, dims).astype(dt)
    return rng.standard_normal(dims).astype(dt)


def make_feed(type_str: str, shape, rng, sym_dim: int = 1):
    """A value for one input given sdx's NodeArg type string ("tensor(float)", "seq(tensor(int64))",
    "optional(tensor(float))", ...)."""
    if type_str.startswith("tensor(") and type_str.endswith(")"):
        return _tensor(type_str[7:-1], shape, rng, sym_dim)
    if type_str.startswith("seq(tensor(") and type_str.endswith("))"):
        return [_tensor(type_str[11:-2], shape, rng, sym_dim) for _ in range(2)]
    if type_str.startswith("optional(tensor(") and type_str.endswith("))"):
        return _tensor(type_str[16:-2], shape, rng, sym_dim)
    raise InputError(f"input type {type_str}")


def _error(stage: str, e: BaseException, t0: float, load_s: float) -> dict:
    clean = bool(str(e).strip()) and (isinstance(e, CLEAN_TYPES) or _is_sdx_error(e))
    return {"status": f"{stage}_error", "stage": stage, "error_type": type(e).__name__, "error": str(e)[:2000],
            "clean": clean, "load_s": load_s, "run_s": time.monotonic() - t0}


def _is_sdx_error(e: BaseException) -> bool:
    sdx = sys.modules.get("sdx")
    return sdx is not None and isinstance(e, sdx.SdxError)


def run_case(spec: dict) -> dict:
    import sdx

    path = spec["path"]
    opts = sdx.SessionOptions()
    t0 = time.monotonic()
    try:
        if spec.get("bytes"):
            with open(path, "rb") as f:
                src = f.read()
        else:
            src = path
        sess = sdx.InferenceSession(src, opts)
    except Exception as e:  # noqa: BLE001  (every exception is classified, none is fatal here)
        return _error("load", e, t0, time.monotonic() - t0)
    load_s = time.monotonic() - t0
    rng = np.random.default_rng(spec.get("input_seed", 0))
    try:
        feeds = {i.name: make_feed(i.type, i.shape, rng, spec.get("sym_dim", 1)) for i in sess.get_inputs()}
    except InputError as e:
        return {"status": "not_run", "stage": "inputs", "error": str(e), "clean": True, "load_s": load_s, "run_s": 0.0}
    except Exception as e:  # noqa: BLE001  (get_inputs itself failing is a finding)
        return _error("run", e, t0, load_s)
    t1 = time.monotonic()
    try:
        for _ in range(spec.get("runs", RUNS)):
            sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return _error("run", e, t1, load_s)
    return {"status": "ok", "stage": "run", "clean": True, "load_s": load_s, "run_s": time.monotonic() - t1}


def serve() -> None:
    """Reads one JSON case spec per line on stdin, answers one JSON result per line on stdout."""
    out = sys.stdout
    sys.stdout = sys.stderr  # anything sdx or numpy prints must not corrupt the protocol
    import sdx  # noqa: F401  (imported before the first case so its time is not the case's)

    for line in sys.stdin:
        spec = json.loads(line)
        if spec.get("ping"):
            out.write('{"status": "ready"}\n')
            out.flush()
            continue
        print(f"[case] {spec['path']}", file=sys.stderr, flush=True)
        out.write(json.dumps(run_case(spec)) + "\n")
        out.flush()


def main() -> None:
    faulthandler.enable()
    if sys.argv[1:2] == ["--serve"]:
        serve()
        return
    args = sys.argv[2:]
    spec = {"path": sys.argv[1], "bytes": "--bytes" in args,
            "sym_dim": int(args[args.index("--sym-dim") + 1]) if "--sym-dim" in args else 1}
    result = run_case(spec)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
