import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import sdx
from models import mlp_model, mlp_reference, relu_model


def test_run_matches_numpy(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    sess = sdx.InferenceSession(str(path))
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    probs, logits = sess.run(None, {"x": x})
    ref_probs, ref_logits = mlp_reference(x)
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(probs, ref_probs, rtol=1e-5, atol=1e-6)
    (only,) = sess.run(["logits"], {"x": x})
    np.testing.assert_allclose(only, ref_logits, rtol=1e-5, atol=1e-5)


def test_metadata_like_onnxruntime():
    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    (inp,) = sess.get_inputs()
    assert inp.name == "x" and inp.type == "tensor(float)" and inp.shape == ["batch", 4]
    assert [o.name for o in sess.get_outputs()] == ["probs", "logits"]
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_dtypes_round_trip():
    for np_type, onnx_type in [(np.float64, TensorProto.DOUBLE), (np.int32, TensorProto.INT32),
                               (np.int64, TensorProto.INT64), (np.float16, TensorProto.FLOAT16),
                               (np.uint8, TensorProto.UINT8), (np.bool_, TensorProto.BOOL)]:
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx_type, [2, 2])],
                              [helper.make_tensor_value_info("y", onnx_type, [2, 2])])
        sess = sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
        x = (np.arange(4).reshape(2, 2) % 2).astype(np_type)
        (y,) = sess.run(None, {"x": x})
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y, x)
        # Identity may alias the input: the result must be an independent copy.
        x[0, 0] = 1
        assert y[0, 0] == 0


def test_non_contiguous_input():
    sess = sdx.InferenceSession(relu_model().SerializeToString())
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)[:, :3]
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_strings():
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    sess = sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    (y,) = sess.run(None, {"x": np.array(["a", "bé"], dtype=object)})
    assert y.tolist() == ["a", "bé"]


@pytest.fixture
def relu_sess():
    return sdx.InferenceSession(relu_model().SerializeToString())


def test_wrong_input_name(relu_sess):
    with pytest.raises(sdx.InvalidArgument, match=r"unknown input name 'z'.*x"):
        relu_sess.run(None, {"z": np.zeros((1, 3), np.float32)})


def test_missing_input(relu_sess):
    with pytest.raises(sdx.InvalidArgument, match=r"missing input 'x'"):
        relu_sess.run(None, {})


def test_wrong_dtype(relu_sess):
    with pytest.raises(sdx.InvalidArgument, match=r"input 'x': expected element type float but got double"):
        relu_sess.run(None, {"x": np.zeros((1, 3), np.float64)})


def test_wrong_rank_and_dims(relu_sess):
    with pytest.raises(sdx.InvalidArgument, match=r"input 'x': expected rank 2"):
        relu_sess.run(None, {"x": np.zeros((3,), np.float32)})
    with pytest.raises(sdx.InvalidArgument, match=r"input 'x': dimension 1 must be 3"):
        relu_sess.run(None, {"x": np.zeros((2, 4), np.float32)})


def test_wrong_output_name(relu_sess):
    with pytest.raises(sdx.InvalidArgument, match=r"unknown output name 'q'"):
        relu_sess.run(["q"], {"x": np.zeros((1, 3), np.float32)})


def test_truncated_model(tmp_path):
    data = relu_model().SerializeToString()
    path = tmp_path / "t.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(sdx.SdxError, match=r"t\.onnx"):
        sdx.InferenceSession(str(path))


def test_random_bytes(tmp_path):
    rng = np.random.default_rng(0)
    for i in range(50):
        blob = rng.integers(0, 256, size=int(rng.integers(1, 400)), dtype=np.uint8).tobytes()
        try:
            sdx.InferenceSession(blob)
        except sdx.SdxError:
            pass


def test_missing_file():
    with pytest.raises(sdx.NoSuchFile, match="nope.onnx"):
        sdx.InferenceSession("/nonexistent/nope.onnx")


def test_external_data_escape(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 16)
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], vals=[0.0] * 4)
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[w])
    path = model_dir / "model.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with pytest.raises(sdx.InvalidArgument, match=r"'w'.*escapes the model folder"):
        sdx.InferenceSession(str(path))


def test_unsupported_ops_listed_in_one_error():
    nodes = [helper.make_node("NoSuchOp", ["x"], ["a"], name="first"),
             helper.make_node("NoSuchOp", ["a"], ["b"], name="second"),
             helper.make_node("AlsoMissing", ["b"], ["y"], name="third", domain="com.example")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(sdx.NotImplemented) as e:
        sdx.InferenceSession(m.SerializeToString())
    msg = str(e.value)
    assert "2 unsupported operators" in msg and "'first', 'second'" in msg and "com.example.AlsoMissing" in msg


def test_kernel_error_names_node():
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="bad_matmul")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    sess = sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with pytest.raises(sdx.SdxError, match="bad_matmul"):
        sess.run(None, {"a": np.zeros((2, 3), np.float32), "b": np.zeros((4, 5), np.float32)})


def test_concurrent_runs_share_one_session():
    from concurrent.futures import ThreadPoolExecutor

    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(64)]

    def one(x):
        probs, logits = sess.run(None, {"x": x})
        ref_probs, ref_logits = mlp_reference(x)
        return np.allclose(logits, ref_logits, rtol=1e-5, atol=1e-5)

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(one, xs))


def test_wrong_attribute_type_names_node_and_attribute():
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm")
    node.attribute.append(helper.make_attribute("axis", 1.5))  # must be an int
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(sdx.InvalidArgument, match=r"node 'sm' \(Softmax\): attribute 'axis' must be of type int but is float"):
        sdx.InferenceSession(m.SerializeToString())


def test_model_metadata_and_overridable_initializers():
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.full((3,), 2.0, np.float32), "w")
    g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "scale",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                           helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    helper.set_model_props(m, {"author": "sdx"})
    sess = sdx.InferenceSession(m.SerializeToString())
    meta = sess.get_modelmeta()
    assert meta.producer_name == "tests" and meta.graph_name == "scale"
    assert meta.custom_metadata_map == {"author": "sdx"}
    assert [i.name for i in sess.get_overridable_initializers()] == ["w"]
    assert [i.name for i in sess.get_inputs()] == ["x"]
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], 2 * x)
    np.testing.assert_array_equal(sess.run(None, {"x": x, "w": np.full(3, 5.0, np.float32)})[0], 5 * x)


def test_execution_modes_agree():
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    results = {}
    for mode in ("AUTO", "SLOT_BY_SLOT"):
        opts = sdx.SessionOptions()
        opts.execution_mode = mode
        sess = sdx.InferenceSession(mlp_model().SerializeToString(), opts)
        results[mode] = [sess.run(None, {"x": x}) for _ in range(3)]  # warmup, then planned memory
    for runs in results.values():
        for outs in runs:
            for a, b in zip(outs, results["SLOT_BY_SLOT"][0]):
                np.testing.assert_array_equal(a, b)
    bad = sdx.SessionOptions()
    bad.execution_mode = "FAST"
    with pytest.raises(sdx.InvalidArgument, match="execution_mode"):
        sdx.InferenceSession(mlp_model().SerializeToString(), bad)
