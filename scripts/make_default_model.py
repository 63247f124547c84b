"""Writes the bundled default model: a small image classifier (Conv, BatchNorm-free
ReLU stack, pooling, Gemm, Softmax) with seeded random weights.

    python3 scripts/make_default_model.py models/default.onnx
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def w(name, *shape, scale=0.1):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("conv1.w", 8, 3, 3, 3), w("conv1.b", 8), w("conv2.w", 16, 8, 3, 3), w("conv2.b", 16),
             w("fc.w", 16 * 8 * 8, 10, scale=0.02), w("fc.b", 10)]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["flat"], name="flatten", axis=1),
        helper.make_node("MatMul", ["flat", "fc.w"], ["mm"], name="fc"),
        helper.make_node("Add", ["mm", "fc.b"], ["logits"], name="fc_bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "sdx_default_classifier",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="sdx")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "models/default.onnx"
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    onnx.save(build(), out)
    print(f"wrote {out}")
