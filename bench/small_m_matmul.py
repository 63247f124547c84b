"""MatMul with few rows (a decode step, a small dynamic batch): Y[M, N] = X[M, K] W[K, N] with W a constant, in
sdx and onnxruntime side by side, for M = 1..16, in paired rounds (each round: a block of calls per engine after
an idle pause, the order alternating).

  python3 bench/small_m_matmul.py [--k 1024 --n 1024] [--threads 1] [--rounds 7] [--isa avx2|avx512]

--isa sets SDX_CPU_ISA for sdx (to compare its kernel levels); onnxruntime runs as it does by default.
Prints per M the p50 of each engine and the median of the per-round ratios sdx/onnxruntime.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import interleave, make_ort, paired_ratios, pick_block  # noqa: E402


def model(K: int, N: int) -> bytes:
    w = (np.random.default_rng(0).standard_normal((K, N)) * 0.02).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "small_m",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", N])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--m", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 8, 12, 16])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block-ms", type=float, default=60.0)
    ap.add_argument("--isa", choices=["scalar", "avx2", "avx512"], help="SDX_CPU_ISA for sdx")
    args = ap.parse_args()
    if args.isa:
        os.environ["SDX_CPU_ISA"] = args.isa
    import sdx

    data = model(args.k, args.n)
    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = args.threads
    engines = {"sdx": sdx.InferenceSession(data, opts), "ort": make_ort(data, args.threads)}
    print(f"MatMul [M, {args.k}] x [{args.k}, {args.n}], {args.threads} thread(s), "
          f"sdx level {args.isa or 'detected'}, {args.rounds} rounds")
    for M in args.m:
        feeds = {"x": np.random.default_rng(M).standard_normal((M, args.k)).astype(np.float32)}
        want = engines["ort"].run(None, feeds)[0]
        got = engines["sdx"].run(None, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        for sess in engines.values():
            for _ in range(10):
                sess.run(None, feeds)
        block = pick_block(engines, feeds, args.block_ms)
        samples = interleave(engines, feeds, args.rounds, block)
        p50 = {k: float(np.median([x for r in v for x in r])) / 1e3 for k, v in samples.items()}
        ratio = statistics.median(paired_ratios(samples["sdx"], samples["ort"]))
        print(f"M={M:3d}: sdx {p50['sdx']:8.1f} us  onnxruntime {p50['ort']:8.1f} us  sdx/onnxruntime {ratio:.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
