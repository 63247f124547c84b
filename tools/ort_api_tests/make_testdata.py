#!/usr/bin/env python3
"""Rebuild the models that onnxruntime's Python API test file loads through get_name().

onnxruntime keeps these under onnxruntime/test/testdata/ (mostly binary); this script
rebuilds each from what the tests assert about it (names, shapes, types, values,
dim_params, denotations, metadata, external data), so nothing binary is copied.

    python3 tools/ort_api_tests/make_testdata.py OUT_DIR [--models-dir DIR]

The LoRA adapter (lora/two_params_lora_model.onnx_adapter) is written with
onnxruntime's own AdapterFormat API, so this needs the real onnxruntime importable
(run it in a process where "onnxruntime" is not aliased to sdx).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def _model(graph: onnx.GraphProto, opset: int = OPSET, **kw) -> onnx.ModelProto:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="sdx-ort-api-tests", **kw)
    m.ir_version = IR_VERSION
    return m


def _save(m: onnx.ModelProto, out: str, name: str, check: bool = True) -> None:
    path = os.path.join(out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if check:
        onnx.checker.check_model(m)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def _vi(name: str, elem: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _set_external(t: onnx.TensorProto, location: str, offset: int | None = None, length: int | None = None) -> None:
    """Mark t as stored outside the model at `location` and drop its inline bytes."""
    del t.external_data[:]
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    t.data_location = TensorProto.EXTERNAL
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.ClearField("int64_data")


# --- the models ---------------------------------------------------------------------------

def mul_1(out: str) -> None:
    # Y = X * W, W = [[1,2],[3,4],[5,6]]; W is an initializer only (not a graph input) so
    # get_inputs() has one entry and SessionOptions.add_initializer("W", ...) can override it.
    w = numpy_helper.from_array(np.array([[1, 2], [3, 4], [5, 6]], np.float32), "W")
    g = helper.make_graph([helper.make_node("Mul", ["X", "W"], ["Y"], name="mul_1")], "mul_1",
                          [_vi("X", TensorProto.FLOAT, [3, 2])], [_vi("Y", TensorProto.FLOAT, [3, 2])], [w])
    _save(_model(g), out, "mul_1.onnx")


def matmul(out: str, name: str, rows) -> None:
    # Y = X @ [[1],[2]]: [[1,2],[3,4],[5,6]] -> [[5],[11],[17]]
    w = numpy_helper.from_array(np.array([[1], [2]], np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")], name.split(".")[0],
                          [_vi("X", TensorProto.FLOAT, [rows, 2])], [_vi("Y", TensorProto.FLOAT, [rows, 1])], [w])
    _save(_model(g), out, name)


def identity_string(out: str) -> None:
    g = helper.make_graph([helper.make_node("Identity", ["input:0"], ["output:0"])], "identity_string",
                          [_vi("input:0", TensorProto.STRING, [2, 2])], [_vi("output:0", TensorProto.STRING, [2, 2])])
    _save(_model(g), out, "identity_string.onnx")


def identity_opt(out: str) -> None:
    t = helper.make_optional_type_proto(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    g = helper.make_graph([helper.make_node("Identity", ["input"], ["output"])], "identity_opt",
                          [helper.make_value_info("input", t)], [helper.make_value_info("output", t)])
    _save(_model(g), out, "identity_opt.onnx")


def logicaland(out: str) -> None:
    # input order matters: "input1:0" first, then "input:0"
    g = helper.make_graph([helper.make_node("And", ["input1:0", "input:0"], ["output:0"])], "logicaland",
                          [_vi("input1:0", TensorProto.BOOL, [2, 2]), _vi("input:0", TensorProto.BOOL, [2, 2])],
                          [_vi("output:0", TensorProto.BOOL, [2, 2])])
    _save(_model(g), out, "logicaland.onnx")


def _seq(elem: int, shape=None) -> onnx.TypeProto:
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, shape))


def sequences(out: str) -> None:
    g = helper.make_graph([helper.make_node("SequenceLength", ["X"], ["Y"])], "sequence_length",
                          [helper.make_value_info("X", _seq(TensorProto.FLOAT))], [_vi("Y", TensorProto.INT64, [])])
    _save(_model(g), out, "sequence_length.onnx")

    g = helper.make_graph([helper.make_node("SequenceConstruct", ["tensor1", "tensor2"], ["output_sequence"])],
                          "sequence_construct",
                          [_vi("tensor1", TensorProto.INT64, [2, 3]), _vi("tensor2", TensorProto.INT64, [2, 3])],
                          [helper.make_value_info("output_sequence", _seq(TensorProto.INT64))])
    _save(_model(g), out, "sequence_construct.onnx")

    g = helper.make_graph([helper.make_node("SequenceInsert", ["input_seq", "tensor"], ["output_sequence"])],
                          "sequence_insert",
                          [helper.make_value_info("input_seq", _seq(TensorProto.INT64)),
                           _vi("tensor", TensorProto.INT64, [2, 3])],
                          [helper.make_value_info("output_sequence", _seq(TensorProto.INT64))])
    _save(_model(g), out, "sequence_insert.onnx")


def abs_free_dimensions(out: str) -> None:
    # x: [Dim1 (denotation DATA_BATCH), Dim2 (denotation DATA_CHANNEL), 5]
    x = _vi("x", TensorProto.FLOAT, ["Dim1", "Dim2", 5])
    dims = x.type.tensor_type.shape.dim
    dims[0].denotation = "DATA_BATCH"
    dims[1].denotation = "DATA_CHANNEL"
    y = _vi("y", TensorProto.FLOAT, ["Dim1", "Dim2", 5])
    g = helper.make_graph([helper.make_node("Abs", ["x"], ["y"])], "abs_free_dimensions", [x], [y])
    _save(_model(g), out, "abs_free_dimensions.onnx")


def ort_config(out: str) -> None:
    # onnxruntime reads metadata_props["ort_config"] when ORT_LOAD_CONFIG_FROM_MODEL=1
    # (core/session/inference_session_utils.cc): {"session_options": {key: int}} for
    # intra_op_num_threads, inter_op_num_threads, execution_mode (0/1),
    # graph_optimization_level (C enum: 0, 1, 2, 99) and enable_profiling (0/1).
    cfg = {"session_options": {"inter_op_num_threads": 5, "intra_op_num_threads": 2,
                               "graph_optimization_level": 99, "enable_profiling": 1}}
    g = helper.make_graph([helper.make_node("Abs", ["X"], ["Y"])], "model_with_valid_ort_config_json",
                          [_vi("X", TensorProto.FLOAT, [3, 2])], [_vi("Y", TensorProto.FLOAT, [3, 2])])
    m = _model(g)
    helper.set_model_props(m, {"ort_config": json.dumps(cfg)})
    _save(m, out, "model_with_valid_ort_config_json.onnx")


def external_initializer_come_from_user(out: str) -> None:
    # Pad(X, Pads_not_on_disk); the int64[4] initializer names an external file that is
    # never written: the tests supply it through add_external_initializers(...) or
    # add_external_initializers_from_files_in_memory(["Pads_not_on_disk.bin"], ...).
    # As in onnxruntime's generator, Pads_not_on_disk is also a graph input (overridable).
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1], np.int64), "Pads_not_on_disk")
    _set_external(pads, "Pads_not_on_disk.bin")
    g = helper.make_graph([helper.make_node("Pad", ["X", "Pads_not_on_disk"], ["Y"], mode="constant")], "test-model",
                          [_vi("X", TensorProto.FLOAT, [1, 2]), _vi("Pads_not_on_disk", TensorProto.INT64, [4])],
                          [_vi("Y", TensorProto.FLOAT, [1, 4])], [pads])
    # the checker would try to find Pads_not_on_disk.bin
    _save(_model(g), out, "model_with_external_initializer_come_from_user.onnx", check=False)


def mnist(out: str) -> None:
    # The shape of the model zoo's MNIST CNN: Input3 [1,1,28,28] -> conv5x5(8) +b, relu, maxpool2
    # -> conv5x5(16) +b, relu, maxpool3 -> reshape [1,256] -> matmul [256,10] + b -> Plus214_Output_0.
    # Weights are random but fixed (its initializers are what the external-initializer tests need:
    # several over the 100-byte threshold).
    rng = np.random.default_rng(5)
    inits = [
        numpy_helper.from_array((rng.standard_normal((8, 1, 5, 5)) * 0.2).astype(np.float32), "Parameter5"),
        numpy_helper.from_array((rng.standard_normal((8, 1, 1)) * 0.1).astype(np.float32), "Parameter6"),
        numpy_helper.from_array((rng.standard_normal((16, 8, 5, 5)) * 0.05).astype(np.float32), "Parameter87"),
        numpy_helper.from_array((rng.standard_normal((16, 1, 1)) * 0.1).astype(np.float32), "Parameter88"),
        numpy_helper.from_array(np.array([1, 256], np.int64), "Pooling160_Output_0_reshape0_shape"),
        numpy_helper.from_array((rng.standard_normal((256, 10)) * 0.05).astype(np.float32), "Parameter193"),
        numpy_helper.from_array((rng.standard_normal((1, 10)) * 0.1).astype(np.float32), "Parameter194"),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["Input3", "Parameter5"], ["Convolution28_Output_0"], name="Convolution28",
          kernel_shape=[5, 5], strides=[1, 1], auto_pad="SAME_UPPER", group=1, dilations=[1, 1]),
        n("Add", ["Convolution28_Output_0", "Parameter6"], ["Plus30_Output_0"], name="Plus30"),
        n("Relu", ["Plus30_Output_0"], ["ReLU32_Output_0"], name="ReLU32"),
        n("MaxPool", ["ReLU32_Output_0"], ["Pooling66_Output_0"], name="Pooling66",
          kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
        n("Conv", ["Pooling66_Output_0", "Parameter87"], ["Convolution110_Output_0"], name="Convolution110",
          kernel_shape=[5, 5], strides=[1, 1], auto_pad="SAME_UPPER", group=1, dilations=[1, 1]),
        n("Add", ["Convolution110_Output_0", "Parameter88"], ["Plus112_Output_0"], name="Plus112"),
        n("Relu", ["Plus112_Output_0"], ["ReLU114_Output_0"], name="ReLU114"),
        n("MaxPool", ["ReLU114_Output_0"], ["Pooling160_Output_0"], name="Pooling160",
          kernel_shape=[3, 3], strides=[3, 3], pads=[0, 0, 0, 0]),
        n("Reshape", ["Pooling160_Output_0", "Pooling160_Output_0_reshape0_shape"],
          ["Pooling160_Output_0_reshape0"], name="Times212_reshape0"),
        n("MatMul", ["Pooling160_Output_0_reshape0", "Parameter193"], ["Times212_Output_0"], name="Times212"),
        n("Add", ["Times212_Output_0", "Parameter194"], ["Plus214_Output_0"], name="Plus214"),
    ]
    g = helper.make_graph(nodes, "CNTKGraph", [_vi("Input3", TensorProto.FLOAT, [1, 1, 28, 28])],
                          [_vi("Plus214_Output_0", TensorProto.FLOAT, [1, 10])], inits)
    _save(_model(g), out, "mnist.onnx")


def model_with_orig_ext_data(out: str) -> None:
    # A model whose initializer W (float[2,8], 64 bytes) already lives in an external file,
    # "model_with_orig_ext_data.onnx.data" next to the model (as in onnxruntime's testdata).
    # The serialization tests re-save it with thresholds of 100, 20 and 10 bytes.
    w = np.arange(16, dtype=np.float32).reshape(2, 8)
    data_name = "model_with_orig_ext_data.onnx.data"
    with open(os.path.join(out, data_name), "wb") as f:
        f.write(w.tobytes())
    wt = numpy_helper.from_array(w, "W")
    _set_external(wt, data_name, 0, w.nbytes)
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")], "model_with_orig_ext_data",
                          [_vi("X", TensorProto.FLOAT, [1, 2])], [_vi("Y", TensorProto.FLOAT, [1, 8])], [wt])
    _save(_model(g), out, "model_with_orig_ext_data.onnx", check=False)


def add_mul_add(out: str) -> None:
    # (A + B) * B + A with node names add_0, mul_0, add_1 (as onnxruntime's add_mul_add.py)
    g = helper.make_graph(
        [helper.make_node("Add", ["A", "B"], ["add_output"], name="add_0"),
         helper.make_node("Mul", ["add_output", "B"], ["mul_output"], name="mul_0"),
         helper.make_node("Add", ["mul_output", "A"], ["C"], name="add_1")],
        "Main_graph", [_vi("A", TensorProto.FLOAT, [3, 2]), _vi("B", TensorProto.FLOAT, [3, 2])],
        [_vi("C", TensorProto.FLOAT, [3, 2])])
    _save(_model(g), out, "add_mul_add.onnx")


def lora(out: str) -> None:
    # As onnxruntime's testdata/lora/two_params_lora_model.py: output = x @ W + (x @ A) @ B where
    # A [4,dim] and B [dim,4] are overridable initializers defaulting to empty [4,0] / [0,4].
    # Base run with x = ones: 28 32 36 40; with the adapter (A = [3,4,5,6]^T, B = [7,8,9,10]):
    # + 18 * [7,8,9,10] = 154 176 198 220.
    wx = numpy_helper.from_array(np.arange(1, 17, dtype=np.float32).reshape(4, 4), "weight_x")
    a0 = helper.make_tensor("lora_param_a", TensorProto.FLOAT, [4, 0], [])
    b0 = helper.make_tensor("lora_param_b", TensorProto.FLOAT, [0, 4], [])
    g = helper.make_graph(
        [helper.make_node("MatMul", ["input_x", "weight_x"], ["mm_output_x"]),
         helper.make_node("MatMul", ["input_x", "lora_param_a"], ["mm_output_a"]),
         helper.make_node("MatMul", ["mm_output_a", "lora_param_b"], ["mm_output_b"]),
         helper.make_node("Add", ["mm_output_x", "mm_output_b"], ["output"])],
        "two_params_lora_model",
        [_vi("input_x", TensorProto.FLOAT, [4, 4]), _vi("lora_param_a", TensorProto.FLOAT, [4, "dim"]),
         _vi("lora_param_b", TensorProto.FLOAT, ["dim", 4])],
        [_vi("output", TensorProto.FLOAT, [4, 4])], [wx, a0, b0])
    _save(_model(g), out, "lora/two_params_lora_model.onnx")

    adapter_path = os.path.join(out, "lora", "two_params_lora_model.onnx_adapter")
    try:
        import onnxruntime as ort  # the real one: the adapter is onnxruntime's flatbuffers format
    except ImportError as e:
        print(f"make_testdata: onnxruntime not importable, {adapter_path} not written ({e})", file=sys.stderr)
        return
    if not hasattr(ort, "AdapterFormat"):
        print(f"make_testdata: {ort.__name__} has no AdapterFormat, {adapter_path} not written", file=sys.stderr)
        return
    fmt = ort.AdapterFormat()
    fmt.set_adapter_version(1)
    fmt.set_model_version(1)
    fmt.set_parameters({
        "lora_param_a": ort.OrtValue.ortvalue_from_numpy(np.array([3, 4, 5, 6], np.float32).reshape(4, 1)),
        "lora_param_b": ort.OrtValue.ortvalue_from_numpy(np.array([7, 8, 9, 10], np.float32).reshape(1, 4)),
    })
    fmt.export_adapter(adapter_path)


def cuda_only(out: str) -> None:
    # Loaded only when CUDAExecutionProvider is available; built so the names exist.
    # identity_9799.onnx: input float [seq, 16, 7, 5, 3, 3] -> Identity -> output
    g = helper.make_graph([helper.make_node("Identity", ["input"], ["output"])], "identity_9799",
                          [_vi("input", TensorProto.FLOAT, ["seq", 16, 7, 5, 3, 3])],
                          [_vi("output", TensorProto.FLOAT, ["seq", 16, 7, 5, 3, 3])])
    _save(_model(g), out, "identity_9799.onnx")
    # issue4829.onnx: feed "shape" int64[2] -> ConstantOfShape -> Add 1 -> "output"
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one")
    g = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["zeros"],
                          value=numpy_helper.from_array(np.array([0.0], np.float32))),
         helper.make_node("Add", ["zeros", "one"], ["output"])],
        "issue4829", [_vi("shape", TensorProto.INT64, [2])], [_vi("output", TensorProto.FLOAT, ["a", "b"])], [one])
    _save(_model(g), out, "issue4829.onnx")


def model_meta(models_dir: str) -> None:
    # test_model_meta reads ../models/opset8/test_squeezenet/model.onnx (relative to the working
    # folder) and returns early when it is absent. What it checks is metadata only: producer_name
    # "onnx-caffe2", graph name "squeezenet_old", empty domain, doc_string and graph doc_string.
    # A one-node stand-in carries exactly that (it is not SqueezeNet).
    g = helper.make_graph([helper.make_node("Relu", ["data_0"], ["softmaxout_1"])], "squeezenet_old",
                          [_vi("data_0", TensorProto.FLOAT, [1, 3, 224, 224])],
                          [_vi("softmaxout_1", TensorProto.FLOAT, [1, 3, 224, 224])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], producer_name="onnx-caffe2")
    m.ir_version = 3
    _save(m, models_dir, "opset8/test_squeezenet/model.onnx")


def make_all(out: str, models_dir: str | None = None) -> list[str]:
    os.makedirs(out, exist_ok=True)
    mul_1(out)
    matmul(out, "matmul_1.onnx", 3)
    matmul(out, "matmul_2.onnx", "None")
    identity_string(out)
    identity_opt(out)
    logicaland(out)
    sequences(out)
    abs_free_dimensions(out)
    ort_config(out)
    external_initializer_come_from_user(out)
    mnist(out)
    model_with_orig_ext_data(out)
    add_mul_add(out)
    lora(out)
    cuda_only(out)
    if models_dir:
        model_meta(models_dir)
    written = []
    for root, _, files in os.walk(out):
        written += [os.path.relpath(os.path.join(root, f), out) for f in files]
    return sorted(written)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the testdata folder to write")
    ap.add_argument("--models-dir", help="also write opset8/test_squeezenet/model.onnx here (test_model_meta "
                                         "reads it from ../models relative to the working folder)")
    a = ap.parse_args()
    for f in make_all(a.out, a.models_dir):
        print(f)
