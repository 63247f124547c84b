"""numpy arrays in and out of InferenceSession.run (python/src/numpy_fast.cc): arrays the engine can read
in place, arrays it must not (other layouts, byte orders, alignment), every numeric type, and outputs that
own their memory."""
import gc
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import sdx


def _add_self_model(elem=TensorProto.FLOAT, shape=(4, 6)):
    g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", elem, list(shape))],
                          [helper.make_tensor_value_info("y", elem, list(shape))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


class _Sub(np.ndarray):
    pass


def _layouts(x):
    """The same values as x in layouts a caller may hand over."""
    misaligned = np.frombuffer(b"\0" + x.tobytes(), dtype=x.dtype, offset=1).reshape(x.shape)
    readonly = x.copy()
    readonly.setflags(write=False)
    return {
        "c_contiguous": x,
        "fortran": np.asfortranarray(x),
        "negative_strides": x[::-1, ::-1].copy()[::-1, ::-1],
        "column_slice": np.concatenate([x, x], axis=1)[:, : x.shape[1]],
        "big_endian": x.astype(x.dtype.newbyteorder(">")),
        "misaligned": misaligned,
        "read_only": readonly,
        "subclass": x.view(_Sub),
    }


@pytest.mark.parametrize("layout", list(_layouts(np.zeros((1, 1), np.float32))))
def test_every_layout_gives_the_same_result(layout):
    sess = sdx.InferenceSession(_add_self_model())
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
    arr = _layouts(x)[layout]
    assert np.array_equal(arr, x)
    (y,) = sess.run(None, {"x": arr})
    assert y.dtype == np.float32 and y.shape == (4, 6)
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("np_type,onnx_type", [
    (np.float16, TensorProto.FLOAT16), (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
    (np.int8, TensorProto.INT8), (np.int16, TensorProto.INT16), (np.int32, TensorProto.INT32),
    (np.int64, TensorProto.INT64), (np.uint8, TensorProto.UINT8), (np.uint16, TensorProto.UINT16),
    (np.uint32, TensorProto.UINT32), (np.uint64, TensorProto.UINT64)])
def test_every_numeric_type_in_and_out(np_type, onnx_type):
    sess = sdx.InferenceSession(_add_self_model(onnx_type, (2, 3)))
    x = np.array([[0, 1, 2], [3, 4, 5]], dtype=np_type)
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == np.dtype(np_type) and y.shape == (2, 3)
    np.testing.assert_array_equal(y, (x + x).astype(np_type))


def test_wrong_type_is_named_not_reinterpreted():
    sess = sdx.InferenceSession(_add_self_model())
    with pytest.raises(sdx.InvalidArgument, match="x"):
        sess.run(None, {"x": np.zeros((4, 6), np.float64)})
    with pytest.raises(sdx.InvalidArgument, match="x"):
        sess.run(None, {"x": np.zeros((4, 6), np.int32)})


def test_outputs_own_their_memory():
    sess = sdx.InferenceSession(_add_self_model())
    x = np.ones((4, 6), np.float32)
    (y1,) = sess.run(None, {"x": x})
    (y2,) = sess.run(None, {"x": 3 * x})
    # The engine reuses its buffers between runs; each result is a copy of its own.
    np.testing.assert_array_equal(y1, 2 * x)
    np.testing.assert_array_equal(y2, 6 * x)
    assert y1.flags.c_contiguous and y1.flags.writeable and y1.flags.aligned
    y1[0, 0] = -1.0
    assert y2[0, 0] == 6.0
    del sess
    gc.collect()
    np.testing.assert_array_equal(y2, 6 * x)  # still valid once the session is gone


def test_scalar_and_empty_tensors():
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    sess = sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    (y,) = sess.run(None, {"x": np.float32(2.5).reshape(())})
    assert y.shape == () and y == 2.5
    (y,) = sess.run(None, {"x": np.zeros((0, 3), np.float32)})
    assert y.shape == (0, 3) and y.dtype == np.float32


def test_feed_mutated_by_another_thread_during_runs():
    """Threads replace the arrays in a shared feed while others run on it: every run reads a whole,
    live array (the engine holds a reference while it runs without the GIL)."""
    sess = sdx.InferenceSession(_add_self_model(shape=(64, 64)))
    feed = {"x": np.ones((64, 64), np.float32)}
    stop = threading.Event()
    bad = []

    def swap():
        k = 0
        while not stop.is_set():
            feed["x"] = np.full((64, 64), float(k % 7 + 1), np.float32)
            k += 1

    def run():
        for _ in range(300):
            (y,) = sess.run(None, feed)
            v = y[0, 0]
            if not (np.all(y == v) and v in [2.0 * (i + 1) for i in range(7)]):
                bad.append(float(v))

    swapper = threading.Thread(target=swap)
    runners = [threading.Thread(target=run) for _ in range(2)]
    swapper.start()
    for t in runners:
        t.start()
    for t in runners:
        t.join()
    stop.set()
    swapper.join()
    assert bad == []
