#!/usr/bin/env python3
"""Each optimizer fusion against the op sequence it replaces: p50 latency of sdx with the optimizer on
("fused") and off ("unfused") on a one-pattern model, in one process, interleaved, same thread count.

    cd /tmp && python3 /path/to/repo/bench/bench_fusions.py [--threads 2] [--json FILE]

Patterns are written the way exporters emit them (LayerNorm as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/
Div/Mul/Add, GELU as Div/Erf/Add/Mul/Mul, attention as MatMul/Div/Softmax/MatMul, ...). The script checks
that fused and unfused outputs agree (allclose rtol 1e-4, atol 1e-5) and that the fusion happened.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def _const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)


def _model(nodes, inputs, output, inits, opset=17):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(output, F, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def layernorm(n=128, h=256):
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]), helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]), helper.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["nrm"]), helper.make_node("Mul", ["nrm", "g"], ["sc"]),
             helper.make_node("Add", ["sc", "b"], ["y"])]
    inits = [_const("two", 2.0), _const("eps", 1e-5), _const("g", RNG.standard_normal(h)), _const("b", RNG.standard_normal(h))]
    return "LayerNorm", "fuse_normalizations", _model(nodes, [("x", [1, n, h])], "y", inits), {"x": [1, n, h]}


def gelu(n=128, h=1024):
    nodes = [helper.make_node("Div", ["x", "sq2"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["x", "e1"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
    inits = [_const("sq2", np.sqrt(2.0)), _const("one", 1.0), _const("half", 0.5)]
    return "GELU (erf)", "fuse_activations", _model(nodes, [("x", [1, n, h])], "y", inits), {"x": [1, n, h]}


def linear(n=128, k=256, m=1024):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]),
             helper.make_node("Relu", ["u"], ["y"])]
    inits = [_const("w", RNG.standard_normal((k, m)) * 0.05), _const("b", RNG.standard_normal(m))]
    return "Linear (MatMul+Add+Relu)", "fuse_linear", _model(nodes, [("x", [n, k])], "y", inits), {"x": [n, k]}


def attention(b=1, h=4, s=128, d=64):
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["sc"]),
             helper.make_node("Div", ["sc", "sd"], ["ss"]), helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    shp = [b, h, s, d]
    return ("Attention (S=128)", "fuse_attention",
            _model(nodes, [("q", shp), ("k", shp), ("v", shp)], "y", [_const("sd", np.sqrt(d))]), {"q": shp, "k": shp, "v": shp})


def conv_bn_relu(c=16, hw=32):
    w = RNG.standard_normal((c, c, 3, 3)) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w"], ["cv"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["cv", "sc", "bi", "mu", "var"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["y"])]
    inits = [_const("w", w), _const("sc", RNG.uniform(0.5, 1.5, c)), _const("bi", RNG.standard_normal(c)),
             _const("mu", RNG.standard_normal(c) * 0.1), _const("var", RNG.uniform(0.5, 1.5, c))]
    return "Conv+BN+Relu", "fuse_conv_epilogue", _model(nodes, [("x", [1, c, hw, hw])], "y", inits), {"x": [1, c, hw, hw]}


def swiglu(n=128, k=256, m=512):
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"]), helper.make_node("MatMul", ["x", "w2"], ["g"]),
             helper.make_node("Sigmoid", ["a"], ["sa"]), helper.make_node("Mul", ["a", "sa"], ["silu"]),
             helper.make_node("Mul", ["silu", "g"], ["y"])]
    inits = [_const("w1", RNG.standard_normal((k, m)) * 0.05), _const("w2", RNG.standard_normal((k, m)) * 0.05)]
    return "SwiGLU", "fuse_gated_linear_units", _model(nodes, [("x", [n, k])], "y", inits), {"x": [n, k]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--block", type=int, default=20)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    import sdx

    rows = []
    for build in (layernorm, gelu, linear, attention, conv_bn_relu, swiglu):
        name, pass_name, model, shapes = build()
        feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
        sess = {}
        for fused in (True, False):
            o = sdx.SessionOptions()
            o.intra_op_num_threads = args.threads
            o.optimizer_enabled = fused
            sess[fused] = sdx.InferenceSession(model.SerializeToString(), o)
        rewrites = sess[True].optimization_report()["rewrites_per_pass"].get(pass_name, 0)
        a, b = sess[True].run(None, feeds)[0], sess[False].run(None, feeds)[0]
        same = bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))
        for s in sess.values():
            for _ in range(5):
                s.run(None, feeds)
        t = {True: [], False: []}
        for r in range(args.rounds):
            for fused in ((True, False) if r % 2 == 0 else (False, True)):
                for _ in range(args.block):
                    t0 = time.perf_counter_ns()
                    sess[fused].run(None, feeds)
                    t[fused].append(time.perf_counter_ns() - t0)
        f50, u50 = (float(np.percentile(np.asarray(t[k]) / 1e3, 50)) for k in (True, False))
        rows.append({"pattern": name, "pass": pass_name, "rewrites": rewrites, "fused_p50_us": f50, "unfused_p50_us": u50,
                     "speedup": u50 / f50, "outputs_allclose": same,
                     "max_abs_diff": float(np.max(np.abs(a - b)))})
        print(f"{name:26s} {pass_name}: {rewrites} rewrite(s); fused {f50:9.1f} us, unfused {u50:9.1f} us, "
              f"speedup {u50 / f50:5.2f}x, outputs {'match' if same else 'DIFFER'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "rows": rows}, f, indent=2)
    return 0 if all(r["outputs_allclose"] and r["rewrites"] > 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
