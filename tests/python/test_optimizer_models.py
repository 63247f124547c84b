"""The graph optimizer on exporter-shaped models (tests/python/models.py): every fusion it should make,
it makes, and the optimized session computes what the unoptimized one (and onnxruntime) computes.

Per model, from InferenceSession.optimization_report() ({"rewrites_per_pass": {pass: n}, "ops_before":
{op: n}, "ops_after": {op: n}, "log": [...]}):
  * attention: ops_after["sdx.Attention"] == number of layers, no Softmax left, and
    fuse_attention made one rewrite per layer;
  * LayerNorm: ops_after["LayerNormalization"] == the model's LayerNorms (no ReduceMean left);
  * GELU: no Erf left;
  * Q/K/V: fuse_sibling_matmuls made one rewrite per layer (it counts one rewrite per merged group
    of matmuls, and each layer has exactly one group: its Q/K/V triple);
  * Conv + BatchNormalization: no BatchNormalization left.
Outputs: optimized vs SessionOptions.optimizer_enabled = False within rtol 1e-4 / atol 1e-5; vs onnxruntime
(when importable) within rtol 1e-4 / atol 1e-4 (a different engine: its GEMM and its own fusions round
differently). `pytest -s` prints the counts and the differences.
"""
import numpy as np
import pytest

import sdx
from models import bert_encoder, cnn_bn, gpt_decoder_step, transformer_encoder

LAYERS = 4
RTOL, ATOL = 1e-4, 1e-5
ORT_RTOL, ORT_ATOL = 1e-4, 1e-4

# name -> (builder, expected counts)
MODELS = {
    "transformer_encoder": (lambda: transformer_encoder(layers=LAYERS),
                            {"attention": LAYERS, "layer_norms": 2 * LAYERS + 1, "gelus": LAYERS, "qkv": LAYERS,
                             "conv_bn": 0}),
    "bert_encoder": (lambda: bert_encoder(layers=LAYERS),
                     {"attention": LAYERS, "layer_norms": 2 * LAYERS, "gelus": LAYERS, "qkv": LAYERS, "conv_bn": 0}),
    "gpt_decoder_step": (lambda: gpt_decoder_step(layers=LAYERS),
                         {"attention": LAYERS, "layer_norms": 2 * LAYERS + 1, "gelus": LAYERS, "qkv": LAYERS,
                          "conv_bn": 0}),
    "cnn_bn": (lambda: cnn_bn(), {"attention": 0, "layer_norms": 0, "gelus": 0, "qkv": 0, "conv_bn": 9}),
}


@pytest.fixture(scope="module")
def model_bytes():
    cache = {}

    def get(name: str) -> bytes:
        if name not in cache:
            cache[name] = MODELS[name][0]().SerializeToString()
        return cache[name]

    return get


def make_feeds(sess, seed: int = 0) -> dict:
    """Random float inputs; an int64 attention mask of ones with the last quarter of the last row padding."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        if arg.type == "tensor(int64)":
            mask = np.ones(shape, np.int64)
            mask[-1, -max(1, shape[-1] // 4):] = 0
            feeds[arg.name] = mask
        else:
            feeds[arg.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def session(data: bytes, optimizer: bool) -> "sdx.InferenceSession":
    opts = sdx.SessionOptions()
    opts.optimizer_enabled = optimizer
    return sdx.InferenceSession(data, opts)


@pytest.mark.parametrize("name", list(MODELS))
def test_every_pattern_is_fused(name, model_bytes):
    expected = MODELS[name][1]
    report = session(model_bytes(name), True).optimization_report()
    before, after, rewrites = report["ops_before"], report["ops_after"], report["rewrites_per_pass"]
    print(f"\n{name}: {sum(before.values())} -> {sum(after.values())} nodes")
    print("  rewrites per pass: " + ", ".join(f"{p} {n}" for p, n in rewrites.items() if n))
    print("  ops after: " + ", ".join(f"{op} {n}" for op, n in sorted(after.items())))

    assert after.get("sdx.Attention", 0) == expected["attention"], after
    assert rewrites.get("fuse_attention", 0) == expected["attention"], rewrites
    if expected["attention"]:
        assert "Softmax" not in after, after
    assert after.get("LayerNormalization", 0) == expected["layer_norms"], after
    if expected["layer_norms"]:
        assert "ReduceMean" not in after, after
    assert "Erf" not in after, after
    assert rewrites.get("fuse_sibling_matmuls", 0) == expected["qkv"], rewrites
    assert before.get("BatchNormalization", 0) == expected["conv_bn"], before
    assert "BatchNormalization" not in after, after


@pytest.mark.parametrize("name", list(MODELS))
def test_optimized_outputs_match_unoptimized_and_onnxruntime(name, model_bytes):
    data = model_bytes(name)
    optimized, plain = session(data, True), session(data, False)
    assert plain.optimization_report()["rewrites_per_pass"].get("fuse_attention", 0) == 0
    feeds = make_feeds(plain)
    names = [o.name for o in plain.get_outputs()]
    want = plain.run(None, feeds)
    for run in range(3):  # warmup, capture and replay all compute the same
        got = optimized.run(None, feeds)
        for n, g, w in zip(names, got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, n
            diff = float(np.max(np.abs(g - w))) if g.size else 0.0
            if run == 0:
                print(f"\n{name} output {n}: max |optimized - unoptimized| = {diff:.3g}", end="")
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"{name} output {n}, run {run}")

    ort = pytest.importorskip("onnxruntime")
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for n, g, r in zip(names, got, ref):
        print(f"\n{name} output {n}: max |optimized - onnxruntime| = {float(np.max(np.abs(g - r))):.3g}", end="")
        np.testing.assert_allclose(g, r, rtol=ORT_RTOL, atol=ORT_ATOL, err_msg=f"{name} output {n} vs onnxruntime")
