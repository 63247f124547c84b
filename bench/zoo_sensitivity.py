#!/usr/bin/env python3
"""How far onnxruntime's own output moves under one-ulp changes, beside how far sdx's is from it.

A dynamically quantized model (onnxruntime's quantize_dynamic: DynamicQuantizeLinear, ConvInteger,
DynamicQuantizeLSTM) rounds its activations to 8 bits on every call, so a difference in the last bit of
a value before a rounding step can move one 8-bit code, and a recurrent layer carries that forward.
Two engines can then agree only as well as one engine agrees with itself under such a change. For each
seed this prints the relative L2 distance (first output) between:
  - onnxruntime(x) and onnxruntime(x one ulp up, every element);
  - onnxruntime(x) and onnxruntime on the model with every float32 initializer one ulp up;
  - onnxruntime(x) and sdx(x).
The zoo's tolerance for such a model (bench/zoo.toml, `tolerance_why`) is set from these figures.

  python3 bench/zoo_sensitivity.py crnn_int8_ddddocr_old --seeds 10
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402


def rel_l2(a, b) -> float:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))


def nudged_model(path: str) -> bytes:
    import onnx
    from onnx import numpy_helper

    m = onnx.load(path)
    for t in m.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT:
            a = numpy_helper.to_array(t)
            t.CopyFrom(numpy_helper.from_array(np.nextafter(a, np.float32(np.inf)).astype(np.float32), t.name))
    return m.SerializeToString()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a model name from bench/zoo.toml")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import onnxruntime as ort
    import sdx

    m = next((x for x in zoo.load_zoo() if x["name"] == args.model), None)
    if m is None:
        print(f"no model {args.model!r} in bench/zoo.toml", file=sys.stderr)
        return 2
    path = zoo.fetch(m, zoo.default_cache_dir())
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.log_severity_level = 3
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    nudged = ort.InferenceSession(nudged_model(path), so, providers=["CPUExecutionProvider"])
    sso = sdx.SessionOptions()
    sso.intra_op_num_threads = args.threads
    mine = sdx.InferenceSession(path, sso)
    rows = []
    print("| seed | ort vs ort(x + 1 ulp) | ort vs ort(initializers + 1 ulp) | ort vs sdx |")
    print("|---|---|---|---|")
    for seed in range(args.seeds):
        feeds = zoo.make_feeds(m, seed)
        up = {k: (np.nextafter(v, np.float32(np.inf)).astype(v.dtype) if v.dtype == np.float32 else v) for k, v in feeds.items()}
        want = ref.run(None, feeds)[0]
        row = (rel_l2(want, ref.run(None, up)[0]), rel_l2(want, nudged.run(None, feeds)[0]), rel_l2(want, mine.run(None, feeds)[0]))
        rows.append(row)
        print(f"| {seed} | {row[0]:.2e} | {row[1]:.2e} | {row[2]:.2e} |")
    cols = np.array(rows)
    print("| median | " + " | ".join(f"{v:.2e}" for v in np.median(cols, axis=0)) + " |")
    print("| max | " + " | ".join(f"{v:.2e}" for v in cols.max(axis=0)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
