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


def _graph_builder(seed: int):
    """Shared helpers of the exporter-style models below: constants, random weights and nodes, appended
    to the returned lists."""
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

    return rng, inits, nodes, const, weight, node


def _finish(nodes: list, inits: list, name: str, inputs: list, outputs: list, opset: int, ir_version: int,
            extra_opsets: tuple = ()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), *extra_opsets], producer_name="sdx-tests")
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    return model


def _transformer_parts(rng, const, weight, node, hidden: int):
    """LayerNorm (decomposed), Linear (MatMul + Add) and GELU (Erf form) as torch.onnx exports them."""
    f32 = lambda v: np.array(v, dtype=np.float32)  # noqa: E731
    eps, two = const("ln_eps", f32(1e-5)), const("pow_2", f32(2.0))
    sqrt2, one, half = const("gelu_sqrt2", f32(np.sqrt(2.0))), const("gelu_one", f32(1.0)), const("gelu_half", f32(0.5))

    def layer_norm(x: str, p: str) -> str:
        gamma = const(f"{p}.weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        beta = const(f"{p}.bias", (0.1 * rng.standard_normal(hidden)).astype(np.float32))
        mean = node("ReduceMean", [x], f"{p}/ReduceMean", axes=[-1], keepdims=1)
        centered = node("Sub", [x, mean], f"{p}/Sub")
        var = node("ReduceMean", [node("Pow", [centered, two], f"{p}/Pow")], f"{p}/ReduceMean_1", axes=[-1], keepdims=1)
        std = node("Sqrt", [node("Add", [var, eps], f"{p}/Add")], f"{p}/Sqrt")
        normed = node("Div", [centered, std], f"{p}/Div")
        return node("Add", [node("Mul", [normed, gamma], f"{p}/Mul"), beta], f"{p}/Add_1")

    def linear(x: str, p: str, n_in: int, n_out: int) -> str:
        w = weight(f"{p}.weight", (n_in, n_out), 1.0 / np.sqrt(n_in))
        b = weight(f"{p}.bias", (n_out,), 0.02)
        return node("Add", [node("MatMul", [x, w], f"{p}/MatMul"), b], f"{p}/Add")

    def gelu(x: str, p: str) -> str:
        erf = node("Erf", [node("Div", [x, sqrt2], f"{p}/Div")], f"{p}/Erf")
        return node("Mul", [node("Mul", [x, node("Add", [erf, one], f"{p}/Add")], f"{p}/Mul"), half], f"{p}/Mul_1")

    return layer_norm, linear, gelu


def bert_encoder(layers: int = 4, seq: int = 128, hidden: int = 256, heads: int = 4, ffn: int = 1024, batch: int = 1,
                 mask_value: float = float(np.finfo(np.float32).min), seed: int = 0, opset: int = 17,
                 ir_version: int = 8) -> onnx.ModelProto:
    """A post-LayerNorm BERT encoder (HF BertModel's encoder, no embeddings) as torch.onnx exports it.

    Inputs "x" float32[batch, seq, hidden] (embeddings) and "attention_mask" int64[batch, seq] (1 = token,
    0 = padding); output "y" float32[batch, seq, hidden]. The additive mask is built once, the HF way:
      Unsqueeze(attention_mask, [1]) -> Unsqueeze([2]) -> Cast(float) -> Sub(1, m) -> Mul(m, mask_value)
    ([batch, 1, 1, seq]; mask_value finfo(float32).min as transformers >= 4.x, -10000 for older exports).
    Per layer: Q/K/V = MatMul + Add, Reshape [batch, seq, heads, d], Transpose [0, 2, 1, 3]; K^T as a second
    Transpose [0, 1, 3, 2] (key_layer.transpose(-1, -2)); MatMul, Div sqrt(d), Add mask, Softmax, MatMul V,
    Transpose back, Reshape, output MatMul + Add, residual Add, LayerNorm (decomposed); FFN MatMul + Add,
    GELU (Erf form), MatMul + Add, residual Add, LayerNorm. Per layer: 1 attention, 2 LayerNorms, 1 GELU,
    1 Q/K/V triple.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    d = hidden // heads
    rng, inits, nodes, const, weight, node = _graph_builder(seed)
    layer_norm, linear, gelu = _transformer_parts(rng, const, weight, node, hidden)
    f32 = lambda v: np.array(v, dtype=np.float32)  # noqa: E731
    sqrt_d = const("sqrt_d", f32(np.sqrt(d)))
    split_shape = const("shape_split_heads", np.array([batch, seq, heads, d], np.int64))
    merge_shape = const("shape_merge_heads", np.array([batch, seq, hidden], np.int64))

    ext = node("Unsqueeze", ["attention_mask", const("axes_1", np.array([1], np.int64))], "mask/Unsqueeze")
    ext = node("Unsqueeze", [ext, const("axes_2", np.array([2], np.int64))], "mask/Unsqueeze_1")
    ext = node("Cast", [ext], "mask/Cast", to=TensorProto.FLOAT)
    inv = node("Sub", [const("mask_one", f32(1.0)), ext], "mask/Sub")
    mask = node("Mul", [inv, const("mask_value", f32(mask_value))], "mask/Mul")

    def attention(x: str, p: str) -> str:
        def heads_of(name: str) -> str:
            proj = linear(x, f"{p}/{name}", hidden, hidden)
            split = node("Reshape", [proj, split_shape], f"{p}/{name}/Reshape")
            return node("Transpose", [split], f"{p}/{name}/Transpose", perm=[0, 2, 1, 3])

        q, k, v = heads_of("query"), heads_of("key"), heads_of("value")
        kt = node("Transpose", [k], f"{p}/key/Transpose_1", perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, kt], f"{p}/MatMul"), sqrt_d], f"{p}/Div")
        probs = node("Softmax", [node("Add", [scores, mask], f"{p}/Add")], f"{p}/Softmax", axis=-1)
        ctx = node("MatMul", [probs, v], f"{p}/MatMul_1")
        merged = node("Reshape", [node("Transpose", [ctx], f"{p}/Transpose", perm=[0, 2, 1, 3]), merge_shape],
                      f"{p}/Reshape")
        return linear(merged, f"{p}/output/dense", hidden, hidden)

    h = "x"
    for i in range(layers):
        p = f"encoder.layer.{i}"
        h = layer_norm(node("Add", [attention(h, f"{p}/attention"), h], f"{p}/attention/residual"), f"{p}/attention/ln")
        up = gelu(linear(h, f"{p}/intermediate/dense", hidden, ffn), f"{p}/intermediate/gelu")
        h = layer_norm(node("Add", [linear(up, f"{p}/output/dense", ffn, hidden), h], f"{p}/output/residual"),
                       f"{p}/output/ln")
    nodes[-1].output[0] = "y"
    return _finish(nodes, inits, "bert_encoder",
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden]),
                    helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])], opset, ir_version)


def gpt_decoder_step(layers: int = 4, past: int = 128, hidden: int = 256, heads: int = 4, ffn: int = 1024,
                     batch: int = 1, max_positions: int = 256, seed: int = 0, opset: int = 17,
                     ir_version: int = 8) -> onnx.ModelProto:
    """One decode step of a pre-LayerNorm GPT decoder with a KV cache, the attention written as HF GPT-2's
    _attn exports it.

    Inputs "x" float32[batch, 1, hidden] (the new token's embedding) and, per layer i, "past_key_i" and
    "past_value_i" float32[batch, heads, past, d]; outputs "y" float32[batch, 1, hidden] and "present_key_i",
    "present_value_i" float32[batch, heads, past + 1, d]. Per layer: LayerNorm; Q/K/V as three MatMul + Add
    (GPT-2 has one fused c_attn; GPT-Neo/GPT-J/LLaMA-style separate projections here, so horizontal fusion
    has a triple to merge), Reshape [batch, 1, heads, d], Transpose [0, 2, 1, 3]; K, V = Concat(past, new,
    axis -2) (also the present outputs); scores = MatMul(q, Transpose(K, [0, 1, 3, 2])) / sqrt(d); the causal
    mask sliced from the constant lower-triangular bool buffer "bias" [1, 1, max_positions, max_positions]:
    bias[:, :, k_len - q_len : k_len, :k_len] with k_len, q_len = Gather(Shape(.), 2), then
    Where(mask, scores, finfo(float32).min); Softmax; MatMul V; Transpose; Reshape; output MatMul + Add;
    residual; LayerNorm; MLP MatMul + Add, GELU (Erf form), MatMul + Add; residual. A final LayerNorm.
    Per layer: 1 attention, 2 LayerNorms, 1 GELU, 1 Q/K/V triple; plus the final LayerNorm.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    if past + 1 > max_positions:
        raise ValueError(f"past {past} + 1 exceeds max_positions {max_positions}")
    d = hidden // heads
    rng, inits, nodes, const, weight, node = _graph_builder(seed)
    layer_norm, linear, gelu = _transformer_parts(rng, const, weight, node, hidden)
    f32 = lambda v: np.array(v, dtype=np.float32)  # noqa: E731
    i64 = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    scale = const("attn_scale", f32(np.sqrt(d)))
    mask_value = const("mask_value", f32(np.finfo(np.float32).min))
    split_shape = const("shape_split_heads", i64([batch, 1, heads, d]))
    merge_shape = const("shape_merge_heads", i64([batch, 1, hidden]))
    two, axes0, zero = const("idx_2", i64(2)), const("axes_0", i64([0])), const("zero_1d", i64([0]))
    ax2, ax3, step1 = const("slice_axis_2", i64([2])), const("slice_axis_3", i64([3])), const("step_1", i64([1]))
    tril = np.tril(np.ones((max_positions, max_positions), dtype=bool)).reshape(1, 1, max_positions, max_positions)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, hidden])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1, hidden])]

    def attention(x: str, p: str, i: int) -> str:
        def heads_of(name: str) -> str:
            proj = linear(x, f"{p}/{name}", hidden, hidden)
            return node("Transpose", [node("Reshape", [proj, split_shape], f"{p}/{name}/Reshape")],
                        f"{p}/{name}/Transpose", perm=[0, 2, 1, 3])

        q, k_new, v_new = heads_of("q_proj"), heads_of("k_proj"), heads_of("v_proj")
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_{kind}_{i}", TensorProto.FLOAT, [batch, heads, past, d]))
            outputs.append(helper.make_tensor_value_info(f"present_{kind}_{i}", TensorProto.FLOAT,
                                                         [batch, heads, past + 1, d]))
        key = node("Concat", [f"past_key_{i}", k_new], f"present_key_{i}", axis=-2)
        value = node("Concat", [f"past_value_{i}", v_new], f"present_value_{i}", axis=-2)
        kt = node("Transpose", [key], f"{p}/Transpose_k", perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, kt], f"{p}/MatMul"), scale], f"{p}/Div")
        q_len = node("Gather", [node("Shape", [q], f"{p}/Shape"), two], f"{p}/Gather", axis=0)
        k_len = node("Gather", [node("Shape", [key], f"{p}/Shape_1"), two], f"{p}/Gather_1", axis=0)
        start = node("Unsqueeze", [node("Sub", [k_len, q_len], f"{p}/Sub"), axes0], f"{p}/Unsqueeze")
        end = node("Unsqueeze", [k_len, axes0], f"{p}/Unsqueeze_1")
        bias = const(f"{p}.bias", tril)
        rows = node("Slice", [bias, start, end, ax2, step1], f"{p}/Slice")
        causal = node("Slice", [rows, zero, end, ax3, step1], f"{p}/Slice_1")
        masked = node("Where", [causal, scores, mask_value], f"{p}/Where")
        probs = node("Softmax", [masked], f"{p}/Softmax", axis=-1)
        ctx = node("MatMul", [probs, value], f"{p}/MatMul_1")
        merged = node("Reshape", [node("Transpose", [ctx], f"{p}/Transpose", perm=[0, 2, 1, 3]), merge_shape],
                      f"{p}/Reshape")
        return linear(merged, f"{p}/out_proj", hidden, hidden)

    h = "x"
    for i in range(layers):
        p = f"h.{i}"
        h = node("Add", [h, attention(layer_norm(h, f"{p}/ln_1"), f"{p}/attn", i)], f"{p}/attn/residual")
        up = gelu(linear(layer_norm(h, f"{p}/ln_2"), f"{p}/mlp/c_fc", hidden, ffn), f"{p}/mlp/gelu")
        h = node("Add", [h, linear(up, f"{p}/mlp/c_proj", ffn, hidden)], f"{p}/mlp/residual")
    layer_norm(h, "ln_f")
    nodes[-1].output[0] = "y"
    return _finish(nodes, inits, "gpt_decoder_step", inputs, outputs, opset, ir_version)


