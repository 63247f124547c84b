"""KV streams (python/sdx/_kv_streams.py, SessionOptions.kv_streams): a plain onnxruntime-style decode loop on
sdx.InferenceSession, unchanged, runs on the decoder's paged form: tokens and presents equal onnxruntime's,
steps replay, nothing of the past is copied once a stream runs; anything that is not a continuation (a copy,
an older present, a present changed in place, two interleaved sequences, batch 2) still gives the model's
results; off by option, and off with a reason for a model the rewrite cannot take."""

import numpy as np
import onnx
import pytest

import sdx
from decoders import gpt2_decoder

LAYERS, D, HEADS, VOCAB = 2, 64, 2, 128
HD = D // HEADS


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2") / "gpt2_tiny.onnx"
    onnx.save(gpt2_decoder(LAYERS, D, HEADS, VOCAB, 512, seed=0), str(path))
    return str(path)


@pytest.fixture(scope="module")
def ort_sess(model_path):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])


def feeds(ids, total, past):
    ids = np.asarray(ids, np.int64)
    if ids.ndim == 1:
        ids = ids[None]
    b, s = ids.shape
    f = {"input_ids": ids, "attention_mask": np.ones((b, total), np.int64),
         "position_ids": np.tile(np.arange(total - s, total, dtype=np.int64), (b, 1))}
    for i in range(LAYERS):
        f[f"past_key_values.{i}.key"], f[f"past_key_values.{i}.value"] = past[2 * i], past[2 * i + 1]
    return f


def empty(batch=1):
    return [np.zeros((batch, HEADS, 0, HD), np.float32)] * (2 * LAYERS)


def loop(sess, prompt, n, with_report=False):
    """The hand-written loop a user runs on onnxruntime."""
    past, ids, total, out, replayed, last = empty(), list(prompt), len(prompt), [], 0, None
    for _ in range(n):
        if with_report:
            res, rep = sess.run_with_report(None, feeds(ids, total, past))
            replayed += rep["execution_mode"] == "CPU_REPLAY"
        else:
            res = sess.run(None, feeds(ids, total, past))
        out.append(int(res[0][0, -1].argmax()))
        past, ids, total, last = res[1:], [out[-1]], total + 1, res
    return out, replayed, last


def test_an_unchanged_onnxruntime_loop_runs_on_streams_and_replays(model_path, ort_sess):
    sess = sdx.InferenceSession(model_path)
    tokens, replayed, last = loop(sess, [1, 2, 3, 4, 5, 6, 7, 8], 200, with_report=True)
    want, _, ref = loop(ort_sess, [1, 2, 3, 4, 5, 6, 7, 8], 200)
    assert tokens == want and len(set(want)) > 1
    rep = sess.kv_streams()
    assert rep["enabled"] and rep["paged"] and rep["continued"] == 199 and rep["padding"].startswith("passed"), rep
    assert replayed / 200 >= 0.95, replayed
    for a, b in zip(last[1:], ref[1:]):  # the presents: views of the stream's buffers, the same values
        assert a.shape == b.shape and not a.flags.owndata
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)


def test_what_is_not_a_continuation_still_gives_the_models_results(model_path, ort_sess):
    sess = sdx.InferenceSession(model_path)
    res = sess.run(None, feeds([1, 2, 3], 3, empty()))
    ref = ort_sess.run(None, feeds([1, 2, 3], 3, empty()))
    older = res[1:]
    for _ in range(3):
        res = sess.run(None, feeds([7], res[1].shape[2] + 1, res[1:]))
        ref = ort_sess.run(None, feeds([7], ref[1].shape[2] + 1, ref[1:]))
    cases = {
        "copies of the presents": [np.array(x) for x in res[1:]],
        "an older present (a branch)": older,
        "presents changed in place": [x * 0.5 if i == 0 else x for i, x in enumerate(res[1:])],
    }
    for what, past in cases.items():
        if what == "presents changed in place":
            res[1][...] *= 0.5  # the view itself: the next call sees the changed past, as it was fed
            past = res[1:]
        total = past[0].shape[2] + 1
        got = sess.run(None, feeds([9], total, past))
        want = ort_sess.run(None, feeds([9], total, [np.array(x) for x in past]))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, atol=1e-4, rtol=0, err_msg=what)


