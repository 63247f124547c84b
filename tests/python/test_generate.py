"""sdx.generate and `sdx generate` (issue 21, first increment) on a tiny GPT-2 decoder in Optimum's with-past
layout written by scripts/make_gpt2_decoder.py (2 layers, d 64, vocab 128): the model agrees with
onnxruntime, greedy tokens equal a hand-written onnxruntime loop's, sampling is seeded and stays inside
its top-k / top-p set, streaming is in order, the CLI writes its JSON, bad inputs are named."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

import sdx
from sdx.generate import Sampler
from decoders import gpt2_decoder, gpt2_maker

LAYERS, D, HEADS, VOCAB = 2, 64, 2, 128


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2") / "gpt2_tiny.onnx"
    onnx.save(gpt2_decoder(LAYERS, D, HEADS, VOCAB, 256, seed=0), str(path))
    return str(path)


def _ort(path):
    import onnxruntime as ort

    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def _feeds(ids, total, past):
    f = {"input_ids": np.asarray([ids], np.int64), "attention_mask": np.ones((1, total), np.int64),
         "position_ids": np.arange(total - len(ids), total, dtype=np.int64)[None]}
    for i in range(LAYERS):
        f[f"past_key_values.{i}.key"], f[f"past_key_values.{i}.value"] = past[2 * i], past[2 * i + 1]
    return f


def _ort_greedy(path, prompt, n):
    """A plain onnxruntime decode loop, written by hand as a user would."""
    sess = _ort(path)
    past = [np.zeros((1, HEADS, 0, D // HEADS), np.float32)] * (2 * LAYERS)
    ids, total, out = list(prompt), len(prompt), []
    for _ in range(n):
        res = sess.run(None, _feeds(ids, total, past))
        out.append(int(res[0][0, -1].argmax()))
        past, ids, total = res[1:], [out[-1]], total + 1
    return out


def test_model_agrees_with_onnxruntime(model_path):
    s, r = sdx.InferenceSession(model_path), _ort(model_path)
    past = [np.zeros((1, HEADS, 0, D // HEADS), np.float32)] * (2 * LAYERS)
    ids, total = [5, 17, 3, 99, 42], 5
    for _ in range(4):  # prefill, then 3 decode steps, each engine fed its own presents
        a, b = s.run(None, _feeds(ids, total, past)), r.run(None, _feeds(ids, total, past))
        for x, y in zip(a, b):
            assert x.shape == y.shape
            np.testing.assert_allclose(x, y, atol=1e-4, rtol=0)
        past, ids, total = b[1:], [int(b[0][0, -1].argmax())], total + 1


def test_numpy_reference_check_passes():
    m = gpt2_maker()
    model = m.build(LAYERS, D, HEADS, VOCAB, 256, seed=1)
    assert m.check(model, LAYERS, D, HEADS, VOCAB, 256, seed=1) < 1e-4


def test_greedy_tokens_equal_onnxruntime_loop(model_path):
    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    want = _ort_greedy(model_path, prompt, 40)
    assert len(set(want)) > 1  # the model is not degenerate: the comparison means something
    r = sdx.generate(model_path, prompt, 40)
    assert r.tokens == want
    rep = r.report
    assert rep["new_tokens"] == 40 and rep["decode_steps"] == 39 and rep["prompt_tokens"] == 8
    assert rep["stopped_by"] == "max_new_tokens"
    assert 0.0 <= rep["hit_rate"] <= 1.0 and rep["replayed_steps"] == round(rep["hit_rate"] * 39)
    assert rep["decode_tokens_per_s"] > 0 and rep["per_token_latency_p50_us"] > 0 and rep["prefill_tokens_per_s"] > 0


def test_hit_rate_counts_replayed_steps(model_path):
    """At exact shapes (kv_bucket=None), a session that has already run every decode shape (same prompt,
    twice) replays them the second time: the hit rate comes from the run reports, not a constant. (kv_streams
    off: with it, the session would pad and replay the first time too, test_kv_streams.py.)"""
    so = sdx.SessionOptions()
    so.kv_streams = False
    sess = sdx.InferenceSession(model_path, so)
    first = sdx.generate(sess, [3, 4], 6, kv_bucket=None)
    for _ in range(3):
        again = sdx.generate(sess, [3, 4], 6, kv_bucket=None)
    assert again.tokens == first.tokens
    assert first.report["hit_rate"] == 0.0
    assert again.report["hit_rate"] == 1.0 and again.report["replayed_steps"] == 5


def test_eos_stops(model_path):
    full = sdx.generate(model_path, [1, 2, 3], 10).tokens
    r = sdx.generate(model_path, [1, 2, 3], 10, eos_token_id=full[2])
    stop = full.index(full[2])
    assert r.tokens == full[:stop + 1] and r.report["stopped_by"] == "eos"


def test_several_prompts_give_each_prompts_tokens(model_path):
    for max_batch in (1, 8):  # one after another, and batched (test_generate_batch.py)
        rs = sdx.generate(model_path, [[1, 2, 3], [9, 8]], 5, max_batch=max_batch)
        assert [r.prompt for r in rs] == [[1, 2, 3], [9, 8]]
        assert rs[1].tokens == sdx.generate(model_path, [9, 8], 5).tokens


@pytest.mark.parametrize("kw", [dict(sampling="top_k", top_k=5), dict(sampling="top_p", top_p=0.5),
                                dict(sampling="top_p", top_p=0.9, top_k=10, temperature=0.7)])
def test_sampling_is_seeded_and_allowed(model_path, kw):
    a = sdx.generate(model_path, [7, 8, 9], 24, seed=11, **kw).tokens
    assert a == sdx.generate(model_path, [7, 8, 9], 24, seed=11, **kw).tokens
    others = [sdx.generate(model_path, [7, 8, 9], 24, seed=s, **kw).tokens for s in (12, 13, 14)]
    assert any(o != a for o in others)  # the seed matters
    # Replay the loop with onnxruntime's logits: every chosen token is inside the sampler's allowed set.
    sess, sampler = _ort(model_path), Sampler(seed=0, **kw)
    past, ids, total = [np.zeros((1, HEADS, 0, D // HEADS), np.float32)] * (2 * LAYERS), [7, 8, 9], 3
    for tok in a:
        res = sess.run(None, _feeds(ids, total, past))
        allowed, p = sampler.allowed(res[0][0, -1])
        assert tok in allowed.tolist()
        assert len(allowed) <= kw.get("top_k", VOCAB)
        assert abs(p.sum() - 1) < 1e-9
        past, ids, total = res[1:], [tok], total + 1


def test_sampler_sets():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    ids, p = Sampler("top_p", top_p=0.7).allowed(logits)
    assert ids.tolist() == [0, 1]  # 0.5 < 0.7 <= 0.8: the token reaching p is kept
    ids, _ = Sampler("top_p", top_p=0.5).allowed(logits)
    assert ids.tolist() == [0]
    ids, _ = Sampler("top_k", top_k=3).allowed(logits)
    assert ids.tolist() == [0, 1, 2]
    assert Sampler().__call__(logits) == 0


def test_streaming_yields_in_order(model_path):
    seen = []
    r = sdx.generate(model_path, [4, 5, 6], 12, stream=seen.append)
    assert seen == r.tokens
    report = {}
    streamed = list(sdx.generate_stream(model_path, [4, 5, 6], 12, report=report))
    assert streamed == r.tokens and report["new_tokens"] == 12


def test_out_of_range_token_id(model_path):
    with pytest.raises(sdx.InvalidArgument, match=r"token id 128 at position 1 of prompt 0 is out of range: .*128 tokens"):
        sdx.generate(model_path, [3, VOCAB], 4)
    with pytest.raises(sdx.InvalidArgument, match="token id -1"):
        sdx.generate(model_path, [-1], 4)


def test_model_without_attention_mask(tmp_path, model_path):
    """A valid decoder that takes no attention_mask (its padding test reads a constant instead): refused,
    naming the input."""
    model = onnx.load(model_path)
    graph = model.graph
    for node in graph.node:
        if "attention_mask" in node.input:
            node.input[list(node.input).index("attention_mask")] = "one_i"
    keep = [i for i in graph.input if i.name != "attention_mask"]
    del graph.input[:]
    graph.input.extend(keep)
    onnx.checker.check_model(model)
    path = tmp_path / "no_mask.onnx"
    onnx.save(model, str(path))
    sdx.InferenceSession(str(path))  # the engine takes it
    with pytest.raises(sdx.InvalidArgument, match="no input 'attention_mask'"):
        sdx.generate(str(path), [1, 2], 4)


def test_model_not_a_decoder():
    from models import mlp_model

    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    with pytest.raises(sdx.InvalidArgument, match="no input 'input_ids'"):
        sdx.generate(sess, [1, 2], 4)


@pytest.mark.parametrize("kw,msg", [(dict(sampling="top_p", top_p=0.0), r"top_p must be in \(0, 1\]"),
                                    (dict(sampling="top_p", top_p=1.5), r"top_p must be in \(0, 1\]"),
                                    (dict(sampling="top_p"), "needs top_p"),
                                    (dict(sampling="top_k", top_k=0), "top_k must be a whole number >= 1"),
                                    (dict(sampling="greedy", top_k=3), "not to greedy"),
                                    (dict(sampling="beam"), "sampling 'beam' is not one of"),
                                    (dict(temperature=0.0), "temperature must be")])
def test_bad_sampling_parameters(model_path, kw, msg):
    with pytest.raises(sdx.InvalidArgument, match=msg):
        sdx.generate(model_path, [1, 2], 4, **kw)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sdx", "generate", *args], capture_output=True, text=True, cwd="/")


def test_cli_writes_json(model_path, tmp_path):
    batch = tmp_path / "prompts.txt"
    batch.write_text("1,2,3\n# a comment\n\n9, 8\n")
    out = tmp_path / "gen.json"
    r = _cli(model_path, "--batch-file", str(batch), "--max-new-tokens", "6", "--max-batch", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [p["prompt"] for p in doc["prompts"]] == [[1, 2, 3], [9, 8]]
    assert doc["prompts"][0]["tokens"] == _ort_greedy(model_path, [1, 2, 3], 6)
    for p in doc["prompts"]:
        assert p["tokens_per_s"]["decode"] > 0 and p["per_token_latency_us"]["p50"] > 0
        assert 0.0 <= p["hit_rate"] <= 1.0
    assert 0.0 <= doc["hit_rate"] <= 1.0
    assert " ".join(map(str, doc["prompts"][0]["tokens"])) in r.stdout  # the streamed text


def test_cli_errors(model_path):
    r = _cli(model_path, "--prompt-ids", f"1,{VOCAB + 5}")
    assert r.returncode == 2 and f"token id {VOCAB + 5} at position 1" in r.stderr and "Traceback" not in r.stderr
    assert "tokens:" not in r.stdout  # refused before any output
    r = _cli(model_path, "--prompt-ids", "1,x")
    assert r.returncode == 2 and "'x' is not a token id" in r.stderr
    r = _cli(model_path, "--prompt-ids", "1", "--sampling", "top_p", "--top-p", "1.5")
    assert r.returncode == 2 and "top_p must be in (0, 1]" in r.stderr
    r = _cli(model_path)
    assert r.returncode == 2 and "--prompt-ids" in r.stderr


def test_kv_buckets_replay_and_give_the_exact_tokens(model_path):
    """KV buckets (the default): decode steps keep their shapes within a bucket and replay; the tokens are
    those of exact-shape decoding, and of onnxruntime's loop."""
    prompt = [5, 9, 2, 7]
    so = sdx.SessionOptions()
    so.kv_streams = False  # the contiguous cache as generate() drives it, not the session's KV streams
    exact = sdx.generate(sdx.InferenceSession(model_path, so), prompt, 70, kv_bucket=None)
    bucketed = sdx.generate(sdx.InferenceSession(model_path, so), prompt, 70, kv_bucket=16)
    assert bucketed.tokens == exact.tokens == _ort_greedy(model_path, prompt, 70)
    rep = bucketed.report
    assert rep["kv_bucket"] == 16 and rep["kv_bucket_check"].startswith("passed"), rep["kv_bucket_check"]
    # 69 steps over 5 buckets (16, 32, ..., 80 slots): a few warmup/capture steps per bucket, the rest replay.
    assert rep["hit_rate"] >= 0.7 and exact.report["hit_rate"] == 0.0, (rep["hit_rate"], exact.report["hit_rate"])
    assert 0.0 < rep["padding_waste"] < 0.5
    assert exact.report["kv_bucket"] is None and exact.report["padding_waste"] == 0.0
    # Given a path, the decode steps copy out only each step's new K/V (_decoder_graph.py): same tokens.
    by_path = sdx.generate(model_path, prompt, 70, kv_bucket=16)
    assert by_path.tokens == exact.tokens and by_path.report["hit_rate"] >= 0.7


