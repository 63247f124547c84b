"""SessionOptions.shape_buckets (src/runtime/shape_buckets.h, issue 21) from Python: a decoder driven by a plain
onnxruntime-style loop (its past fed back by hand, one new length per call) replays with buckets on the past
length and gives onnxruntime's tokens; the first padded call's check is reported; a model that does not mask
its padding falls back to exact shapes saying why; bad declarations are refused naming them."""
import os
import subprocess
import sys

import numpy as np
import pytest

import sdx

from test_generate import D, HEADS, LAYERS, _feeds, _ort_greedy, model_path, unmasked_copy  # noqa: F401


def _loop(sess, prompt, n):
    """The hand-written loop of test_generate._ort_greedy, on any session, with each call's report."""
    past = [np.zeros((1, HEADS, 0, D // HEADS), np.float32)] * (2 * LAYERS)
    ids, total, out, reports = list(prompt), len(prompt), [], []
    for _ in range(n):
        res, rep = sess.run_with_report(None, _feeds(ids, total, past))
        reports.append(rep)
        out.append(int(res[0][0, -1].argmax()))
        assert res[1].shape == (1, HEADS, total, D // HEADS)  # present sliced back to the real length
        past, ids, total = res[1:], [out[-1]], total + 1
    return out, reports


def _options(*buckets):
    o = sdx.SessionOptions()
    o.shape_buckets = list(buckets)
    return o


def test_a_hand_written_decode_loop_replays_with_onnxruntimes_tokens(model_path):
    sess = sdx.InferenceSession(model_path, _options("past_sequence_length=16"))
    assert sess.shape_buckets() == {"buckets": "past_sequence_length in multiples of 16", "status": "unchecked"}
    tokens, reports = _loop(sess, [5, 9, 2, 7], 60)
    assert tokens == _ort_greedy(model_path, [5, 9, 2, 7], 60)
    assert sess.shape_buckets()["status"].startswith("checked: "), sess.shape_buckets()
    decode = reports[1:]  # the prefill has no past to pad
    assert all(r["bucket_padding"] == (16 - (4 + i) % 16) % 16 for i, r in enumerate(decode))
    hit = sum(r["execution_mode"] == "CPU_REPLAY" for r in decode) / len(decode)
    assert hit >= 0.8, hit  # 59 steps over 4 buckets of 16: a warmup and a capture each, replays after
    # Without buckets (and without KV streams, which pad on their own: test_kv_streams.py) every step is a new
    # shape: none replays.
    so = sdx.SessionOptions()
    so.kv_streams = False
    _, plain = _loop(sdx.InferenceSession(model_path, so), [5, 9, 2, 7], 20)
    assert all(r["execution_mode"] == "SLOT_BY_SLOT" and r["bucket_padding"] == 0 for r in plain)


def test_the_environment_variable_declares_buckets(model_path):
    code = ("import sdx, sys; s = sdx.InferenceSession(sys.argv[1]); print(s.shape_buckets()['buckets'])")
    env = dict(os.environ, SDX_SHAPE_BUCKETS="past_sequence_length=32", SDX_DISK_PLAN_CACHE="0")
    r = subprocess.run([sys.executable, "-c", code, model_path], capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "past_sequence_length in multiples of 32"


def test_a_model_that_does_not_mask_its_padding_runs_exact_shapes(model_path, tmp_path):
    path = unmasked_copy(model_path, tmp_path)  # attention_mask replaced by ones
    sess = sdx.InferenceSession(path, _options("past_sequence_length=16"))
    tokens, reports = _loop(sess, [5, 9, 2, 7], 12)
    assert tokens == _loop(sdx.InferenceSession(path), [5, 9, 2, 7], 12)[0]
    status = sess.shape_buckets()["status"]
    assert status.startswith("disabled: the first padded call's check failed: output 0 differs"), status
    assert all(r["bucket_padding"] == 0 for r in reports)


@pytest.mark.parametrize("bad, msg", [("past_sequence_length", "is not NAME=STEP"),
                                      ("past_sequence_length=0", "is not NAME=STEP"),
                                      ("kv_len=64", "names dim 'kv_len', which no input of the model declares")])
def test_bad_declarations_are_refused(model_path, bad, msg):
    with pytest.raises(sdx.InvalidArgument, match=msg):
        sdx.InferenceSession(model_path, _options(bad))


def test_automatic_buckets_replay_a_decode_loop(model_path):
    sess = sdx.InferenceSession(model_path, _options("past_sequence_length=auto:4"))
    tokens, reports = _loop(sess, [3, 1, 4], 150)
    assert tokens == _ort_greedy(model_path, [3, 1, 4], 150)
    hit = sum(r["execution_mode"] == "CPU_REPLAY" for r in reports[1:]) / (len(reports) - 1)
    assert hit >= 0.7, hit
    desc = sess.shape_buckets()["buckets"]
    assert desc.startswith("past_sequence_length in automatic buckets (at most 4 chosen from the traffic; now ["), desc