def test_interleaved_sequences_and_batch_two(model_path, ort_sess):
    sess = sdx.InferenceSession(model_path)
    state = {}
    for name, prompt in (("a", [1, 2, 3]), ("b", [40, 41])):
        state[name] = (sess.run(None, feeds(prompt, len(prompt), empty())),
                       ort_sess.run(None, feeds(prompt, len(prompt), empty())))
    for step in range(20):
        for name in ("a", "b"):
            mine, ref = state[name]
            tok = int(ref[0][0, -1].argmax())
            assert int(mine[0][0, -1].argmax()) == tok, (name, step)
            total = ref[1].shape[2] + 1
            state[name] = (sess.run(None, feeds([tok], total, mine[1:])), ort_sess.run(None, feeds([tok], total, ref[1:])))
    assert sess.kv_streams()["continued"] == 40
    ids = np.asarray([[3, 4, 5], [6, 7, 8]], np.int64)
    mine, ref = sess.run(None, feeds(ids, 3, empty(2))), ort_sess.run(None, feeds(ids, 3, empty(2)))
    for _ in range(10):
        toks = ref[0][:, -1].argmax(-1)[:, None]
        np.testing.assert_array_equal(mine[0][:, -1].argmax(-1)[:, None], toks)
        total = ref[1].shape[2] + 1
        mine, ref = sess.run(None, feeds(toks, total, mine[1:])), ort_sess.run(None, feeds(toks, total, ref[1:]))
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)


def test_off_by_option_and_for_a_model_without_a_paged_form(model_path, ort_sess, tmp_path):
    so = sdx.SessionOptions()
    so.kv_streams = False
    sess = sdx.InferenceSession(model_path, so)
    assert sess.kv_streams() is None
    tokens, _, last = loop(sess, [2, 3], 10)
    assert tokens == loop(ort_sess, [2, 3], 10)[0] and last[1].flags.c_contiguous
    m = onnx.load(model_path)
    m.graph.node.append(onnx.helper.make_node("Identity", ["past_key_values.0.key"], ["peek"]))
    m.graph.output.append(onnx.helper.make_tensor_value_info("peek", onnx.TensorProto.FLOAT, None))
    path = str(tmp_path / "peek.onnx")
    onnx.save(m, path)
    other = sdx.InferenceSession(path)
    past = empty()
    res = other.run(None, feeds([1, 2], 2, past))
    res = other.run(None, feeds([5], 3, res[1:-1]))
    assert other.kv_streams()["enabled"] is False and "no paged form" in other.kv_streams()["reason"]
    assert not sdx.InferenceSession(model_path).kv_streams()["paged"]  # the paged form is made on first need


def test_bad_feeds_get_the_errors_they_get_without_streams(model_path):
    on, so = sdx.InferenceSession(model_path), sdx.SessionOptions()
    so.kv_streams = False
    off = sdx.InferenceSession(model_path, so)
    res = on.run(None, feeds([1, 2, 3], 3, empty()))
    bad = {
        "a mask one short": dict(feeds([4], 4, res[1:]), attention_mask=np.ones((1, 3), np.int64)),
        "a float mask": dict(feeds([4], 4, res[1:]), attention_mask=np.ones((1, 4), np.float32)),
        "a past of another head size": feeds([4], 4, [np.zeros((1, HEADS, 3, HD + 1), np.float32)] * (2 * LAYERS)),
        "a missing input": {k: v for k, v in feeds([4], 4, res[1:]).items() if k != "position_ids"},
    }
    for what, f in bad.items():
        with pytest.raises(sdx.InvalidArgument) as want:
            off.run(None, {k: np.array(v) for k, v in f.items()})
        with pytest.raises(sdx.InvalidArgument) as got:
            on.run(None, f)
        assert type(got.value) is type(want.value), what


def test_two_threads_run_their_own_loops_on_one_session(model_path, ort_sess):
    """Two threads decode different prompts on one session at once (its KV streams are shared state): each gets
    the tokens of onnxruntime's loop."""
    import threading

    sess = sdx.InferenceSession(model_path)
    prompts = {0: [1, 2, 3, 4, 5, 6, 7, 8], 1: [9, 3, 7, 1]}
    want = {i: loop(ort_sess, p, 60)[0] for i, p in prompts.items()}
    got, errors = {}, []

    def work(i):
        try:
            for _ in range(3):
                got[i] = loop(sess, prompts[i], 60)[0]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert got == want
    assert sess.kv_streams()["continued"] >= 2 * 3 * 59 * 0.9
