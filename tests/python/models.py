"""Small test models built with onnx.helper."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def relu_model(opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def mlp_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 2)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
        helper.make_node("MatMul", ["h2", "w2"], ["logits"], name="mm2"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 2]),
                           helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])],
                          initializer=[w1, b1, w2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def mlp_reference(x: np.ndarray) -> tuple:
    m = mlp_model()
    w = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    h = np.maximum(x @ w["w1"] + w["b1"], 0)
    logits = h @ w["w2"]
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), logits


def transformer_encoder(layers: int = 4, seq: int = 128, hidden: int = 256, heads: int = 4, ffn: int = 1024,
                        seed: int = 0, opset: int = 17, ir_version: int = 8) -> onnx.ModelProto:
    """A pre-LayerNorm transformer encoder (batch 1) written the way exporters (torch.onnx) emit it.

    Input "x" float32[1, seq, hidden] (token embeddings), output "y" of the same shape. Per layer:
      LayerNorm decomposed: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta;
      attention: Q/K/V = MatMul + Add bias, Reshape [1, seq, heads, d], Transpose to [1, heads, seq, d]
        (K to [1, heads, d, seq]), MatMul QK^T, Div sqrt(d), Softmax, MatMul V, Transpose back,
        Reshape [1, seq, hidden], output projection MatMul + Add, residual Add;
      FFN: LayerNorm, MatMul + Add, GELU as Div sqrt(2) / Erf / Add 1 / Mul x / Mul 0.5, MatMul + Add,
        residual Add.
    A final LayerNorm follows the last layer. Weights are random (fixed seed), scaled so activations
    stay O(1). ir_version 8 keeps the model loadable by onnxruntime.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    d = hidden // heads
    rng = np.random.default_rng(seed)
    inits: list = []
    nodes: list = []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(name: str, shape: tuple, scale: float) -> str:
        return const(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def node(op: str, inputs: list, name: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    f32 = lambda v: np.array(v, dtype=np.float32)  # noqa: E731
    eps, two, sqrt_d = const("ln_eps", f32(1e-5)), const("pow_2", f32(2.0)), const("sqrt_d", f32(np.sqrt(d)))
    sqrt2, one, half = const("gelu_sqrt2", f32(np.sqrt(2.0))), const("gelu_one", f32(1.0)), const("gelu_half", f32(0.5))
    split_shape = const("shape_split_heads", np.array([1, seq, heads, d], np.int64))
    merge_shape = const("shape_merge_heads", np.array([1, seq, hidden], np.int64))

    def layer_norm(x: str, p: str) -> str:
        gamma = const(f"{p}.weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        beta = const(f"{p}.bias", (0.1 * rng.standard_normal(hidden)).astype(np.float32))
        mean = node("ReduceMean", [x], f"{p}/ReduceMean", axes=[-1], keepdims=1)
        centered = node("Sub", [x, mean], f"{p}/Sub")
        sq = node("Pow", [centered, two], f"{p}/Pow")
        var = node("ReduceMean", [sq], f"{p}/ReduceMean_1", axes=[-1], keepdims=1)
        var_eps = node("Add", [var, eps], f"{p}/Add")
        std = node("Sqrt", [var_eps], f"{p}/Sqrt")
        normed = node("Div", [centered, std], f"{p}/Div")
        scaled = node("Mul", [normed, gamma], f"{p}/Mul")
        return node("Add", [scaled, beta], f"{p}/Add_1")

    def linear(x: str, p: str, n_in: int, n_out: int) -> str:
        w = weight(f"{p}.weight", (n_in, n_out), 1.0 / np.sqrt(n_in))
        b = weight(f"{p}.bias", (n_out,), 0.02)
        return node("Add", [node("MatMul", [x, w], f"{p}/MatMul"), b], f"{p}/Add")

    def attention(x: str, p: str) -> str:
        def heads_of(name: str, perm: list) -> str:
            proj = linear(x, f"{p}/{name}", hidden, hidden)
            split = node("Reshape", [proj, split_shape], f"{p}/{name}/Reshape")
            return node("Transpose", [split], f"{p}/{name}/Transpose", perm=perm)

        q = heads_of("query", [0, 2, 1, 3])   # [1, heads, seq, d]
        k = heads_of("key", [0, 2, 3, 1])     # [1, heads, d, seq]
        v = heads_of("value", [0, 2, 1, 3])   # [1, heads, seq, d]
        scores = node("MatMul", [q, k], f"{p}/MatMul_qk")
        scaled = node("Div", [scores, sqrt_d], f"{p}/Div")
        probs = node("Softmax", [scaled], f"{p}/Softmax", axis=-1)
        ctx = node("MatMul", [probs, v], f"{p}/MatMul_v")
        ctx_t = node("Transpose", [ctx], f"{p}/Transpose", perm=[0, 2, 1, 3])
        merged = node("Reshape", [ctx_t, merge_shape], f"{p}/Reshape")
        return linear(merged, f"{p}/output", hidden, hidden)

    def gelu(x: str, p: str) -> str:
        erf = node("Erf", [node("Div", [x, sqrt2], f"{p}/Div")], f"{p}/Erf")
        return node("Mul", [node("Mul", [x, node("Add", [erf, one], f"{p}/Add")], f"{p}/Mul"), half], f"{p}/Mul_1")

    h = "x"
    for i in range(layers):
        p = f"layer.{i}"
        h = node("Add", [h, attention(layer_norm(h, f"{p}/ln_1"), f"{p}/attention")], f"{p}/attention/residual")
        up = gelu(linear(layer_norm(h, f"{p}/ln_2"), f"{p}/ffn/up", hidden, ffn), f"{p}/ffn/gelu")
        h = node("Add", [h, linear(up, f"{p}/ffn/down", ffn, hidden)], f"{p}/ffn/residual")
    layer_norm(h, "final_ln")
    nodes[-1].output[0] = "y"  # the final LayerNorm's last Add writes the graph output
    g = helper.make_graph(nodes, "transformer_encoder",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])],
                          initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="sdx-tests")
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    return model