def test_new_kv_outputs_are_the_concatenated_values(model_path):
    from sdx._decoder_graph import NEW_KV_PREFIX, with_new_kv_outputs

    edited, presents, news = with_new_kv_outputs(model_path)
    assert presents == [f"present.{i}.{k}" for i in range(2) for k in ("key", "value")]
    assert news == [NEW_KV_PREFIX + p for p in presents]
    sess = sdx.InferenceSession(edited)
    feeds = _feeds([3, 1, 4], 3, [np.zeros((1, 2, 0, 32), np.float32)] * 4)
    outs = dict(zip(presents + news, sess.run(presents + news, feeds)))
    for p, n in zip(presents, news):  # an empty past: present is the new K/V
        np.testing.assert_array_equal(outs[p], outs[n])


def unmasked_copy(model_path, tmp_path) -> str:
    """The decoder with attention_mask replaced by ones: padded keys get attention weight (padding is not
    exact); written to tmp_path, its path returned."""
    m = onnx.load(model_path)
    ones = onnx.helper.make_node("ConstantOfShape", ["mask_shape"], ["mask_ones"],
                                 value=onnx.helper.make_tensor("one", onnx.TensorProto.INT64, [1], [1]))
    shape = onnx.helper.make_node("Shape", ["attention_mask"], ["mask_shape"])
    for node in m.graph.node:
        node.input[:] = ["mask_ones" if x == "attention_mask" else x for x in node.input]
    m.graph.node.insert(0, ones)
    m.graph.node.insert(0, shape)
    path = tmp_path / "unmasked.onnx"
    onnx.save(m, str(path))
    return str(path)


