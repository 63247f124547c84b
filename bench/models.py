"""Benchmark models, built with onnx.helper (nothing binary is committed).

* `dispatch_chain(ops=200)`: a chain of cheap elementwise ops on a float32[1, 16] input. Compute per op
  is trivial, so latency is dominated by per-op dispatch overhead (the quantity bench_dispatch.py
  measures).
* `transformer_encoder(...)`: the 4-layer encoder (seq 128, hidden 256, 4 heads, FFN 1024) in the
  exporter form. It lives in tests/python/models.py, shared with tests/python/test_plan_memory.py,
  and is loaded from there under a private module name (this file is also called `models`).

    python3 bench/models.py --out /tmp/models   # writes dispatch_chain.onnx and transformer_encoder.onnx
"""
from __future__ import annotations

import argparse
import importlib.util
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TEST_MODELS = os.path.join(ROOT, "tests", "python", "models.py")


def _load_test_models():
    spec = importlib.util.spec_from_file_location("sdx_test_models", _TEST_MODELS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


transformer_encoder = _load_test_models().transformer_encoder

# The cycle of the dispatch chain; ops with a constant operand get their own [16] constant each.
# With Add in [0, 1), Mul in [0.5, 1), Sub in [0, 0.5) and Max flooring at [0.1, 0.5), values stay
# bounded (Mul < 1), finite, and never all zero (Max floors every element above 0).
DISPATCH_CYCLE = ("Add", "Mul", "Sub", "Relu", "Neg", "Abs", "Max")
_CONST_RANGE = {"Add": (0.0, 1.0), "Mul": (0.5, 1.0), "Sub": (0.0, 0.5), "Max": (0.1, 0.5)}


def dispatch_chain(ops: int = 200, width: int = 16, seed: int = 0, opset: int = 17, ir_version: int = 8) -> onnx.ModelProto:
    """`ops` elementwise nodes cycling through DISPATCH_CYCLE: input "x" float32[1, width], output "y"."""
    if ops < 1:
        raise ValueError("ops must be >= 1")
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    prev = "x"
    for i in range(ops):
        op = DISPATCH_CYCLE[i % len(DISPATCH_CYCLE)]
        out = "y" if i == ops - 1 else f"t{i}"
        inputs = [prev]
        if op in _CONST_RANGE:
            lo, hi = _CONST_RANGE[op]
            c = numpy_helper.from_array(rng.uniform(lo, hi, width).astype(np.float32), f"c{i}")
            inits.append(c)
            inputs.append(c.name)
        nodes.append(helper.make_node(op, inputs, [out], name=f"n{i}_{op}"))
        prev = out
    g = helper.make_graph(nodes, f"dispatch_chain_{ops}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
                          initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="sdx-bench")
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    return model


def main() -> None:
    p = argparse.ArgumentParser(description="Write the benchmark models as .onnx files.")
    p.add_argument("--out", default=".", help="output folder (default: current folder)")
    p.add_argument("--ops", type=int, default=200, help="nodes in the dispatch chain (default 200)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, model in (("dispatch_chain", dispatch_chain(args.ops)), ("transformer_encoder", transformer_encoder())):
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(model, path)
        print(f"wrote {path}: {len(model.graph.node)} nodes, {os.path.getsize(path) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
