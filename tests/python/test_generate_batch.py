"""Continuous batching in sdx.generate (python/sdx/_batch_decode.py, issue 21) on the tiny GPT-2 decoder of
test_generate.py: several sequences decode in one batch, joining when a row frees and leaving at their own
max_new_tokens or eos, with the tokens of decoding them one after another (greedy and seeded sampling); the
report says what happened; a model that ignores attention_mask falls back to one after another; bad
arguments are named; `sdx generate --batch-file` batches and writes the batch's report."""
import json

import pytest

import sdx
from sdx._batch_decode import batch_buckets

from test_generate import _cli, _ort_greedy, model_path, unmasked_copy  # noqa: F401 (the fixture)

PROMPTS = [[5, 9, 2, 7], [1], [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 20], [100, 4], [7, 7, 8],
           [11, 12, 13, 14, 15, 16]]
COUNTS = [30, 5, 22, 1, 40, 17]


def test_batch_buckets():
    assert batch_buckets(1) == [1]
    assert batch_buckets(8) == [1, 2, 4, 8]
    assert batch_buckets(6) == [1, 2, 4, 6]


def test_batched_tokens_equal_one_after_another(model_path):
    """Six sequences, four rows: two wait and join as others leave (after 1, 5, 17 ... tokens); KV buckets of
    16 slots make the buffers grow twice while rows of different lengths share them."""
    sess = sdx.InferenceSession(model_path)
    one = sdx.generate(sess, PROMPTS, COUNTS, kv_bucket=16, max_batch=1)
    batched = sdx.generate(sess, PROMPTS, COUNTS, kv_bucket=16, max_batch=4)
    assert [r.tokens for r in batched] == [r.tokens for r in one]
    assert [len(r.tokens) for r in batched] == COUNTS
    assert batched[0].tokens == _ort_greedy(model_path, PROMPTS[0], COUNTS[0])
    rep = batched[0].report
    assert rep["continuous_batching"] == "on" and one[0].report["continuous_batching"] == "off: max_batch is 1"
    b = rep["batch"]
    assert b["sequences"] == 6 and b["max_batch"] == 4 and b["batch_buckets"] == [1, 2, 4]
    assert b["new_tokens"] == sum(COUNTS)
    # Every sequence's first token comes from its prefill; the rest from shared steps, fewer than the tokens.
    assert b["decoded_tokens"] == sum(COUNTS) - len(COUNTS)
    assert max(COUNTS) - 1 <= b["decode_steps"] < b["decoded_tokens"]
    assert 0.0 < b["batch_occupancy"] <= 1.0 and 0.0 < b["padding_waste"] < 1.0
    assert b["hit_rate"] >= 0.5 and b["tokens_per_s"] > 0
    assert all(r.report["batch"] is b for r in batched)


def test_eos_and_sampling_per_sequence(model_path):
    sess = sdx.InferenceSession(model_path)
    full = sdx.generate(sess, PROMPTS[:3], 12, max_batch=1)
    eos = full[0].tokens[3]
    one = sdx.generate(sess, PROMPTS[:3], 12, eos_token_id=eos, max_batch=1)
    batched = sdx.generate(sess, PROMPTS[:3], 12, eos_token_id=eos, max_batch=3)
    assert [r.tokens for r in batched] == [r.tokens for r in one]
    assert batched[0].tokens[-1] == eos and batched[0].report["stopped_by"] == "eos"
    kw = dict(sampling="top_p", top_p=0.8, temperature=0.9, seed=3)
    one = sdx.generate(sess, PROMPTS, 9, max_batch=1, **kw)
    batched = sdx.generate(sess, PROMPTS, 9, max_batch=8, **kw)
    assert [r.tokens for r in batched] == [r.tokens for r in one]


def test_streaming_gives_every_token(model_path):
    seen = []
    rs = sdx.generate(model_path, PROMPTS[:4], 6, stream=seen.append)
    assert sorted(seen) == sorted(t for r in rs for t in r.tokens)


def test_falls_back_when_the_model_ignores_the_mask(model_path, tmp_path):
    path = unmasked_copy(model_path, tmp_path)
    rs = sdx.generate(str(path), PROMPTS[:2], 6, kv_bucket=16)
    assert rs[0].report["continuous_batching"].startswith("off: the KV bucket check failed")
    assert [r.tokens for r in rs] == [r.tokens for r in sdx.generate(str(path), PROMPTS[:2], 6, kv_bucket=None)]


@pytest.mark.parametrize("kw, msg", [
    (dict(max_batch=0), "max_batch must be a whole number >= 1"),
    (dict(max_batch=2.5), "max_batch must be a whole number >= 1"),
    (dict(max_new_tokens=[3]), "max_new_tokens has 1 entries for 2 prompts"),
    (dict(max_new_tokens=[3, 0]), r"max_new_tokens\[1\] must be a whole number >= 1"),
])
def test_bad_arguments(model_path, kw, msg):
    args = dict(max_new_tokens=3)
    args.update(kw)
    with pytest.raises(sdx.InvalidArgument, match=msg):
        sdx.generate(model_path, PROMPTS[:2], **args)


def test_out_of_range_token_in_any_prompt_is_refused_before_decoding(model_path):
    with pytest.raises(sdx.InvalidArgument, match="token id 999 at position 1 of prompt 2"):
        sdx.generate(model_path, [[1], [2], [3, 999]], 4)


def test_cli_batches(model_path, tmp_path):
    batch = tmp_path / "prompts.txt"
    batch.write_text("\n".join(",".join(map(str, p)) for p in PROMPTS[:3]) + "\n")
    out = tmp_path / "gen.json"
    r = _cli(model_path, "--batch-file", str(batch), "--max-new-tokens", "7", "--max-batch", "2", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["continuous_batching"] == "on" and doc["batch"]["sequences"] == 3 and doc["batch"]["max_batch"] == 2
    assert [p["prompt"] for p in doc["prompts"]] == PROMPTS[:3]
    assert doc["prompts"][2]["tokens"] == _ort_greedy(model_path, PROMPTS[2], 7)
    assert 0.0 <= doc["hit_rate"] <= 1.0 and doc["tokens_per_s"] > 0
    assert "continuous batching: 3 sequences, up to 2 at a time" in r.stdout
    assert doc["batch"]["packed_prefill"] is True
    alone = tmp_path / "alone.json"
    r = _cli(model_path, "--batch-file", str(batch), "--max-new-tokens", "7", "--max-batch", "2", "--no-packed-prefill",
             "--json", str(alone))
    assert r.returncode == 0, r.stderr
    doc_alone = json.loads(alone.read_text())
    assert doc_alone["batch"]["packed_prefill"] is False and doc_alone["batch"]["prefill_calls"] == 3
    assert [p["tokens"] for p in doc_alone["prompts"]] == [p["tokens"] for p in doc["prompts"]]
    r = _cli(model_path, "--batch-file", str(batch), "--max-batch", "0")
    assert r.returncode == 2 and "--max-batch" in r.stderr
