"""Small models for the onnxruntime-API tests (test_ort_*.py), built with onnx's helpers."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)


def mul_model() -> onnx.ModelProto:
    """Y = X * W, X float[3,2], W an initializer."""
    g = helper.make_graph([helper.make_node("Mul", ["X", "W"], ["Y"], name="mul_0")], "mul",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])],
                          [numpy_helper.from_array(W, "W")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def free_dims_model() -> onnx.ModelProto:
    """Y = Abs(X), X float[Dim1 (DATA_BATCH), Dim2 (DATA_CHANNEL), 5]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["Dim1", "Dim2", 5])
    dims = x.type.tensor_type.shape.dim
    dims[0].denotation, dims[1].denotation = "DATA_BATCH", "DATA_CHANNEL"
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["Dim1", "Dim2", 5])
    g = helper.make_graph([helper.make_node("Abs", ["x"], ["y"])], "abs", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def external_pads_model(location: str = "pads.bin") -> onnx.ModelProto:
    """Y = Pad(X, pads) with `pads` an int64[4] initializer stored as external data at `location`."""
    pads = numpy_helper.from_array(np.zeros(4, np.int64), "pads")
    pads.ClearField("raw_data")
    pads.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "32")):
        pads.external_data.add(key=k, value=v)
    g = helper.make_graph([helper.make_node("Pad", ["X", "pads"], ["Y"])], "pad",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [pads])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def loop_model(trips: int = 1_000_000) -> onnx.ModelProto:
    """A Loop of `trips` iterations adding 1 to a [64] float vector: a long run to stop."""
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "one"], ["v_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [64])],
        [numpy_helper.from_array(np.ones(64, np.float32), "one")])
    g = helper.make_graph([helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)], "loop",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])],
                          [numpy_helper.from_array(np.array(trips, np.int64), "trips"),
                           numpy_helper.from_array(np.array(True), "cond")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
