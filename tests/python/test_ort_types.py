"""Input conversion as onnxruntime does it (python/sdx/_session.py, _types.py): read-only arrays
everywhere (sequences, bfloat16/float8), strings of every numpy kind, and sub-byte types in and out
with their declared shape."""
import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import sdx


def _session(nodes, inputs, outputs, opset=21):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())


def _read_only(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("elem,dtype", [(TensorProto.INT4, ml_dtypes.int4), (TensorProto.UINT4, ml_dtypes.uint4),
                                        (TensorProto.INT2, ml_dtypes.int2), (TensorProto.UINT2, ml_dtypes.uint2),
                                        (TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn)])
def test_sub_byte_types_in_and_out_with_their_shape(elem, dtype):
    sess = _session([helper.make_node("Identity", ["x"], ["y"])], [helper.make_tensor_value_info("x", elem, [3, 5])],
                    [helper.make_tensor_value_info("y", elem, [3, 5])])
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    lo, hi = (int(info.min), int(info.max)) if info else (-6, 6)
    x = np.random.default_rng(0).integers(lo, hi + 1, (3, 5)).astype(dtype)
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == np.dtype(dtype) and y.shape == (3, 5)
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))
    (z,) = sess.run(None, {"x": _read_only(x)})
    np.testing.assert_array_equal(z.astype(np.float32), x.astype(np.float32))


def test_int4_cast_matches_numpy():
    sess = _session([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT8)],
                    [helper.make_tensor_value_info("x", TensorProto.INT4, [7])],
                    [helper.make_tensor_value_info("y", TensorProto.INT8, [7])])
    x = np.array([-8, -1, 0, 1, 7, 3, -5], ml_dtypes.int4)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x.astype(np.int8))
    with pytest.raises(sdx.InvalidArgument, match="expected element type int4"):
        sess.run(None, {"x": np.zeros(7, np.float32)})


def test_read_only_arrays_in_sequences_and_low_precision():
    seq = _session([helper.make_node("SequenceLength", ["s"], ["n"])],
                   [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)],
                   [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    assert seq.run(None, {"s": [_read_only(np.ones(3, np.float32)), _read_only(np.ones(2, np.float32))]})[0] == 2
    bf = _session([helper.make_node("Identity", ["x"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])],
                  [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])])
    x = _read_only(np.array([1.5, -2, 3, 0.25], ml_dtypes.bfloat16))
    (y,) = bf.run(None, {"x": x})
    assert y.dtype == ml_dtypes.bfloat16 and np.array_equal(y.astype(np.float32), x.astype(np.float32))


def test_strings_of_every_numpy_kind():
    sess = _session([helper.make_node("Identity", ["x"], ["y"])],
                    [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 2])],
                    [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 2])])
    want = np.array([["must", "have"], ["same", "size"]], dtype=object)
    for x in (want.astype(str), want.astype(bytes), want, np.array([b"must", b"have", b"same", b"size"], np.void).reshape(2, 2),
              want.tolist()):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)
