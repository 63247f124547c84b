"""Writes a GPT-2 architecture decoder in Hugging Face Optimum's with-past ONNX export layout, with seeded
random weights (no torch, no download: onnx.helper only), for `sdx generate` and bench/decode_bench.py.

    python3 scripts/make_gpt2_decoder.py /tmp/gpt2.onnx [--layers 4 --d-model 256 --heads 4 --vocab 1024
                                                         --max-pos 2048 --seed 0] [--check]

The layout (what `optimum-cli export onnx --task text-generation-with-past` writes for gpt2):
  inputs   input_ids [batch, seq] int64, attention_mask [batch, past+seq] int64, position_ids [batch, seq]
           int64, past_key_values.N.key / .value [batch, heads, past, head_dim] float32 (past may be 0)
  outputs  logits [batch, seq, vocab] float32, present.N.key / .value [batch, heads, past+seq, head_dim]

The graph is written as an exporter writes it: Gather embeddings (token + position), per layer
LayerNormalization, one c_attn MatMul+Add split into Q/K/V, heads by Reshape+Transpose, Concat(past, new)
for K and V, Q.K^T / sqrt(head_dim), an additive mask built from shapes (Shape/Gather/Range/Greater for
causality, Equal(attention_mask, 0) for padding, Where to the float32 minimum), Softmax, the context
MatMul, c_proj, residual; the MLP with GPT-2's tanh GELU written out (Pow/Mul/Add/Tanh); final LayerNorm;
the LM head tied to the token embedding (MatMul with Transpose(wte)). Random weights: linear layers
N(0, 0.08), token embedding N(0, 0.05), positions N(0, 0.02), LayerNorm gains 1 and biases 0 plus N(0, 0.02)
noise. GPT-2's own init (0.02 everywhere) makes a random tied model repeat one token for ever under greedy
decoding (measured: 4 distinct tokens in 200); with these, 39 distinct tokens in 200, so a token-identity
check between engines means something.

--check runs the model in onnxruntime against a numpy reference of the same architecture (a prefill of 7
tokens, then 3 decode steps with past fed back) and fails if logits or presents differ by more than 1e-4.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32_MIN = float(np.finfo(np.float32).min)


class _Builder:
    """Collects nodes and initializers; fresh value names per call."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def op(self, op_type: str, inputs: list, name: str, outputs: list | None = None, **attrs) -> str:
        outs = outputs or [f"/{name}/output_0"]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=f"/{name}", **attrs))
        return outs[0]

    def const(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name


def make_weights(layers: int, d: int, vocab: int, max_pos: int, seed: int) -> dict:
    """The named float32 weights of the decoder (Conv1D layout: [in, out], as GPT-2's)."""
    rng = np.random.default_rng(seed)

    def n(*shape, std=0.02):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def lin(*shape):
        return n(*shape, std=0.08)

    w = {"transformer.wte.weight": n(vocab, d, std=0.05), "transformer.wpe.weight": n(max_pos, d, std=0.02)}
    for i in range(layers):
        p = f"transformer.h.{i}."
        w[p + "ln_1.weight"] = 1 + n(d)
        w[p + "ln_1.bias"] = n(d)
        w[p + "attn.c_attn.weight"] = lin(d, 3 * d)
        w[p + "attn.c_attn.bias"] = n(3 * d)
        w[p + "attn.c_proj.weight"] = lin(d, d)
        w[p + "attn.c_proj.bias"] = n(d)
        w[p + "ln_2.weight"] = 1 + n(d)
        w[p + "ln_2.bias"] = n(d)
        w[p + "mlp.c_fc.weight"] = lin(d, 4 * d)
        w[p + "mlp.c_fc.bias"] = n(4 * d)
        w[p + "mlp.c_proj.weight"] = lin(4 * d, d)
        w[p + "mlp.c_proj.bias"] = n(d)
    w["transformer.ln_f.weight"] = 1 + n(d)
    w["transformer.ln_f.bias"] = n(d)
    return w


def _mask_bias(b: _Builder) -> str:
    """The additive attention bias [batch, 1, seq, past+seq]: 0 where a query may attend, float32 min where
    the key is in the future or padded out by attention_mask."""
    ids_shape = b.op("Shape", ["input_ids"], "Shape")
    seq = b.op("Gather", [ids_shape, b.const("one_i", np.array(1, np.int64))], "Gather_seq", axis=0)
    past_shape = b.op("Shape", ["past_key_values.0.key"], "Shape_past")
    past = b.op("Gather", [past_shape, b.const("two_i", np.array(2, np.int64))], "Gather_past", axis=0)
    total = b.op("Add", [past, seq], "Add_total")
    zero, step = b.const("zero_i", np.array(0, np.int64)), "one_i"
    q_pos = b.op("Range", [past, total, step], "Range_q")
    k_pos = b.op("Range", [zero, total, step], "Range_k")
    q_col = b.op("Unsqueeze", [q_pos, b.const("axes_1", np.array([1], np.int64))], "Unsqueeze_q")
    future = b.op("Greater", [k_pos, q_col], "Greater_future")  # [seq, total]
    padded = b.op("Equal", ["attention_mask", "zero_i"], "Equal_pad")  # [batch, total]
    padded4 = b.op("Unsqueeze", [padded, b.const("axes_12", np.array([1, 2], np.int64))], "Unsqueeze_pad")
    masked = b.op("Or", [future, padded4], "Or_mask")  # [batch, 1, seq, total]
    return b.op("Where", [masked, b.const("f32_min", np.array(F32_MIN, np.float32)),
                          b.const("zero_f", np.array(0.0, np.float32))], "Where_bias")


def _gelu_tanh(b: _Builder, x: str, p: str) -> str:
    """GPT-2's gelu_new as the exporter writes it: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    cube = b.op("Pow", [x, b.const(f"{p}three", np.array(3.0, np.float32))], f"{p}Pow")
    inner = b.op("Add", [x, b.op("Mul", [cube, b.const(f"{p}c", np.array(0.044715, np.float32))], f"{p}Mul_c")],
                 f"{p}Add_inner")
    scaled = b.op("Mul", [inner, b.const(f"{p}k", np.array(np.sqrt(2 / np.pi), np.float32))], f"{p}Mul_k")
    t = b.op("Add", [b.op("Tanh", [scaled], f"{p}Tanh"), b.const(f"{p}one", np.array(1.0, np.float32))],
             f"{p}Add_one")
    half = b.op("Mul", [x, b.const(f"{p}half", np.array(0.5, np.float32))], f"{p}Mul_half")
    return b.op("Mul", [half, t], f"{p}Mul_gelu")


def _layer(b: _Builder, h: str, i: int, d: int, heads: int, bias: str) -> str:
    p, hd = f"transformer.h.{i}.", d // heads
    ln1 = b.op("LayerNormalization", [h, p + "ln_1.weight", p + "ln_1.bias"], f"h.{i}/ln_1", axis=-1, epsilon=1e-5)
    qkv = b.op("Add", [b.op("MatMul", [ln1, p + "attn.c_attn.weight"], f"h.{i}/attn/c_attn/MatMul"),
                       p + "attn.c_attn.bias"], f"h.{i}/attn/c_attn/Add")
    q, k, v = (f"/h.{i}/attn/Split/output_{j}" for j in range(3))
    b.op("Split", [qkv, b.const(f"h.{i}.split", np.array([d, d, d], np.int64))], f"h.{i}/attn/Split", [q, k, v], axis=2)
    heads_shape = b.const(f"h.{i}.heads_shape", np.array([0, 0, heads, hd], np.int64))

    def split_heads(x: str, tag: str) -> str:
        r = b.op("Reshape", [x, heads_shape], f"h.{i}/attn/Reshape_{tag}")
        return b.op("Transpose", [r], f"h.{i}/attn/Transpose_{tag}", perm=[0, 2, 1, 3])

    key = b.op("Concat", [f"past_key_values.{i}.key", split_heads(k, "k")], f"h.{i}/attn/Concat_k",
               [f"present.{i}.key"], axis=2)
    value = b.op("Concat", [f"past_key_values.{i}.value", split_heads(v, "v")], f"h.{i}/attn/Concat_v",
                 [f"present.{i}.value"], axis=2)
    kt = b.op("Transpose", [key], f"h.{i}/attn/Transpose_kt", perm=[0, 1, 3, 2])
    scores = b.op("MatMul", [split_heads(q, "q"), kt], f"h.{i}/attn/MatMul_qk")
    scores = b.op("Div", [scores, b.const(f"h.{i}.scale", np.array(np.sqrt(hd), np.float32))], f"h.{i}/attn/Div")
    probs = b.op("Softmax", [b.op("Add", [scores, bias], f"h.{i}/attn/Add_mask")], f"h.{i}/attn/Softmax", axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, value], f"h.{i}/attn/MatMul_pv")], f"h.{i}/attn/Transpose_ctx",
               perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const(f"h.{i}.merge_shape", np.array([0, 0, d], np.int64))], f"h.{i}/attn/Reshape_ctx")
    attn = b.op("Add", [b.op("MatMul", [ctx, p + "attn.c_proj.weight"], f"h.{i}/attn/c_proj/MatMul"),
                        p + "attn.c_proj.bias"], f"h.{i}/attn/c_proj/Add")
    h = b.op("Add", [h, attn], f"h.{i}/Add_attn_residual")
    ln2 = b.op("LayerNormalization", [h, p + "ln_2.weight", p + "ln_2.bias"], f"h.{i}/ln_2", axis=-1, epsilon=1e-5)
    fc = b.op("Add", [b.op("MatMul", [ln2, p + "mlp.c_fc.weight"], f"h.{i}/mlp/c_fc/MatMul"), p + "mlp.c_fc.bias"],
              f"h.{i}/mlp/c_fc/Add")
    act = _gelu_tanh(b, fc, f"h.{i}/mlp/act/")
    mlp = b.op("Add", [b.op("MatMul", [act, p + "mlp.c_proj.weight"], f"h.{i}/mlp/c_proj/MatMul"),
                       p + "mlp.c_proj.bias"], f"h.{i}/mlp/c_proj/Add")
    return b.op("Add", [h, mlp], f"h.{i}/Add_mlp_residual")


def build(layers: int = 4, d_model: int = 256, heads: int = 4, vocab: int = 1024, max_pos: int = 2048,
          seed: int = 0) -> onnx.ModelProto:
    """The decoder as an onnx.ModelProto (opset 17, IR 8)."""
    if d_model % heads:
        raise ValueError(f"--d-model {d_model} is not a multiple of --heads {heads}")
    hd = d_model // heads
    b = _Builder()
    for name, value in make_weights(layers, d_model, vocab, max_pos, seed).items():
        b.const(name, value)
    bias = _mask_bias(b)
    tok = b.op("Gather", ["transformer.wte.weight", "input_ids"], "wte/Gather", axis=0)
    pos = b.op("Gather", ["transformer.wpe.weight", "position_ids"], "wpe/Gather", axis=0)
    h = b.op("Add", [tok, pos], "Add_embed")
    for i in range(layers):
        h = _layer(b, h, i, d_model, heads, bias)
    h = b.op("LayerNormalization", [h, "transformer.ln_f.weight", "transformer.ln_f.bias"], "ln_f", axis=-1,
             epsilon=1e-5)
    head = b.op("Transpose", ["transformer.wte.weight"], "lm_head/Transpose", perm=[1, 0])
    b.op("MatMul", [h, head], "lm_head/MatMul", ["logits"])

    kv = ["batch_size", heads, "past_sequence_length", hd]
    present = ["batch_size", heads, "past_sequence_length + sequence_length", hd]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            ["batch_size", "past_sequence_length + sequence_length"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", vocab])]
    for i in range(layers):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", TensorProto.FLOAT, kv))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", TensorProto.FLOAT, present))
    graph = helper.make_graph(b.nodes, "gpt2_decoder_with_past", inputs, outputs, initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="sdx")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# ---- --check: a numpy reference of the same architecture

def _np_ln(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def reference_step(w: dict, layers: int, heads: int, ids, mask, pos, past: list) -> tuple:
    """logits and presents of one call, in float64 numpy (past: [(k, v)] per layer)."""
    x = (w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][pos]).astype(np.float64)
    bsz, s, d = x.shape
    hd, p = d // heads, past[0][0].shape[2]
    future = np.arange(p + s)[None, :] > np.arange(p, p + s)[:, None]
    masked = future[None, None] | (mask == 0)[:, None, None, :]
    presents = []
    for i in range(layers):
        g = lambda n: w[f"transformer.h.{i}.{n}"]  # noqa: E731
        qkv = _np_ln(x, g("ln_1.weight"), g("ln_1.bias")) @ g("attn.c_attn.weight") + g("attn.c_attn.bias")
        q, k, v = (t.reshape(bsz, s, heads, hd).transpose(0, 2, 1, 3) for t in np.split(qkv, 3, axis=-1))
        k, v = np.concatenate([past[i][0], k], 2), np.concatenate([past[i][1], v], 2)
        presents.append((k, v))
        sc = np.where(masked, -1e30, q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd))
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        ctx = (pr @ v).transpose(0, 2, 1, 3).reshape(bsz, s, d)
        x = x + ctx @ g("attn.c_proj.weight") + g("attn.c_proj.bias")
        f = _np_ln(x, g("ln_2.weight"), g("ln_2.bias")) @ g("mlp.c_fc.weight") + g("mlp.c_fc.bias")
        f = 0.5 * f * (1 + np.tanh(np.sqrt(2 / np.pi) * (f + 0.044715 * f ** 3)))
        x = x + f @ g("mlp.c_proj.weight") + g("mlp.c_proj.bias")
    x = _np_ln(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"])
    return x @ w["transformer.wte.weight"].T, presents


def check(model: onnx.ModelProto, layers: int, d: int, heads: int, vocab: int, max_pos: int, seed: int) -> float:
    """Largest |onnxruntime - reference| over logits and presents of a prefill and 3 decode steps."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    w = {k: v.astype(np.float64) for k, v in make_weights(layers, d, vocab, max_pos, seed).items()}
    rng = np.random.default_rng(1)
    ids = rng.integers(0, vocab, (2, 7))
    mask = np.ones((2, 7), np.int64)
    mask[1, :2] = 0  # left padding on the second row
    pos = np.broadcast_to(np.arange(7), (2, 7)).copy()
    past = [(np.zeros((2, heads, 0, d // heads)),) * 2 for _ in range(layers)]
    worst = 0.0
    for _ in range(4):
        feeds = {"input_ids": ids, "attention_mask": mask, "position_ids": pos}
        for i, (k, v) in enumerate(past):
            feeds[f"past_key_values.{i}.key"], feeds[f"past_key_values.{i}.value"] = k.astype(np.float32), v.astype(np.float32)
        got = sess.run(None, feeds)
        want, past = reference_step(w, layers, heads, ids, mask, pos, past)
        worst = max(worst, float(np.abs(got[0] - want).max()))
        for i, (k, v) in enumerate(past):
            worst = max(worst, float(np.abs(got[1 + 2 * i] - k).max()), float(np.abs(got[2 + 2 * i] - v).max()))
        ids = got[0][:, -1].argmax(-1)[:, None]
        pos = pos[:, -1:] + 1
        mask = np.concatenate([mask, np.ones((2, 1), np.int64)], 1)
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--max-pos", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="compare onnxruntime with a numpy reference (1e-4)")
    a = ap.parse_args(argv)
    model = build(a.layers, a.d_model, a.heads, a.vocab, a.max_pos, a.seed)
    folder = os.path.dirname(os.path.abspath(a.output))
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, a.output)
    print(f"wrote {a.output}: GPT-2 decoder, {a.layers} layers, d {a.d_model}, {a.heads} heads, vocab {a.vocab}, "
          f"{os.path.getsize(a.output) / 2**20:.1f} MiB")
    if a.check:
        worst = check(model, a.layers, a.d_model, a.heads, a.vocab, a.max_pos, a.seed)
        print(f"onnxruntime vs numpy reference: max |diff| {worst:.2e} (prefill 7 tokens + 3 decode steps)")
        if worst > 1e-4:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
