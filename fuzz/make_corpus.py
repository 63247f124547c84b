"""Writes the committed libFuzzer seed corpus: fuzz/corpus/onnx_model/, fuzz/corpus/tensor_proto/ and
fuzz/corpus/bundle/ (small .sdx bundles of the seed models; needs the built sdx package on PYTHONPATH).

onnx_model: the synthetic seed models (fuzz/seed_models.py), the small public squeezenet graph the onnx
wheel ships when present, and a few structural-fuzzer cases of a fixed seed (so libFuzzer starts next
to the interesting edges: "" inputs, bad attributes, subgraph damage). tensor_proto: every distinct
initializer of the seeds up to 16 KiB, plus hand-made TensorProto / SequenceProto / OptionalProto forms
(float16, bool, strings, 4-bit, external data, typed fields). Files are named by content kind, so a
regenerated corpus diffs cleanly. Limits: no file over 64 KiB (scripts/fuzz.sh runs with
-max_len=65536), the whole corpus under 1 MiB.

    python3 fuzz/make_corpus.py              # rewrites fuzz/corpus/
    python3 fuzz/make_corpus.py --out DIR    # somewhere else
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_models import real_models, seed_models  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_FILE, MAX_TOTAL, MAX_TENSOR = 64 << 10, 1 << 20, 16 << 10
FUZZER_SEED, FUZZER_CASES = 7, 24


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60]


def model_corpus() -> dict:
    out = {f"{n}.onnx": m.SerializeToString() for n, m in seed_models(real=False).items()}
    for name, m in real_models().items():
        blob = m.SerializeToString()
        if name == "onnx_light_squeezenet" and len(blob) <= MAX_FILE:
            out[f"{name}.onnx"] = blob
    from structural_fuzzer import make_case  # the fuzzer's own cases (no external data: libFuzzer gets bytes)
    seeds = seed_models(real=False)
    families = {"inputs", "outputs", "ops", "attributes", "graph_io", "dims_dtypes", "raw_data", "versions", "subgraphs"}
    for n in range(FUZZER_CASES):
        case = make_case(FUZZER_SEED, n, seeds, families)
        tmp = os.path.join(HERE, ".corpus_tmp")
        os.makedirs(tmp, exist_ok=True)
        try:
            with open(case.write(tmp), "rb") as f:
                out[f"mutated_s{FUZZER_SEED}_c{n:02d}_{case.family}.onnx"] = f.read()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return {k: v for k, v in out.items() if len(v) <= MAX_FILE}


def tensor_corpus() -> dict:
    out = {}
    seen = set()
    for mname, m in seed_models(real=False).items():
        for t in m.graph.initializer:
            blob = t.SerializeToString()
            if len(blob) <= MAX_TENSOR and blob not in seen:
                seen.add(blob)
                out[f"init_{mname}_{_safe(t.name)}.pb"] = blob
    f16 = numpy_helper.from_array(np.array([1.5, -2, 65504], np.float16), "f16")
    b = numpy_helper.from_array(np.array([True, False, True]), "bool")
    s = helper.make_tensor("strings", TensorProto.STRING, [2], [b"sdx", b""])
    i4 = helper.make_tensor("int4", TensorProto.INT4, [3], [1, -2, 7])
    typed = helper.make_tensor("typed", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0])
    ext = helper.make_tensor("ext", TensorProto.FLOAT, [4], [0.0] * 4)
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0x4"), ("length", "-1")):
        ext.external_data.add(key=k, value=v)
    scalar = numpy_helper.from_array(np.array(3, np.int64), "scalar")
    empty = numpy_helper.from_array(np.zeros((0, 3), np.float32), "empty")
    for t in (f16, b, s, i4, typed, ext, scalar, empty):
        out[f"form_{t.name}.pb"] = t.SerializeToString()
    seq = numpy_helper.from_list([np.ones((2, 2), np.float32), np.zeros((1, 2), np.float32)], "seq")
    out["form_sequence.pb"] = seq.SerializeToString()
    opt = numpy_helper.from_optional(np.arange(3, dtype=np.int32), "opt")
    out["form_optional.pb"] = opt.SerializeToString()
    out["form_optional_empty.pb"] = numpy_helper.from_optional(None, "none", dtype=onnx.OptionalProto.TENSOR).SerializeToString()
    return out


def bundle_corpus() -> dict:
    """Small .sdx bundles of the seed models that compile (needs the built sdx package on PYTHONPATH)."""
    import sdx

    out = {}
    for name, model in sorted(seed_models().items()):
        data = model.SerializeToString()
        try:
            sess = sdx.InferenceSession(data)
            feeds = {}
            for i in sess.get_inputs():
                shape = [d if isinstance(d, int) else 2 for d in i.shape]
                feeds[i.name] = np.zeros(shape, np.int64) if "int64" in i.type else np.ones(shape, np.float32)
            blob = sdx.compile_bundle(data, [feeds])
        except Exception:  # models the engine refuses (they are fuzz seeds for the loader) have no bundle
            continue
        if len(blob) <= MAX_FILE:
            out[_safe(name) + ".sdx"] = blob
        if len(out) >= 8:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = ap.parse_args()
    total = 0
    for target, files in (("onnx_model", model_corpus()), ("tensor_proto", tensor_corpus()), ("bundle", bundle_corpus())):
        folder = os.path.join(args.out, target)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for name, blob in sorted(files.items()):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(blob)
        size = sum(len(b) for b in files.values())
        total += size
        print(f"{folder}: {len(files)} files, {size} bytes, largest {max(len(b) for b in files.values())}")
    if total > MAX_TOTAL:
        raise SystemExit(f"corpus is {total} bytes, over the {MAX_TOTAL} limit")


if __name__ == "__main__":
    main()
