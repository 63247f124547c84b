"""Bad models and bad calls get sdx errors naming what was wrong and where (issue 15): the verifier's gate
rejects what the ONNX IR spec forbids before any pass runs, and the binding raises sdx.SdxError
subclasses or TypeError/ValueError with an sdx message, never a crash or a C++ type name."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx
from models import relu_model


def _model(nodes, inputs, outputs, inits=(), opset=17, ir_version=8):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m.SerializeToString()


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_required_input_given_as_empty_is_invalid_graph():
    # The minimal case of the mutation campaign: Reshape("", s1) -> Reshape(., s2) crashed a pass.
    s1 = helper.make_tensor("s1", TensorProto.INT64, [2], [2, 2])
    s2 = helper.make_tensor("s2", TensorProto.INT64, [1], [4])
    m = _model([helper.make_node("Reshape", ["", "s1"], ["a"], name="r1"),
                helper.make_node("Reshape", ["a", "s2"], ["y"], name="r2")],
               [_f("x", [4])], [_f("y", [4])], [s1, s2])
    with pytest.raises(sdx.InvalidGraph, match=r"'r1' \(Reshape\): input 0 \('data'\) is required"):
        sdx.InferenceSession(m)


def test_op_used_before_its_opset_is_invalid_graph():
    m = _model([helper.make_node("Gelu", ["x"], ["y"], name="g0")], [_f("x", [4])], [_f("y", [4])], opset=18)
    with pytest.raises(sdx.InvalidGraph, match="Gelu is not part of ai.onnx opset 18; it was added in opset 20"):
        sdx.InferenceSession(m)


@pytest.mark.parametrize("ir_version", [-1, 0, 1 << 40])
def test_ir_version_outside_the_spec_is_invalid_graph(ir_version):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [4])], [_f("y", [4])], ir_version=ir_version)
    with pytest.raises(sdx.InvalidGraph, match="ir_version"):
        sdx.InferenceSession(m)


def test_graph_without_outputs_is_invalid_graph():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [4])], [])
    with pytest.raises(sdx.InvalidGraph, match="has no outputs"):
        sdx.InferenceSession(m)


def test_sequence_value_info_where_a_tensor_is_required_is_invalid_graph():
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    m = _model([helper.make_node("Relu", ["s"], ["y"], name="relu")], [seq], [_f("y", [4])])
    with pytest.raises(sdx.InvalidGraph, match="is a sequence but Relu takes a tensor"):
        sdx.InferenceSession(m)


def test_pool_window_larger_than_the_input_is_an_error():
    m = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[5, 5], name="pool")],
               [_f("x", [1, 1, 3, 3])], [_f("y", None)])
    with pytest.raises(sdx.SdxError, match="larger than the padded input"):
        sess = sdx.InferenceSession(m)
        sess.run(None, {"x": np.ones((1, 1, 3, 3), np.float32)})


def test_conv_transpose_output_padding_must_be_below_the_stride():
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [0.1] * 9)
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[2, 2],
                                 name="deconv")],
               [_f("x", [1, 1, 3, 3])], [_f("y", None)], [w])
    with pytest.raises(sdx.SdxError, match="output_padding 2 .* must be non-negative and less than its stride"):
        sess = sdx.InferenceSession(m)
        sess.run(None, {"x": np.ones((1, 1, 3, 3), np.float32)})


def test_bad_feeds_raise_type_errors_naming_the_argument():
    sess = sdx.InferenceSession(relu_model().SerializeToString())
    name = sess.get_inputs()[0].name
    x = np.ones([d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape], np.float32)
    with pytest.raises(TypeError, match="sdx: input_feed keys must be input names"):
        sess.run(None, {1: x})
    with pytest.raises(TypeError, match="sdx: input_feed must be a dict"):
        sess.run(None, None)
    with pytest.raises(TypeError, match="sdx: output_names"):
        sess.run(5, {name: x})
    with pytest.raises(TypeError, match="sdx: output_names must hold output names"):
        sess.run([3], {name: x})
    with pytest.raises(TypeError, match="sdx: input_feed keys"):
        sess.introspect({(1, 2): x})


def test_bad_session_arguments_raise_type_errors_naming_the_argument():
    with pytest.raises(TypeError, match="sdx: path_or_bytes"):
        sdx.InferenceSession(42)
    with pytest.raises(TypeError, match="sdx: sess_options"):
        sdx.InferenceSession(relu_model().SerializeToString(), {"intra_op_num_threads": 1})
    so = sdx.SessionOptions()
    so.intra_op_num_threads = "two"
    with pytest.raises(TypeError, match="SessionOptions.intra_op_num_threads must be int"):
        sdx.InferenceSession(relu_model().SerializeToString(), so)
    so = sdx.SessionOptions()
    so.optimizer_skip = "AttentionFusionOptimizations"
    with pytest.raises(TypeError, match="optimizer_skip must be a list"):
        sdx.InferenceSession(relu_model().SerializeToString(), so)


def test_invalid_graph_is_a_value_error_and_an_sdx_error():
    assert issubclass(sdx.InvalidGraph, sdx.SdxError) and issubclass(sdx.InvalidGraph, ValueError)


def test_an_attribute_that_asks_for_terabytes_is_a_clean_error():
    """A Conv pad of 2^32 (found by the structural fuzzer) sizes a window table of terabytes: the run fails
    with ResourceExhausted naming the node, not a MemoryError from inside the engine."""
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 2 ** 32], kernel_shape=[3, 3])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    sess = sdx.InferenceSession(m.SerializeToString())
    with pytest.raises(sdx.ResourceExhausted, match=r"\(Conv\): out of memory"):
        sess.run(None, {"x": np.ones((1, 3, 8, 8), np.float32)})
