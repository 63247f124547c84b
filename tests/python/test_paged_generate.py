"""sdx.generate on the paged KV cache (issue 21): the paged rewrite of an exported decoder (_paged_graph.py)
fuses its attention to sdx.PagedAttention; greedy tokens equal exact-shape decoding one prompt at a time, for
batches of mixed lengths joining and leaving, with prefix pages shared; the KV memory held stays within a page
per sequence of the tokens stored; a pool too small refuses a sequence and the others go on; a model the
rewrite cannot take runs on the contiguous cache; bad options are named."""

import numpy as np
import onnx
import pytest

import sdx
from sdx._paged_graph import SLOT_MAP, paged_decoder
from decoders import gpt2_decoder

LAYERS, D, HEADS, VOCAB = 2, 64, 2, 128


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2") / "gpt2_tiny.onnx"
    onnx.save(gpt2_decoder(LAYERS, D, HEADS, VOCAB, 512, seed=0), str(path))
    return str(path)


def _exact(path, prompt, n):
    return sdx.generate(path, prompt, n, kv_cache="contiguous", kv_bucket=None).tokens


def test_the_rewrite_feeds_the_pool_and_fuses_paged_attention(model_path):
    g = paged_decoder(model_path)
    sess = sdx.InferenceSession(g.model)
    names = [a.name for a in sess.get_inputs()]
    assert SLOT_MAP in names and not any(n.startswith("past_key_values.") for n in names)
    assert g.cache_names == [f"sdx_kv_cache.{i}.{k}" for i in range(LAYERS) for k in ("key", "value")]
    after = sess.optimization_report()["ops_after"]
    assert after.get("sdx.PagedAttention") == LAYERS, after
    assert "sdx.Attention" not in after
    # The LM head on the last position only, for prefills: checked once against logits, then used.
    assert g.row_logits
    r = sdx.generate(sess, [4, 8, 15, 16, 23, 42], 5)
    assert sess._sdx_row_logits is True and r.tokens == _exact(model_path, [4, 8, 15, 16, 23, 42], 5)