def cnn_bn(stages: tuple = (16, 32, 64), blocks_per_stage: int = 1, image: int = 64, batch: int = 1,
           classes: int = 10, seed: int = 0, opset: int = 17, ir_version: int = 8) -> onnx.ModelProto:
    """A small ResNet (basic blocks) as torch.onnx exports it in eval mode without folding BatchNorm.

    Input "x" float32[batch, 3, image, image], output "logits" float32[batch, classes]. Stem: Conv 3x3
    (3 -> stages[0]) + BatchNormalization + Relu. Per stage s and block: Conv 3x3 (stride 2 in the first
    block of every stage after the first) + BN + Relu + Conv 3x3 + BN, shortcut = the input or, when the
    shape changes, Conv 1x1 stride 2 + BN; residual Add; Relu. Then GlobalAveragePool, Flatten, Gemm
    (transB=1). Every Conv is followed by exactly one BatchNormalization.
    """
    rng, inits, nodes, const, weight, node = _graph_builder(seed)
    counter = [0]

    def conv_bn(x: str, c_in: int, c_out: int, k: int, stride: int, p: str) -> str:
        w = weight(f"{p}.conv.weight", (c_out, c_in, k, k), np.sqrt(2.0 / (c_in * k * k)))
        y = node("Conv", [x, w], f"{p}/Conv", kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride])
        scale = const(f"{p}.bn.weight", (1.0 + 0.1 * rng.standard_normal(c_out)).astype(np.float32))
        bias = const(f"{p}.bn.bias", (0.1 * rng.standard_normal(c_out)).astype(np.float32))
        mean = const(f"{p}.bn.running_mean", (0.1 * rng.standard_normal(c_out)).astype(np.float32))
        var = const(f"{p}.bn.running_var", rng.uniform(0.5, 1.5, c_out).astype(np.float32))
        counter[0] += 1
        return node("BatchNormalization", [y, scale, bias, mean, var], f"{p}/BatchNormalization", epsilon=1e-5)

    h = node("Relu", [conv_bn("x", 3, stages[0], 3, 1, "stem")], "stem/Relu")
    c_in = stages[0]
    for s, c in enumerate(stages):
        for b in range(blocks_per_stage):
            p = f"layer{s + 1}.{b}"
            stride = 2 if s > 0 and b == 0 else 1
            y = node("Relu", [conv_bn(h, c_in, c, 3, stride, f"{p}.1")], f"{p}/Relu")
            y = conv_bn(y, c, c, 3, 1, f"{p}.2")
            shortcut = conv_bn(h, c_in, c, 1, stride, f"{p}.downsample") if (stride != 1 or c_in != c) else h
            h = node("Relu", [node("Add", [y, shortcut], f"{p}/Add")], f"{p}/Relu_1")
            c_in = c
    pooled = node("Flatten", [node("GlobalAveragePool", [h], "avgpool")], "flatten", axis=1)
    fc_w = weight("fc.weight", (classes, c_in), 1.0 / np.sqrt(c_in))
    fc_b = weight("fc.bias", (classes,), 0.02)
    nodes.append(helper.make_node("Gemm", [pooled, fc_w, fc_b], ["logits"], name="fc", transB=1))
    return _finish(nodes, inits, "cnn_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, image, image])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])], opset, ir_version)


def elementwise_chain(ops: int = 24, width: int = 16, seed: int = 0) -> onnx.ModelProto:
    """A chain of fusible elementwise ops (one JIT segment); `seed` changes its constants, hence its kernel."""
    cycle = ("Add", "Mul", "Sub", "Relu", "Neg", "Abs", "Max", "Min", "Floor")
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(ops):
        op = cycle[i % len(cycle)]
        out = "y" if i == ops - 1 else f"t{i}"
        ins = [prev]
        if op in ("Add", "Mul", "Sub", "Max", "Min"):
            c = numpy_helper.from_array(rng.uniform(0.5, 1.0, width).astype(np.float32), f"c{i}")
            inits.append(c)
            ins.append(c.name)
        nodes.append(helper.make_node(op, ins, [out], name=f"n{i}"))
        prev = out
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m