def test_kv_buckets_fall_back_when_the_model_ignores_the_mask(model_path, tmp_path):
    """A decoder that does not mask keys by attention_mask would attend to the empty slots: the first-step
    check sees the logits differ, and decoding runs at exact shapes, saying why."""
    path = unmasked_copy(model_path, tmp_path)
    prompt = [5, 9, 2, 7]
    exact = sdx.generate(str(path), prompt, 12, kv_bucket=None)
    r = sdx.generate(str(path), prompt, 12, kv_bucket=16)
    assert r.report["kv_bucket_check"].startswith("failed"), r.report["kv_bucket_check"]
    assert "exact shapes used" in r.report["kv_bucket_check"]
    assert r.tokens == exact.tokens and r.report["padding_waste"] == 0.0


@pytest.mark.parametrize("bad", [0.5, -1, "16", True])
def test_bad_kv_bucket(model_path, bad):
    with pytest.raises(sdx.InvalidArgument, match="kv_bucket must be a whole number"):
        sdx.generate(model_path, [1, 2], 3, kv_bucket=bad)


def test_the_decoders_attention_is_fused(model_path):
    """The exporter's causal mask (Range over Shape -> Gather -> Add, then Greater/Or/Where) gets its static
    shape (ir/symbolic_scalar.h), so every layer's attention becomes one sdx.Attention (no K transpose and no
    scores in memory), and the tokens stay onnxruntime's."""
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="0")
    r = subprocess.run([sys.executable, "-m", "sdx", "inspect", model_path, "--optimized", "--json"],
                       capture_output=True, text=True, cwd="/", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["optimized"]["rewrites_per_pass"]["fuse_attention"] == LAYERS
    assert _ort_greedy(model_path, [4, 8, 15], 20) == sdx.generate(model_path, [4, 8, 15], 20, kv_bucket=None).tokens
