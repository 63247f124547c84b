"""Lower-precision weights (SessionOptions.optimizer_fp16 / optimizer_int8) on exporter-shaped models.

The optimizer stores the MatMul/Gemm weights as float16, or as int8 with per-output-channel scales, read
directly by sdx.Linear (no Cast per call); outputs are compared with the float32 session. Error measure per
output: max |lowp - fp32| / max |fp32|. Bounds (measured on gpt_decoder_step, 4 layers, random N(0, 1)
inputs: fp16 ~3e-4, int8 ~8e-3 on "y"; the present K/V outputs carry the error of one projection):
fp16 < 2e-3, int8 < 3e-2; int8d (optimizer_int8_dynamic: X quantized per row on every call too) < 6e-2.
A wrong kernel (lost scale, transposed or misread weight) is off by O(1).
"""
import numpy as np
import pytest

import sdx
from models import gpt_decoder_step, transformer_encoder

BOUNDS = {"fp16": 2e-3, "int8": 3e-2, "int8d": 6e-2}


def session(data: bytes, precision: str) -> "sdx.InferenceSession":
    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.optimizer_fp16 = precision == "fp16"
    opts.optimizer_int8 = precision == "int8"
    opts.optimizer_int8_dynamic = precision == "int8d"
    return sdx.InferenceSession(data, opts)


def feeds_for(sess, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        if arg.type == "tensor(int64)":
            feeds[arg.name] = np.ones(shape, np.int64)
        else:
            feeds[arg.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def relative_errors(got: list, want: list) -> list:
    return [float(np.max(np.abs(g - w)) / np.max(np.abs(w))) for g, w in zip(got, want)]


@pytest.fixture(scope="module")
def decoder():
    return gpt_decoder_step(layers=4).SerializeToString()


@pytest.mark.parametrize("precision", ["fp16", "int8", "int8d"])
def test_decoder_step_lowp_weights_within_bounds(decoder, precision):
    ref_sess, sess = session(decoder, "fp32"), session(decoder, precision)
    feeds = feeds_for(ref_sess)
    want = ref_sess.run(None, feeds)
    got = sess.run(None, feeds)
    errs = relative_errors(got, want)
    print(f"{precision}: max relative error per output {max(errs):.2e} (y: {errs[0]:.2e})")
    assert max(errs) < BOUNDS[precision], errs
    assert errs[0] > 0  # the weights really changed precision
    # Replays (the captured plan) give the first call's bits.
    for _ in range(3):
        again = sess.run(None, feeds)
        assert all(np.array_equal(a, b) for a, b in zip(again, got))
    report = sess.optimization_report()
    ops = report["ops_after"]
    assert "Cast" not in ops and "MatMul" not in ops, ops  # every projection reads its weight directly
    assert ops.get("sdx.Linear", 0) == 4 * 4, ops            # Q/K/V (merged), out, fc, proj per layer
    tag = {"int8": "X rounded to 16 bits per row", "int8d": "X quantized to 8 bits per row"}.get(precision, "-> float16")
    assert sum(tag in str(line) for line in report["log"]) == 16, report["log"]


@pytest.mark.parametrize("precision", ["fp16", "int8", "int8d"])
def test_encoder_lowp_weights_large_m(precision):
    # seq 128 rows: the widened-copy + GEMM path instead of the small-M kernel.
    data = transformer_encoder(layers=2).SerializeToString()
    ref_sess, sess = session(data, "fp32"), session(data, precision)
    feeds = feeds_for(ref_sess, seed=1)
    errs = relative_errors(sess.run(None, feeds), ref_sess.run(None, feeds))
    print(f"{precision} encoder: max relative error {max(errs):.2e}")
    assert 0 < max(errs) < BOUNDS[precision], errs