def test_one_prompt_replays_and_equals_exact_shapes(model_path):
    prompt = [7, 3, 9, 1, 22]
    r = sdx.generate(model_path, prompt, 120)
    assert r.report["kv_cache"] == "paged" and r.report["kv_bucket_check"].startswith("passed")
    assert r.tokens == _exact(model_path, prompt, 120)
    assert r.report["hit_rate"] >= 0.95, r.report
    assert r.report["kv_pages_peak"] == -(-(len(prompt) + 120) // 16)


def test_batches_of_mixed_lengths_share_prefixes_and_hold_a_page_per_sequence_at_most(model_path):
    base = [5, 9, 2, 8, 1, 1, 4, 6, 3, 3, 7, 2, 9, 9, 4, 5, 6]  # 17 tokens: one whole shared page of 16
    prompts = [base, base + [11, 12], [40, 41, 42], base[:16] + [99] * 20, [1], list(range(30, 60)), [8, 8, 8],
               base + [3], [2, 2]]
    counts = [30, 12, 45, 20, 33, 8, 50, 25, 17]
    rs = sdx.generate(model_path, prompts, counts, max_batch=4)
    b = rs[0].report["batch"]
    assert rs[0].report["continuous_batching"] == "on" and b["kv_cache"] == "paged" and b["refused"] == 0
    for p, c, r in zip(prompts, counts, rs):
        assert r.tokens == _exact(model_path, p, c), p
    assert b["prefix_tokens_shared"] >= 2 * 16, b  # prompts 1 and 3 share prompt 0's first page in one call
    assert b["kv_slack_tokens_max"] < b["kv_page_size"], b  # within one page of each sequence's tokens
    assert b["kv_bytes_peak"] < b["kv_bytes_contiguous"], b
    assert b["hit_rate"] >= 0.8, b


def test_prompts_join_as_rows_of_one_call_that_replays_whatever_their_lengths(model_path):
    # Piecewise plans' CPU form: joining prompts are rows of the running sequences' decode call, so a call's
    # shape is its token count's bucket (and width), not each prompt's length.
    from sdx.generate import check_request

    sess = check_request(model_path, [[1]], 1)
    rng = np.random.default_rng(5)
    batches = []
    for _ in range(6):
        prompts = [[int(x) for x in rng.integers(1, VOCAB, size=int(rng.integers(2, 14)))] for _ in range(6)]
        counts = [int(c) for c in rng.integers(2, 10, size=6)]
        rs = sdx.generate(sess, prompts, counts, max_batch=3)
        for p, c, r in zip(prompts, counts, rs):
            assert r.tokens == _exact(model_path, p, c), p
        assert rs[0].report["continuous_batching"] == "on"
        batches.append(rs[0].report["batch"])
    assert "prompts packed as rows: within" in rs[0].report["kv_bucket_check"], rs[0].report["kv_bucket_check"]
    assert all(b["packed_prefill"] and b["prefill_calls"] <= 4 for b in batches), batches  # 3 prompts in the first
    later = batches[3:]  # most calls with prompt tokens replay once their buckets were seen
    assert 2 * sum(b["prefill_replayed"] for b in later) > sum(b["prefill_calls"] for b in later), batches
    alone = sdx.generate(sess, prompts, counts, max_batch=3, packed_prefill=False)  # each prompt its own call
    assert [r.tokens for r in alone] == [r.tokens for r in rs]
    assert not alone[0].report["batch"]["packed_prefill"] and alone[0].report["batch"]["prefill_calls"] == 6


def test_a_pool_too_small_refuses_a_sequence_and_the_others_go_on(model_path):
    prompts = [[1, 2, 3], list(range(10, 60)), [4, 5]]
    rs = sdx.generate(model_path, prompts, [10, 10, 10], kv_pages=3, kv_page_size=16)
    refused = [r.report["refused"] for r in rs]
    assert refused[0] is None and refused[2] is None
    assert refused[1].startswith("refused: KV pool exhausted") and "the pool has only 3" in refused[1], refused[1]
    assert rs[1].report["stopped_by"] == "kv_pool_exhausted" and rs[1].tokens == []
    assert rs[0].tokens == _exact(model_path, prompts[0], 10) and rs[2].tokens == _exact(model_path, prompts[2], 10)
    # One prompt that cannot get a page while it grows: the error says so.
    with pytest.raises(sdx.ResourceExhausted, match="KV pool exhausted: a sequence growing past 32 tokens"):
        sdx.generate(model_path, [1, 2, 3], 40, kv_pages=2)


def test_streaming_on_the_paged_cache(model_path):
    report = {}
    streamed = list(sdx.generate_stream(model_path, [4, 4, 2], 15, report=report))
    assert streamed == _exact(model_path, [4, 4, 2], 15) and report["kv_cache"] == "paged"
    assert report["new_tokens"] == 15


def test_a_model_the_rewrite_cannot_take_runs_contiguous(model_path, tmp_path):
    m = onnx.load(model_path)
    # A second reader of past_key_values.0.key that is neither Concat nor Shape -> Gather.
    m.graph.node.append(onnx.helper.make_node("Identity", ["past_key_values.0.key"], ["peek"]))
    m.graph.output.append(onnx.helper.make_tensor_value_info("peek", onnx.TensorProto.FLOAT, None))
    path = str(tmp_path / "peek.onnx")
    onnx.save(m, path)
    assert paged_decoder(path) is None
    r = sdx.generate(path, [1, 2, 3], 6)
    assert r.report.get("kv_cache") != "paged" and r.tokens == _exact(model_path, [1, 2, 3], 6)
    with pytest.raises(sdx.InvalidArgument, match="cannot run on a paged KV cache"):
        sdx.generate(path, [1, 2, 3], 6, kv_cache="paged")


@pytest.mark.parametrize("kw, msg", [(dict(kv_cache="virtual"), "kv_cache must be one of"),
                                     (dict(kv_pages=0), "kv_pages must be a whole number >= 1"),
                                     (dict(kv_page_size=2.5), "kv_page_size must be a whole number >= 1")])
def test_bad_options_are_named(model_path, kw, msg):
    with pytest.raises(sdx.InvalidArgument, match=msg):
        sdx.generate(model_path, [1, 2], 3, **kw)


def test_a_paged_session_needs_the_paged_loop(model_path):
    sess = sdx.InferenceSession(paged_decoder(model_path).model)
    r = sdx.generate(sess, [3, 1], 5)
    assert r.report["kv_cache"] == "paged" and r.tokens == _exact(model_path, [3, 1], 5)
    with pytest.raises(sdx.InvalidArgument, match="paged decoder"):
        sdx.generate(sess, [3, 1], 5, kv_cache="contiguous")
    with pytest.raises(sdx.InvalidArgument, match="kv_cache='paged' needs"):
        sdx.generate(sdx.InferenceSession(model_path), [3, 1], 5, kv_cache="paged")


def test_the_session_keeps_its_pool_for_the_next_request_that_fits(model_path):
    sess = sdx.InferenceSession(paged_decoder(model_path).model)
    first = sdx.generate(sess, [[1, 2, 3], [4, 5]], 20)
    pool = sess._sdx_kv_pool
    assert pool.pages & (pool.pages - 1) == 0  # a power of two: few pool shapes across requests
    again = sdx.generate(sess, [9, 9, 9], 10)  # needs fewer pages: the same pool, reset
    assert sess._sdx_kv_pool is pool and pool.pages_in_use == 0
    assert again.tokens == _exact(model_path, [9, 9, 9], 10) and first[1].tokens == _exact(model_path, [4, 5], 20)
    assert again.report["hit_rate"] >= 0.8, again.report  # its plans (pool shape and address) were made already
    sdx.generate(sess, [[1] * 200, [2] * 150], 40)  # larger: a new pool, kept from then on
    assert sess._sdx_kv_pool is not pool and sess._sdx_kv_pool.pages > pool.pages
