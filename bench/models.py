"""Benchmark models, built with onnx.helper (nothing binary is committed).

* `dispatch_chain(ops=200)`: a chain of cheap elementwise ops on a float32[1, 16] input. Compute per op
  is trivial, so latency is dominated by per-op dispatch overhead (the quantity bench_dispatch.py
  measures).
* `transformer_encoder(...)`: the 4-layer encoder (seq 128, hidden 256, 4 heads, FFN 1024) in the
  exporter form. It lives in tests/python/models.py, shared with tests/python/test_plan_memory.py,
  and is loaded from there under a private module name (this file is also called `models`), as are
  `bert_encoder(...)` (post-LN BERT encoder, seq 128, int64 attention mask) and `gpt_decoder_step(...)`
  (one GPT decode step with a KV cache of 128 tokens).
* `mlp(...)`: a small MLP (3 hidden Gemm + Relu layers 256 wide, a Gemm + Sigmoid head; batch 1), the size
  of a voice-activity detector: overhead-bound.
* `resnet18(...)`: ResNet-18 at 224x224 as torch.onnx exports it in eval mode (Conv + BatchNormalization,
  not folded).
* `sgemm(n)`: one MatMul, float32 [n, n] input times an [n, n] weight (GEMM GFLOP/s).

The benchmark suite (bench/suite.py) runs them; SUITE_MODELS maps its model names to builders.

    python3 bench/models.py --out /tmp/models           # writes dispatch_chain.onnx and transformer_encoder.onnx
    python3 bench/models.py --out /tmp/models --suite   # also the suite's models (resnet18.onnx is 47 MB)
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


_TEST = _load_test_models()
transformer_encoder = _TEST.transformer_encoder
bert_encoder = _TEST.bert_encoder
gpt_decoder_step = _TEST.gpt_decoder_step

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


def mlp(layers: int = 3, width: int = 256, in_features: int = 256, out_features: int = 1, batch: int = 1,
        seed: int = 0, opset: int = 17, ir_version: int = 8) -> onnx.ModelProto:
    """`layers` x (Gemm transB=1 + Relu) of `width`, then Gemm to `out_features` + Sigmoid, as torch.onnx
    exports nn.Linear stacks on 2-D input. Input "x" float32[batch, in_features], output "prob"."""
    rng, inits, nodes, const, weight, node = _TEST._graph_builder(seed)
    h, n_in = "x", in_features
    for i in range(layers):
        w = weight(f"fc{i}.weight", (width, n_in), np.sqrt(2.0 / n_in))
        b = weight(f"fc{i}.bias", (width,), 0.02)
        h = node("Relu", [node("Gemm", [h, w, b], f"fc{i}/Gemm", transB=1)], f"fc{i}/Relu")
        n_in = width
    w = weight("head.weight", (out_features, n_in), 1.0 / np.sqrt(n_in))
    b = weight("head.bias", (out_features,), 0.02)
    node("Sigmoid", [node("Gemm", [h, w, b], "head/Gemm", transB=1)], "prob")
    return _TEST._finish(nodes, inits, "mlp",
                         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, in_features])],
                         [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [batch, out_features])], opset,
                         ir_version)


def resnet18(image: int = 224, batch: int = 1, classes: int = 1000, blocks: tuple = (2, 2, 2, 2),
             widths: tuple = (64, 128, 256, 512), seed: int = 0, opset: int = 17,
             ir_version: int = 8) -> onnx.ModelProto:
    """ResNet-18 (torchvision layout) as torch.onnx exports it in eval mode without folding BatchNorm.

    Input "x" float32[batch, 3, image, image], output "logits" float32[batch, classes]. Stem: Conv 7x7/2 pad 3
    (no bias) + BatchNormalization + Relu, MaxPool 3x3/2 pad 1. Stages of basic blocks: Conv 3x3 (stride 2 in
    the first block of stages 2-4) + BN + Relu, Conv 3x3 + BN, shortcut = input or Conv 1x1/2 + BN
    (downsample), Add, Relu. GlobalAveragePool, Flatten, Gemm (transB=1) to `classes`. Weights are He-scaled
    and BN statistics random, so activations stay O(1) through the 18 layers.
    """
    rng, inits, nodes, const, weight, node = _TEST._graph_builder(seed)

    def conv_bn(x: str, c_in: int, c_out: int, k: int, stride: int, p: str) -> str:
        w = weight(f"{p}.weight", (c_out, c_in, k, k), np.sqrt(2.0 / (c_in * k * k)))
        y = node("Conv", [x, w], f"{p}/Conv", kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride],
                 dilations=[1, 1], group=1)
        bn = p.replace("conv", "bn") if "conv" in p else f"{p}.bn"
        scale = const(f"{bn}.weight", rng.uniform(0.5, 1.0, c_out).astype(np.float32))
        bias = const(f"{bn}.bias", (0.1 * rng.standard_normal(c_out)).astype(np.float32))
        mean = const(f"{bn}.running_mean", (0.1 * rng.standard_normal(c_out)).astype(np.float32))
        var = const(f"{bn}.running_var", rng.uniform(0.5, 1.5, c_out).astype(np.float32))
        return node("BatchNormalization", [y, scale, bias, mean, var], f"{bn}/BatchNormalization", epsilon=1e-5,
                    momentum=0.9)

    h = node("Relu", [conv_bn("x", 3, widths[0], 7, 2, "conv1")], "relu")
    h = node("MaxPool", [h], "maxpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    c_in = widths[0]
    for s, (c, n) in enumerate(zip(widths, blocks)):
        for b in range(n):
            p = f"layer{s + 1}.{b}"
            stride = 2 if s > 0 and b == 0 else 1
            y = node("Relu", [conv_bn(h, c_in, c, 3, stride, f"{p}.conv1")], f"{p}/relu")
            y = conv_bn(y, c, c, 3, 1, f"{p}.conv2")
            shortcut = conv_bn(h, c_in, c, 1, stride, f"{p}.downsample.0") if (stride != 1 or c_in != c) else h
            h = node("Relu", [node("Add", [y, shortcut], f"{p}/Add")], f"{p}/relu_1")
            c_in = c
    pooled = node("Flatten", [node("GlobalAveragePool", [h], "avgpool")], "flatten", axis=1)
    fc_w = weight("fc.weight", (classes, c_in), 1.0 / np.sqrt(c_in))
    fc_b = weight("fc.bias", (classes,), 0.02)
    nodes.append(helper.make_node("Gemm", [pooled, fc_w, fc_b], ["logits"], name="fc/Gemm", alpha=1.0, beta=1.0,
                                  transB=1))
    return _TEST._finish(nodes, inits, "resnet18",
                         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, image, image])],
                         [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])], opset,
                         ir_version)


def sgemm(n: int = 1024, seed: int = 0, opset: int = 17, ir_version: int = 8) -> onnx.ModelProto:
    """Y = MatMul(A, W): input "a" float32[n, n], weight W [n, n] (an initializer, as in a Linear layer)."""
    rng, inits, nodes, const, weight, node = _TEST._graph_builder(seed)
    node("MatMul", ["a", weight("w", (n, n), 1.0 / np.sqrt(n))], "y")
    return _TEST._finish(nodes, inits, f"sgemm_{n}", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], opset, ir_version)


# The benchmark suite's models (bench/suite.py), by name.
SUITE_MODELS = {
    "mlp": mlp,
    "bert": lambda: bert_encoder(seq=128),
    "gpt_decoder": lambda: gpt_decoder_step(past=128),
    "resnet": resnet18,
    "chain": lambda: dispatch_chain(200),
}


def main() -> None:
    p = argparse.ArgumentParser(description="Write the benchmark models as .onnx files.")
    p.add_argument("--out", default=".", help="output folder (default: current folder)")
    p.add_argument("--ops", type=int, default=200, help="nodes in the dispatch chain (default 200)")
    p.add_argument("--suite", action="store_true",
                   help="also write the suite's models (mlp, bert, gpt_decoder, resnet)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    todo = [("dispatch_chain", lambda: dispatch_chain(args.ops)), ("transformer_encoder", transformer_encoder)]
    if args.suite:
        todo += [(n, b) for n, b in SUITE_MODELS.items() if n != "chain"]
    for name, build in todo:
        model = build()
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(model, path)
        print(f"wrote {path}: {len(model.graph.node)} nodes, {os.path.getsize(path) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
