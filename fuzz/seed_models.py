"""Seed models for the structural fuzzer and the empty-input sweep, built with onnx.helper.

Synthetic seeds (always present, small, every input shape fixed or with symbolic dims the harness sets
to 1) cover the op families whose loaders, verifiers and kernels take optional inputs, attributes and
subgraphs: a CNN, a transformer block (the attention fusion pattern), a GPT decode step, an MLP, RNNs,
If / Loop / Scan, a shape-manipulation chain, quantized QLinear ops, Resize/Pad/Clip with optional
inputs, sequences and optionals, and a mixed-dtype graph. The transformer, decoder and residual CNN
come from tests/python/models.py (and the MLP from bench/models.py) at a small size.

Real seeds (`real=True`) are public models already on the machine: the "light" model zoo graphs that
the onnx wheel ships (squeezenet, shufflenet, ...: real topologies whose weights are ConstantOfShape
nodes) and, when found, the rapidocr-onnxruntime OCR models (fuzz/README.md says how to fetch them).
Their symbolic input dims are fixed here to small image sizes so one run stays cheap.

    python3 fuzz/seed_models.py --out /tmp/seeds [--real]     # writes NAME.onnx per seed
    from seed_models import seed_models; models = seed_models(real=False)   # {name: ModelProto}
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_TEST = _load("sdx_fuzz_test_models", os.path.join(ROOT, "tests", "python", "models.py"))

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
vi = helper.make_tensor_value_info


def _init(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def _model(nodes, name, inputs, outputs, inits=(), opset=17, ir_version=8, extra_opsets=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), *extra_opsets], producer_name="sdx-fuzz")
    m.ir_version = ir_version
    # Graph outputs declared without a shape get the one onnx infers (the checker wants a shape there).
    if any(not o.type.tensor_type.HasField("shape") for o in m.graph.output):
        inferred = onnx.shape_inference.infer_shapes(m)
        known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for o in m.graph.output:
            if not o.type.tensor_type.HasField("shape") and o.name in known and known[o.name].type.tensor_type.HasField("shape"):
                o.type.CopyFrom(known[o.name].type)
            elif not o.type.tensor_type.HasField("shape"):
                o.type.tensor_type.shape.SetInParent()  # rank unknown is still "a shape" to the checker
    onnx.checker.check_model(m)
    return m


def small_cnn() -> onnx.ModelProto:
    """Conv/BatchNormalization/Relu/MaxPool/Conv/ConvTranspose/AveragePool/GlobalAveragePool/Flatten/Gemm."""
    r = np.random.default_rng(1)
    w = lambda *s: (r.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = [_init("c1.w", w(4, 3, 3, 3)), _init("c1.b", w(4)), _init("bn.s", np.ones(4, np.float32)),
             _init("bn.b", w(4)), _init("bn.m", w(4)), _init("bn.v", np.ones(4, np.float32)),
             _init("c2.w", w(4, 4, 3, 3)), _init("ct.w", w(4, 4, 2, 2)), _init("fc.w", w(5, 4)), _init("fc.b", w(5))]
    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"], ["bn"], name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2.w"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[1, 1], group=1),
        helper.make_node("ConvTranspose", ["c2", "ct.w"], ["ct"], name="convT", strides=[2, 2]),
        helper.make_node("AveragePool", ["ct"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["ap"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    return _model(nodes, "small_cnn", [vi("x", F, ["N", 3, 8, 8])], [vi("probs", F, ["N", 5])], inits)


def rnn_stack() -> onnx.ModelProto:
    """LSTM (optional sequence_lens / initial_h / initial_c given as "") -> Squeeze -> GRU -> RNN."""
    r = np.random.default_rng(2)
    w = lambda *s: (r.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    h = 3
    inits = [_init("lstm.W", w(1, 4 * h, 4)), _init("lstm.R", w(1, 4 * h, h)), _init("lstm.B", w(1, 8 * h)),
             _init("gru.W", w(1, 3 * h, h)), _init("gru.R", w(1, 3 * h, h)), _init("gru.B", w(1, 6 * h)),
             _init("rnn.W", w(1, h, h)), _init("rnn.R", w(1, h, h)), _init("axes1", np.array([1], np.int64))]
    nodes = [
        helper.make_node("LSTM", ["x", "lstm.W", "lstm.R", "lstm.B", "", "", ""], ["ly", "lh", "lc"], name="lstm",
                         hidden_size=h),
        helper.make_node("Squeeze", ["ly", "axes1"], ["ls"], name="squeeze"),
        helper.make_node("GRU", ["ls", "gru.W", "gru.R", "gru.B", "", "lh"], ["gy", "gh"], name="gru", hidden_size=h,
                         linear_before_reset=1),
        helper.make_node("Squeeze", ["gy", "axes1"], ["gs"], name="squeeze2"),
        helper.make_node("RNN", ["gs", "rnn.W", "rnn.R"], ["ry", "rh"], name="rnn", hidden_size=h,
                         activations=["Tanh"]),
    ]
    return _model(nodes, "rnn_stack", [vi("x", F, [5, 1, 4])],
                  [vi("ry", F, None), vi("rh", F, None), vi("lc", F, None)], inits)


def _branch(name: str, op_nodes: list, out: str) -> onnx.GraphProto:
    return helper.make_graph(op_nodes, name, [], [vi(out, F, None)])


def if_model() -> onnx.ModelProto:
    """If on ReduceSum(x) > 0; both branches read the outer x and a constant; then has a nested If."""
    inner_then = _branch("inner_then", [helper.make_node("Abs", ["x"], ["it"], name="inner_abs")], "it")
    inner_else = _branch("inner_else", [helper.make_node("Neg", ["x"], ["ie"], name="inner_neg")], "ie")
    then_g = helper.make_graph([
        helper.make_node("Relu", ["x"], ["t0"], name="then_relu"),
        helper.make_node("Mul", ["t0", "two"], ["t1"], name="then_mul"),
        helper.make_node("If", ["cond"], ["t2"], name="then_if", then_branch=inner_then, else_branch=inner_else),
        helper.make_node("Add", ["t1", "t2"], ["then_out"], name="then_add"),
    ], "then", [], [vi("then_out", F, None)])
    else_g = helper.make_graph([
        helper.make_node("Neg", ["x"], ["e0"], name="else_neg"),
        helper.make_node("Add", ["e0", "two"], ["else_out"], name="else_add"),
    ], "else", [], [vi("else_out", F, None)])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["cond"], name="greater"),
        helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g),
    ]
    return _model(nodes, "if_model", [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                  [_init("zero", np.float32(0)), _init("two", np.float32(2))])


def loop_model() -> onnx.ModelProto:
    """Loop with a trip count and a condition, one carried value and one scan output; the body holds an If
    and reads the outer-scope "five"."""
    then_g = _branch("body_then", [helper.make_node("Add", ["v", "one"], ["bt"], name="body_then_add")], "bt")
    else_g = _branch("body_else", [helper.make_node("Sub", ["v", "one"], ["be"], name="body_else_sub")], "be")
    body = helper.make_graph([
        # The condition turns false at i = 5, so the loop ends also when the trip count is omitted.
        helper.make_node("Less", ["i", "five"], ["below"], name="body_below"),
        helper.make_node("And", ["cond_in", "below"], ["cond_out"], name="body_cond"),
        helper.make_node("Cast", ["i"], ["i_f"], name="body_cast", to=F),
        helper.make_node("Less", ["i_f", "one"], ["first"], name="body_less"),
        helper.make_node("If", ["first"], ["v1"], name="body_if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Mul", ["v1", "i_f"], ["v_out"], name="body_mul"),
        helper.make_node("Identity", ["v_out"], ["scan_out"], name="body_scan"),
    ], "loop_body", [vi("i", I64, []), vi("cond_in", B, []), vi("v", F, None)],
        [vi("cond_out", B, []), vi("v_out", F, None), vi("scan_out", F, None)])
    nodes = [helper.make_node("Loop", ["trip", "cond", "x"], ["v_final", "scans"], name="loop", body=body)]
    return _model(nodes, "loop_model", [vi("x", F, [2])], [vi("v_final", F, None), vi("scans", F, None)],
                  [_init("trip", np.array(3, np.int64)), _init("cond", np.array(True)), _init("one", np.float32(1)),
                   _init("five", np.array(5, np.int64))])


def scan_model() -> onnx.ModelProto:
    """Scan (opset 16): cumulative sum over axis 0 of xs with a carried state, two scan outputs."""
    body = helper.make_graph([
        helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="scan_add"),
        helper.make_node("Mul", ["s_out", "x_t"], ["y_t"], name="scan_mul"),
        helper.make_node("Identity", ["s_out"], ["z_t"], name="scan_id"),
    ], "scan_body", [vi("s_in", F, [3]), vi("x_t", F, [3])],
        [vi("s_out", F, [3]), vi("y_t", F, [3]), vi("z_t", F, [3])])
    nodes = [helper.make_node("Scan", ["init", "xs"], ["final", "ys", "zs"], name="scan", body=body,
                              num_scan_inputs=1, scan_input_axes=[0], scan_output_axes=[0, 1],
                              scan_output_directions=[0, 1])]
    return _model(nodes, "scan_model", [vi("init", F, [3]), vi("xs", F, [4, 3])],
                  [vi("final", F, [3]), vi("ys", F, None), vi("zs", F, None)], opset=16)


def shape_chain() -> onnx.ModelProto:
    """Shape/Gather/Unsqueeze/Concat/Reshape/Slice/Transpose/Squeeze/Expand/Tile/Split/Concat/ReduceSum."""
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    inits = [_init("idx0", i64(0)), _init("ax0", i64([0])), _init("minus1", i64([-1])),
             _init("st", i64([0, 1])), _init("en", i64([2, 100])), _init("axs", i64([0, 1])), _init("stp", i64([1, 2])),
             _init("exp", i64([2, 1, 1])), _init("reps", i64([1, 2])), _init("split", i64([1, 3])), _init("rax", i64([1]))]
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "idx0"], ["d0"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["d0", "ax0"], ["d0u"], name="unsqueeze"),
        helper.make_node("Concat", ["d0u", "minus1"], ["newshape"], name="concat_shape", axis=0),
        helper.make_node("Reshape", ["x", "newshape"], ["r"], name="reshape"),
        helper.make_node("Slice", ["r", "st", "en", "axs", "stp"], ["sl"], name="slice"),
        helper.make_node("Transpose", ["sl"], ["tr"], name="transpose", perm=[1, 0]),
        helper.make_node("Unsqueeze", ["tr", "ax0"], ["tu"], name="unsqueeze2"),
        helper.make_node("Expand", ["tu", "exp"], ["ex"], name="expand"),
        helper.make_node("ReduceSum", ["ex", "ax0"], ["rs"], name="reducesum", keepdims=0),
        helper.make_node("Tile", ["rs", "reps"], ["ti"], name="tile"),
        helper.make_node("Split", ["ti", "split"], ["sp0", "sp1"], name="split", axis=1),
        helper.make_node("Concat", ["sp1", "sp0"], ["cc"], name="concat", axis=1),
        helper.make_node("Flatten", ["cc"], ["fl"], name="flatten", axis=0),
        helper.make_node("Squeeze", ["fl", "ax0"], ["y"], name="squeeze"),
    ]
    return _model(nodes, "shape_chain", [vi("x", F, [2, 3, 4])], [vi("y", F, None)], inits)


def qlinear() -> onnx.ModelProto:
    """QuantizeLinear -> QLinearConv -> DequantizeLinear -> Flatten -> QuantizeLinear -> QLinearMatMul ->
    DequantizeLinear, plus MatMulInteger and ConvInteger on the quantized input."""
    r = np.random.default_rng(3)
    u8 = lambda *s: r.integers(0, 255, s).astype(np.uint8)  # noqa: E731
    f = lambda v: np.array(v, np.float32)  # noqa: E731
    inits = [_init("xs", f(0.05)), _init("xz", np.uint8(128)), _init("w", u8(2, 3, 3, 3)), _init("ws", f(0.02)),
             _init("wz", np.uint8(120)), _init("ys", f(0.1)), _init("yz", np.uint8(100)), _init("bias", np.array([3, -4], np.int32)),
             _init("m", u8(2, 4)), _init("ms", f(0.03)), _init("mz", np.uint8(128)), _init("os", f(0.2)), _init("oz", np.uint8(128)),
             _init("shape2", np.array([1, 27], np.int64)), _init("mi", u8(27, 2)), _init("ci", u8(1, 3, 2, 2))]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quant_x"),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["cq"], name="qconv"),
        helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["cf"], name="dequant_c"),
        helper.make_node("Flatten", ["cf"], ["flat"], name="flatten", axis=1),
        helper.make_node("QuantizeLinear", ["flat", "ys", "yz"], ["fq"], name="quant_f"),
        helper.make_node("QLinearMatMul", ["fq", "ys", "yz", "m", "ms", "mz", "os", "oz"], ["mq"], name="qmatmul"),
        helper.make_node("DequantizeLinear", ["mq", "os", "oz"], ["y"], name="dequant_y"),
        helper.make_node("Reshape", ["xq", "shape2"], ["xr"], name="reshape"),
        helper.make_node("MatMulInteger", ["xr", "mi", "xz", ""], ["mmi"], name="matmulinteger"),
        helper.make_node("ConvInteger", ["xq", "ci", "xz"], ["cvi"], name="convinteger"),
    ]
    return _model(nodes, "qlinear", [vi("x", F, [1, 3, 3, 3])],
                  [vi("y", F, None), vi("mmi", TensorProto.INT32, None), vi("cvi", TensorProto.INT32, None)], inits)


def resize_pad_clip() -> onnx.ModelProto:
    """Resize (roi "" / scales and sizes forms), Pad (constant value "" / axes), Clip (min ""), TopK,
    CumSum, ArgMax, Where, NonZero, Range."""
    f, i64 = (lambda v: np.array(v, np.float32)), (lambda v: np.array(v, np.int64))
    inits = [_init("scales", f([1, 1, 2, 1.5])), _init("sizes", i64([1, 2, 3, 3])), _init("pads", i64([0, 0, 1, 1, 0, 0, 1, 0])),
             _init("pads2", i64([1, 1])), _init("pax", i64([3])), _init("cmax", f(0.5)), _init("k", i64([2])),
             _init("cax", i64(3)), _init("start", i64(0)), _init("limit", i64(5)), _init("delta", i64(2))]
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["rs"], name="resize_scales", mode="linear"),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["rz"], name="resize_sizes", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Pad", ["rs", "pads", ""], ["pd"], name="pad", mode="reflect"),
        helper.make_node("Pad", ["rz", "pads2", "cmax", "pax"], ["pd2"], name="pad_axes", mode="constant"),
        helper.make_node("Clip", ["pd", "", "cmax"], ["cl"], name="clip"),
        helper.make_node("TopK", ["cl", "k"], ["tv", "ti"], name="topk", axis=-1),
        helper.make_node("CumSum", ["tv", "cax"], ["cs"], name="cumsum", exclusive=1, reverse=1),
        helper.make_node("ArgMax", ["pd2"], ["am"], name="argmax", axis=2, keepdims=0),
        helper.make_node("Greater", ["cs", "cmax"], ["gt"], name="greater"),
        helper.make_node("Where", ["gt", "cs", "tv"], ["wh"], name="where"),
        helper.make_node("NonZero", ["gt"], ["nz"], name="nonzero"),
        helper.make_node("Range", ["start", "limit", "delta"], ["rg"], name="range"),
    ]
    return _model(nodes, "resize_pad_clip", [vi("x", F, [1, 2, 3, 4])],
                  [vi("wh", F, None), vi("am", I64, None), vi("nz", I64, None), vi("rg", I64, None), vi("ti", I64, None)],
                  inits, opset=18)


def sequences_optionals() -> onnx.ModelProto:
    """SplitToSequence/SequenceAt/SequenceInsert/SequenceLength/ConcatFromSequence/SequenceConstruct and
    Optional/OptionalHasElement/OptionalGetElement."""
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["seq"], name="split_to_seq", axis=0, keepdims=1),
        helper.make_node("SequenceAt", ["seq", "one"], ["s1"], name="seq_at"),
        helper.make_node("SequenceInsert", ["seq", "s1", "zero"], ["seq2"], name="seq_insert"),
        helper.make_node("SequenceLength", ["seq2"], ["n"], name="seq_len"),
        helper.make_node("ConcatFromSequence", ["seq2"], ["cat"], name="concat_from_seq", axis=0),
        helper.make_node("SequenceConstruct", ["s1", "s1"], ["seq3"], name="seq_construct"),
        helper.make_node("SequenceErase", ["seq3", ""], ["seq4"], name="seq_erase"),
        helper.make_node("ConcatFromSequence", ["seq4"], ["cat2"], name="concat_from_seq2", axis=1, new_axis=1),
        helper.make_node("Optional", ["s1"], ["opt"], name="optional"),
        helper.make_node("OptionalHasElement", ["opt"], ["has"], name="opt_has"),
        helper.make_node("OptionalGetElement", ["opt"], ["got"], name="opt_get"),
    ]
    return _model(nodes, "sequences_optionals", [vi("x", F, [3, 2])],
                  [vi("cat", F, None), vi("n", I64, None), vi("cat2", F, None), vi("has", B, None), vi("got", F, None)],
                  [_init("one", i64(1)), _init("zero", i64(0))])


def mixed_dtypes() -> onnx.ModelProto:
    """float16 / int32 / int64 / bool / uint8 values: Cast, CastLike, Equal, Not, And, Mod, BitShift, Einsum,
    LayerNormalization, GatherND, ScatterND, OneHot, Trilu."""
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    inits = [_init("g", np.ones(4, np.float32)), _init("b", np.zeros(4, np.float32)), _init("two", np.int32(2)),
             _init("gidx", i64([[0, 1], [2, 3]])), _init("upd", np.array([5.0, 6.0], np.float32)),
             _init("depth", i64(4)), _init("onoff", np.array([0, 1], np.float32)), _init("sh", np.uint8(1)),
             _init("half", np.float16(0.5))]
    nodes = [
        helper.make_node("Cast", ["x"], ["h"], name="to_fp16", to=TensorProto.FLOAT16),
        helper.make_node("Mul", ["h", "half"], ["h2"], name="mul_fp16"),
        helper.make_node("CastLike", ["h2", "g"], ["f"], name="castlike"),
        helper.make_node("LayerNormalization", ["f", "g", "b"], ["ln"], name="layernorm", axis=-1, epsilon=1e-5),
        helper.make_node("Einsum", ["ln", "ln"], ["es"], name="einsum", equation="ij,kj->ik"),
        helper.make_node("Trilu", ["es"], ["tri"], name="trilu", upper=0),
        helper.make_node("Cast", ["x"], ["xi"], name="to_int32", to=TensorProto.INT32),
        helper.make_node("Mod", ["xi", "two"], ["md"], name="mod"),
        helper.make_node("Equal", ["md", "two"], ["eq"], name="equal"),
        helper.make_node("Not", ["eq"], ["ne"], name="not"),
        helper.make_node("And", ["eq", "ne"], ["an"], name="and"),
        helper.make_node("Cast", ["an"], ["au"], name="to_u8", to=TensorProto.UINT8),
        helper.make_node("BitShift", ["au", "sh"], ["bs"], name="bitshift", direction="LEFT"),
        helper.make_node("GatherND", ["x", "gidx"], ["gnd"], name="gathernd"),
        helper.make_node("ScatterND", ["x", "gidx", "upd"], ["snd"], name="scatternd"),
        helper.make_node("ArgMax", ["x"], ["amx"], name="argmax", axis=1, keepdims=0),
        helper.make_node("OneHot", ["amx", "depth", "onoff"], ["oh"], name="onehot", axis=-1),
    ]
    return _model(nodes, "mixed_dtypes", [vi("x", F, [4, 4])],
                  [vi("tri", F, None), vi("bs", TensorProto.UINT8, None), vi("gnd", F, None), vi("snd", F, None),
                   vi("oh", F, None)], inits)


def _bench_mlp() -> onnx.ModelProto:
    bench = _load("sdx_fuzz_bench_models", os.path.join(ROOT, "bench", "models.py"))
    return bench.mlp(layers=2, width=16, in_features=8, out_features=3, batch=2)


SYNTHETIC = {
    "small_cnn": small_cnn,
    "cnn_bn_residual": lambda: _TEST.cnn_bn(stages=(4, 8), image=8, classes=3),
    "transformer_block": lambda: _TEST.transformer_encoder(layers=1, seq=8, hidden=16, heads=2, ffn=32),
    "gpt_decoder_step": lambda: _TEST.gpt_decoder_step(layers=1, past=3, hidden=16, heads=2, ffn=32, max_positions=8),
    "mlp_gemm_relu": _bench_mlp,
    "rnn_stack": rnn_stack,
    "if_model": if_model,
    "loop_model": loop_model,
    "scan_model": scan_model,
    "shape_chain": shape_chain,
    "qlinear": qlinear,
    "resize_pad_clip": resize_pad_clip,
    "sequences_optionals": sequences_optionals,
    "mixed_dtypes": mixed_dtypes,
}

# Public models found on the machine: (name, glob relative to a search root, fixed dims for symbolic ones).
_SITE = [p for p in sys.path if p.endswith("site-packages")]
REAL = [
    ("onnx_light_squeezenet", "onnx/backend/test/data/light/light_squeezenet.onnx", None),
    ("onnx_light_shufflenet", "onnx/backend/test/data/light/light_shufflenet.onnx", None),
    ("onnx_light_inception_v1", "onnx/backend/test/data/light/light_inception_v1.onnx", None),
    ("onnx_light_resnet50", "onnx/backend/test/data/light/light_resnet50.onnx", None),
    ("rapidocr_cls", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", [1, 3, 48, 192]),
    ("rapidocr_det", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", [1, 3, 64, 64]),
    ("rapidocr_rec", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", [1, 3, 48, 160]),
]
REAL_MAX_BYTES = 30 << 20
# Where fuzz/README.md's fetch step unpacks the rapidocr wheel (build/ is ignored by git).
REAL_DIRS = [os.path.join(ROOT, "build", "fuzz-real")]


def _fix_input_dims(model: onnx.ModelProto, dims: list) -> None:
    inits = {t.name for t in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        shape = inp.type.tensor_type.shape
        if len(shape.dim) == len(dims):
            for d, v in zip(shape.dim, dims):
                d.Clear()
                d.dim_value = v


def real_models(dirs: list | None = None) -> dict:
    found = {}
    for name, rel, dims in REAL:
        for root in (dirs or []) + REAL_DIRS + _SITE:
            hits = sorted(glob.glob(os.path.join(root, rel)))
            if hits and os.path.getsize(hits[0]) <= REAL_MAX_BYTES:
                m = onnx.load(hits[0])
                if dims:
                    _fix_input_dims(m, dims)
                m.doc_string = f"sdx fuzz seed from {hits[0]}"
                found[name] = m
                break
    return found


def seed_models(real: bool = False, names: list | None = None, real_dirs: list | None = None) -> dict:
    """{name: ModelProto}: the synthetic seeds, plus the public models found when real=True."""
    models = {n: build() for n, build in SYNTHETIC.items() if not names or n in names}
    if real:
        models.update({n: m for n, m in real_models(real_dirs).items() if not names or n in names})
    return models


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--real", action="store_true", help="also the public models found on this machine")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, m in seed_models(real=args.real).items():
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(m, path)
        print(f"{path}: {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
