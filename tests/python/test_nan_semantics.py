"""NaN, infinities, signed zeros, denormals and extreme values through every float element-wise kernel sdx
implements, through the fused forms the optimizer (sdx.Linear, sdx.FusedConv, sdx.GatedLinearUnit) and the
kernel JIT make of them, and integer division faults; against onnx.reference.ReferenceEvaluator.

Comparison: NaN positions must match exactly (a NaN turned into a number, or a number turned into NaN,
fails); infinities must match exactly (value and sign); finite values exactly for the ops IEEE 754 fixes
(+ - * /, sqrt, comparisons, clamps, rounding, sign changes) and within a relative tolerance plus an
absolute one of 2**-126 (the smallest normal float) for the libm / vector-math ones. Signed zeros are
not compared (numpy itself gives maximum(-0, 0) = +0 but maximum(0, -0) = -0).

Denormals: sdx never sets FTZ/DAZ (it runs under the default MXCSR everywhere, oneDNN and OpenBLAS
included), so denormal inputs are numbers like any other and denormal results are kept, as numpy keeps
them: the exact ops are compared exactly on denormals too, and test_denormals_are_not_flushed checks it
after oneDNN has run in the process.

The unary ops also run in float64 and float16 (float16 values compare loosely: the reference rounds every
step of a function body to float16, sdx computes in float and rounds once).

Every session runs 3 times (the first run slot by slot, then capture and replay); each run is compared
with the reference and the runs must agree bit for bit.

ThresholdedRelu and Shrink give 0 for NaN: their ONNX definitions select a constant when a comparison
fails (np.where(x > alpha, x, 0)), and the reference gives 0 too.
"""
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import sdx

# The reference (numpy) warns about the overflows and invalid operations these inputs are made of.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RUNS = 3
TINY = np.float32(2.0 ** -126)

_SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.4e-45, -1.4e-45, 1e-40, -1e-40, 1.1754944e-38,
            -1.1754944e-38, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 3.0, -3.0, 6.0,
            -6.0, 10.5, -10.5, 88.5, -88.5, 100.0, -104.0, 1e10, -1e10, 1e30, -1e30, 3.4028235e38, -3.4028235e38]


def special(dtype=np.float32):
    """The special values, each at five positions (every vector lane and the tails see a NaN)."""
    v = np.array(_SPECIAL, dtype=dtype)
    return np.stack([np.roll(v, 7 * k) for k in range(5)])  # [5, 40]


def pairs(dtype=np.float32):
    """Every (a, b) pair of special values: two [40, 40] grids."""
    v = np.array(_SPECIAL, dtype=dtype)
    return np.repeat(v, v.size).reshape(v.size, v.size), np.tile(v, v.size).reshape(v.size, v.size)


_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.float16): TensorProto.FLOAT16,
         np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int16): TensorProto.INT16,
         np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.uint16): TensorProto.UINT16,
         np.dtype(np.uint32): TensorProto.UINT32, np.dtype(np.uint64): TensorProto.UINT64,
         np.dtype(np.bool_): TensorProto.BOOL}


def one_node(op, feeds, attrs=None, opset=21, out_dtype=None, inits=(), name=None):
    """A one-node model: `feeds` (name -> array) graph inputs, `inits` (name, array) initializers."""
    names = list(feeds) + [n for n, _ in inits]
    first = next(iter(feeds.values())) if feeds else inits[0][1]
    out_elem = _ELEM[np.dtype(out_dtype or first.dtype)]
    node = helper.make_node(op, names, ["y"], name=name or f"{op.lower()}0", **(attrs or {}))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, _ELEM[a.dtype], list(a.shape)) for n, a in feeds.items()],
                          [helper.make_tensor_value_info("y", out_elem, None)],
                          initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def reference(model, feeds):
    return ReferenceEvaluator(model).run(None, feeds)


def _where(inputs, idx):
    """The inputs at the first few failing elements (inputs flattened in the output's shape)."""
    return "; ".join(f"inputs {[float(a[i]) for a in inputs]}" for i in idx[:5])


def assert_matches(got, want, what, inputs=(), exact=False, rtol=1e-5, atol=TINY):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs reference {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs reference {want.dtype}"
    flat_in = []  # inputs aligned with the output, to name the failing elements (element-wise ops only)
    for a in inputs:
        try:
            flat_in.append(np.broadcast_to(np.asarray(a), want.shape).reshape(-1))
        except ValueError:
            pass
    g, w = got.reshape(-1), want.reshape(-1)
    if w.dtype == np.bool_:
        bad = np.flatnonzero(g != w)
        assert not bad.size, f"{what}: differs at {bad[:10]}: got {g[bad[:5]]}, want {w[bad[:5]]}; {_where(flat_in, bad)}"
        return
    gn, wn = np.isnan(g), np.isnan(w)
    bad = np.flatnonzero(gn != wn)
    assert not bad.size, (f"{what}: NaN positions differ at {bad[:10]} ({bad.size} elements): got {g[bad[:5]]}, "
                          f"want {w[bad[:5]]}; {_where(flat_in, bad)}")
    m = ~wn
    g, w = g[m], w[m]
    atol = np.broadcast_to(np.asarray(atol, np.float64), want.shape).reshape(-1)[m]
    fi = [a[m] for a in flat_in]
    inf = np.isinf(w) | np.isinf(g)
    bad = np.flatnonzero(inf & (g != w))
    assert not bad.size, f"{what}: infinities differ: got {g[bad[:5]]}, want {w[bad[:5]]}; {_where(fi, bad)}"
    fin = ~inf
    if exact:
        bad = np.flatnonzero(fin & (g != w))
    else:
        err = np.abs(g.astype(np.float64) - w.astype(np.float64))
        bad = np.flatnonzero(fin & (err > atol + rtol * np.abs(w.astype(np.float64))))
    assert not bad.size, f"{what}: values differ: got {g[bad[:5]]}, want {w[bad[:5]]}; {_where(fi, bad)}"


def run_and_compare(model, feeds, what, exact=False, rtol=1e-5, atol=TINY, options=None):
    """Runs the model RUNS times in one session, each run against the reference; the runs agree bitwise."""
    want = reference(model, feeds)
    sess = sdx.InferenceSession(model.SerializeToString(), options)
    first = None
    for r in range(RUNS):
        got = sess.run(None, feeds)
        for k, (gk, wk) in enumerate(zip(got, want)):
            assert_matches(gk, wk, f"{what} run {r + 1} output {k}", list(feeds.values()), exact, rtol, atol)
        if first is None:
            first = [np.array(x, copy=True) for x in got]
        else:
            for a, b in zip(first, got):
                assert a.tobytes() == np.asarray(b).tobytes(), f"{what}: run {r + 1} differs from run 1"
    return sess


# ---- Element-wise ops ---------------------------------------------------------------------------------

# (id, op, attrs, opset, exact, rtol)
UNARY = [
    ("Abs", "Abs", {}, 21, True, 0), ("Neg", "Neg", {}, 21, True, 0), ("Floor", "Floor", {}, 21, True, 0),
    ("Ceil", "Ceil", {}, 21, True, 0), ("Round", "Round", {}, 22, True, 0), ("Sign", "Sign", {}, 21, True, 0),
    ("Sqrt", "Sqrt", {}, 21, True, 0), ("Reciprocal", "Reciprocal", {}, 21, True, 0),
    ("Relu", "Relu", {}, 21, True, 0), ("LeakyRelu", "LeakyRelu", {}, 22, True, 0),
    ("LeakyRelu-0.3", "LeakyRelu", {"alpha": 0.3}, 22, True, 0),
    ("LeakyRelu-0", "LeakyRelu", {"alpha": 0.0}, 22, True, 0),
    ("ThresholdedRelu", "ThresholdedRelu", {"alpha": 1.5}, 22, True, 0),
    ("Shrink", "Shrink", {"bias": 0.5, "lambd": 1.0}, 21, False, 1e-6),
    ("Exp", "Exp", {}, 21, False, 1e-5), ("Log", "Log", {}, 21, False, 1e-5), ("Erf", "Erf", {}, 21, False, 1e-5),
    ("Sin", "Sin", {}, 22, False, 1e-5), ("Cos", "Cos", {}, 22, False, 1e-5), ("Tan", "Tan", {}, 22, False, 1e-5),
    ("Asin", "Asin", {}, 22, False, 1e-5), ("Acos", "Acos", {}, 22, False, 1e-5), ("Atan", "Atan", {}, 22, False, 1e-5),
    ("Sinh", "Sinh", {}, 22, False, 1e-5), ("Cosh", "Cosh", {}, 22, False, 1e-5), ("Asinh", "Asinh", {}, 22, False, 1e-5),
    ("Acosh", "Acosh", {}, 22, False, 1e-5), ("Atanh", "Atanh", {}, 22, False, 1e-5),
    ("Elu", "Elu", {"alpha": 0.7}, 22, False, 1e-5), ("Selu", "Selu", {}, 22, False, 1e-5),
    ("Celu", "Celu", {"alpha": 1.3}, 12, False, 1e-5), ("Sigmoid", "Sigmoid", {}, 21, False, 1e-5),
    ("HardSigmoid", "HardSigmoid", {"alpha": 0.25, "beta": 0.4}, 22, False, 1e-6),
    ("HardSwish", "HardSwish", {}, 22, False, 1e-5), ("Softplus", "Softplus", {}, 22, False, 1e-5),
    ("Softsign", "Softsign", {}, 22, False, 1e-6), ("Tanh", "Tanh", {}, 21, False, 1e-5),
    ("Gelu", "Gelu", {}, 20, False, 1e-5), ("Gelu-tanh", "Gelu", {"approximate": "tanh"}, 20, False, 1e-5),
    ("Mish", "Mish", {}, 22, False, 1e-5), ("Swish", "Swish", {}, 24, False, 1e-5),
    ("Swish-1.7", "Swish", {"alpha": 1.7}, 24, False, 1e-5),
]


# Absolute error allowed on top of rtol where the ONNX formula cancels (1 + erf(x) for x << 0 and the
# like): about one float ulp of 1 times |x|, as vec_math_test.cc bounds the vector math.
def _atol_for(op_id, x):
    if op_id.startswith(("Gelu", "Swish", "Mish", "HardSwish", "Elu", "Selu", "Celu", "Softplus", "Sigmoid")):
        with np.errstate(all="ignore"):
            return np.where(np.isfinite(x), TINY + np.abs(x.astype(np.float64)) * 2.0 ** -22, TINY)
    return TINY


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("op_id,op,attrs,opset,exact,rtol", UNARY, ids=[u[0] for u in UNARY])
def test_unary(op_id, op, attrs, opset, exact, rtol, dtype):
    with np.errstate(all="ignore"):
        x = special(dtype)  # float16: 1e10 and beyond are inf, 1e-30 and below 0
    model = one_node(op, {"x": x}, attrs, opset)
    if dtype == np.float16:
        # The reference rounds every step (and the attributes) to float16; sdx computes in float and rounds
        # once: the values compare loosely, NaN and infinities exactly as everywhere.
        exact, rtol, atol = False, 3e-2, 1e-3
    else:
        atol = _atol_for(op_id, x)
    with np.errstate(all="ignore"):
        run_and_compare(model, {"x": x}, f"{op_id} {np.dtype(dtype).name}", exact=exact, rtol=rtol, atol=atol)


def test_predicates():
    x = special()
    for op, attrs in (("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}), ("IsInf", {"detect_positive": 0})):
        model = one_node(op, {"x": x}, attrs, 20, out_dtype=np.bool_)
        run_and_compare(model, {"x": x}, f"{op} {attrs}", exact=True)


# (id, op, attrs, opset, exact, rtol)
BINARY = [
    ("Add", "Add", {}, 14, True, 0), ("Sub", "Sub", {}, 14, True, 0), ("Mul", "Mul", {}, 14, True, 0),
    ("Div", "Div", {}, 14, True, 0), ("Max", "Max", {}, 13, True, 0), ("Min", "Min", {}, 13, True, 0),
    ("Sum", "Sum", {}, 13, True, 0), ("Mean", "Mean", {}, 13, True, 0), ("PRelu", "PRelu", {}, 16, True, 0),
    ("Mod-fmod", "Mod", {"fmod": 1}, 13, True, 0), ("Mod", "Mod", {"fmod": 0}, 13, False, 1e-6),
    ("Pow", "Pow", {}, 15, False, 1e-5), ("SwiGLU", "SwiGLU", {"alpha": 1.5}, 28, False, 1e-5),
]


@pytest.mark.parametrize("op_id,op,attrs,opset,exact,rtol", BINARY, ids=[b[0] for b in BINARY])
def test_binary(op_id, op, attrs, opset, exact, rtol):
    a, b = pairs()
    feeds = {"a": a, "b": b}
    with np.errstate(all="ignore"):
        run_and_compare(one_node(op, feeds, attrs, opset), feeds, op_id, exact=exact, rtol=rtol)
        # One operand broadcast from a single element (the kernels' scalar loops), on either side.
        for s in (np.nan, -np.inf, 0.0, 1e-40, -2.5):
            one = np.array([s], np.float32)
            # PRelu's slope broadcasts to X, not the other way; the reference's Sum / Mean accumulate into
            # their first input, so it must have the output's shape.
            if op == "SwiGLU":  # no broadcasting
                break
            for feeds in [{"a": a, "b": one}] + ([] if op in ("PRelu", "Sum", "Mean") else [{"a": one, "b": b}]):
                run_and_compare(one_node(op, feeds, attrs, opset), feeds, f"{op_id} with {s} broadcast", exact=exact,
                                rtol=rtol)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons(op):
    a, b = pairs()
    feeds = {"a": a, "b": b}
    run_and_compare(one_node(op, feeds, {}, 16, out_dtype=np.bool_), feeds, op, exact=True)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_three_inputs(op):
    a, b = pairs()
    c = np.roll(a, 3, axis=1)
    feeds = {"a": a, "b": b, "c": c}
    with np.errstate(all="ignore"):
        run_and_compare(one_node(op, feeds, {}, 13), feeds, f"{op} of 3", exact=op != "Mean", rtol=1e-6)


CLIP_BOUNDS = [(-1.0, 1.0), (0.0, 6.0), (0.0, None), (None, 6.0), (None, None), (np.nan, 1.0), (0.0, np.nan),
               (-np.inf, np.inf), (1e-40, 1e30)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("lo,hi", CLIP_BOUNDS, ids=[f"{lo}-{hi}" for lo, hi in CLIP_BOUNDS])
def test_clip(lo, hi, dtype):
    x = special(dtype)
    feeds = {"x": x}
    if lo is not None:
        feeds["lo"] = np.array(lo, dtype)
    if hi is not None:
        feeds["hi"] = np.array(hi, dtype)
    names = ["x", "lo" if lo is not None else "", "hi" if hi is not None else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Clip", names, ["y"], name="clip0")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, _ELEM[np.dtype(dtype)], list(a.shape))
                                        for n, a in feeds.items()],
                          [helper.make_tensor_value_info("y", _ELEM[np.dtype(dtype)], None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 10
    run_and_compare(model, feeds, f"Clip({lo}, {hi})", exact=True)


def test_clip_before_opset_11_attributes():
    x = special()
    model = one_node("Clip", {"x": x}, {"min": -1.0, "max": 6.0}, 6)
    run_and_compare(model, {"x": x}, "Clip-6", exact=True)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_min_max(op, axis, keepdims):
    x = special()  # every row has NaN; add rows without, with infinities only, and all NaN
    extra = np.array([[1.0, -2.0, 3.0, 1e-40] * 10, [np.inf, -np.inf, 0.0, -0.0] * 10, [np.nan] * 40], np.float32)
    x = np.concatenate([x, extra, np.abs(x[:2]).clip(0, 10)])  # the last rows: NaN kept (clip passes NaN)
    feeds = {"x": x}
    model = one_node(op, feeds, {"keepdims": keepdims}, 18, inits=[("axes", np.array([axis], np.int64))])
    run_and_compare(model, feeds, f"{op} axis {axis} keepdims {keepdims}", exact=True)


# ---- Every float element-wise op of onnx.defs is covered or skipped for a stated reason -----------------

TESTED = {u[1] for u in UNARY} | {b[1] for b in BINARY} | {"IsNaN", "IsInf", "Clip", "ReduceMax", "ReduceMin", "Equal",
                                                           "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}
NOT_ELEMENTWISE_OR_NOT_FLOAT = {
    # one float input and output of the same type, but not element-wise (or not float math)
    "Identity", "Flatten", "Transpose", "Softmax", "LogSoftmax", "Hardmax", "LpNormalization", "GlobalAveragePool",
    "GlobalMaxPool", "GlobalLpPool", "MeanVarianceNormalization", "Squeeze", "Unsqueeze", "Dropout", "Size", "Shape",
    "NonZero", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMean", "ReduceProd", "ReduceSum",
    "ReduceSumSquare", "Det", "CumSum", "Expand", "Reshape", "Tile", "Trilu", "Compress", "DepthToSpace",
    "SpaceToDepth", "LRN", "AveragePool", "MaxPool", "LpPool", "RandomNormalLike", "RandomUniformLike",
    "Bernoulli", "Multinomial", "Cast", "CastLike", "Not", "BitwiseNot", "OptionalHasElement", "OptionalGetElement",
    "Optional", "SequenceLength", "EyeLike", "Slice", "ArgMax", "ArgMin", "TopK", "Pad", "ReverseSequence",
    "Upsample", "Resize", "Gather", "Unique", "Concat", "Split", "ConcatFromSequence", "SplitToSequence",
    "ImageDecoder", "RegexFullMatch", "StringConcat", "StringNormalizer", "StringSplit", "BlackmanWindow",
    "HammingWindow", "HannWindow", "DFT", "STFT", "MelWeightMatrix", "Range", "Constant", "ConstantOfShape",
    "Einsum", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "And", "Or", "Xor", "Where", "Swap",
    "MaxRoiPool", "Scan", "TensorScatter", "GroupNormalization", "InstanceNormalization",
    # products: their NaN semantics are the fused tests' (MatMul / Gemm -> sdx.Linear, Conv -> sdx.FusedConv)
    "MatMul", "Gemm", "Conv", "ConvTranspose",
}


def test_every_float_elementwise_schema_is_covered():
    """Ops of the default domain with one float input (and up to one more float input) whose output has the
    input's type: each is tested above, or listed as not element-wise."""
    missing = []
    for s in onnx.defs.get_all_schemas():
        if s.domain != "" or s.deprecated or s.name in TESTED or s.name in NOT_ELEMENTWISE_OR_NOT_FLOAT:
            continue
        if not (1 <= len(s.inputs) <= 3) or len(s.outputs) != 1:
            continue
        t = s.inputs[0].type_str
        if s.outputs[0].type_str != t:
            continue
        allowed = next((c.allowed_type_strs for c in s.type_constraints if c.type_param_str == t), [])
        if "tensor(float)" in allowed and all(i.type_str == t for i in s.inputs if i.option != i.option.Optional):
            missing.append(s.name)
    assert not missing, f"float element-wise ONNX ops neither tested nor listed as skipped: {sorted(missing)}"


def test_denormals_are_not_flushed():
    """A denormal stays a denormal through the exact ops, also after oneDNN (conv) ran in this process."""
    conv_model = _conv_model([16, 3, 3, 3], {"pads": [1, 1, 1, 1]}, "Relu")
    sdx.InferenceSession(conv_model.SerializeToString()).run(None, {"x": np.ones((1, 3, 8, 8), np.float32)})
    d = np.array([1e-40, -1e-40, 1.4e-45, 1.1e-38], np.float32)
    for op, feeds, want in (("Relu", {"x": d}, np.maximum(d, 0)), ("Abs", {"x": d}, np.abs(d)),
                            ("Mul", {"a": np.full(4, 1e-20, np.float32), "b": np.full(4, 1e-20, np.float32)},
                             np.full(4, np.float32(1e-20) * np.float32(1e-20))),
                            ("Add", {"a": d, "b": np.zeros(4, np.float32)}, d)):
        for _ in range(RUNS):
            (got,) = sdx.InferenceSession(one_node(op, feeds).SerializeToString()).run(None, feeds)
            assert got.tobytes() == want.astype(np.float32).tobytes(), (op, got, want)
    assert np.float32(1e-20) * np.float32(1e-20) != 0  # numpy keeps them too


# ---- Integer division faults --------------------------------------------------------------------------

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=[np.dtype(t).name for t in INT_TYPES])
@pytest.mark.parametrize("op", ["Div", "Mod"])
def test_integer_division_by_zero_is_an_error(op, dtype):
    a = np.arange(1, 41, dtype=dtype).reshape(2, 20)
    b = np.full((2, 20), 3, dtype)
    sess = sdx.InferenceSession(one_node(op, {"a": a, "b": b}, name="divider").SerializeToString())
    want = a // b if op == "Div" else a % b
    for _ in range(RUNS):  # warmup, capture, replay: fine values
        (y,) = sess.run(None, {"a": a, "b": b})
        assert np.array_equal(y, want)
    for pos in (0, 7, 16, 39):
        bz = b.copy()
        bz.reshape(-1)[pos] = 0
        for _ in range(2):
            with pytest.raises(sdx.SdxError) as e:
                sess.run(None, {"a": a, "b": bz})
            msg = str(e.value)
            assert "node 'divider'" in msg and f"({op})" in msg, msg
            what = "division" if op == "Div" else "modulo"
            assert f"integer {what} by zero ({np.dtype(dtype).name})" in msg, msg
            assert isinstance(e.value, sdx.InvalidArgument)
    (y,) = sess.run(None, {"a": a, "b": b})  # the session carries on
    assert np.array_equal(y, want)
    # A zero on the very first run (the slot-by-slot warmup) and with a broadcast divisor.
    fresh = sdx.InferenceSession(one_node(op, {"a": a, "b": np.zeros(1, dtype)}, name="divider").SerializeToString())
    for _ in range(RUNS):
        with pytest.raises(sdx.SdxError, match="by zero"):
            fresh.run(None, {"a": a, "b": np.zeros(1, dtype)})


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64], ids=["int8", "int16", "int32", "int64"])
def test_integer_min_divided_by_minus_one_is_an_error(dtype):
    lo = np.iinfo(dtype).min
    a = np.array([lo, lo, 5, -7], dtype)
    b = np.array([1, 2, -1, 2], dtype)
    sess = sdx.InferenceSession(one_node("Div", {"a": a, "b": b}, name="div_min").SerializeToString())
    for _ in range(RUNS):
        (y,) = sess.run(None, {"a": a, "b": b})
        assert np.array_equal(y, np.array([lo, lo // 2, -5, -3], dtype))  # C truncation: -7 / 2 = -3
    bad = np.array([1, -1, 1, 1], dtype)
    for _ in range(RUNS):
        with pytest.raises(sdx.SdxError) as e:
            sess.run(None, {"a": a, "b": bad})
        msg = str(e.value)
        assert "node 'div_min' (Div)" in msg and f"MIN / -1 does not fit in {np.dtype(dtype).name}" in msg, msg
    # MIN mod -1 is 0: no error.
    m = sdx.InferenceSession(one_node("Mod", {"a": a, "b": bad}).SerializeToString())
    for _ in range(RUNS):
        (y,) = m.run(None, {"a": a, "b": bad})
        assert np.array_equal(y, np.zeros(4, dtype)), y


def test_integer_division_by_zero_of_constants_is_not_folded():
    """Constant folding runs the same kernel; when it fails the node stays and fails at run time."""
    a = np.array([6, 7], np.int32)
    node = helper.make_node("Div", ["a", "z"], ["q"], name="const_div")
    add = helper.make_node("Add", ["q", "x"], ["y"], name="add0")
    g = helper.make_graph([node, add], "g", [helper.make_tensor_value_info("x", TensorProto.INT32, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [2])],
                          initializer=[numpy_helper.from_array(a, "a"), numpy_helper.from_array(np.zeros(2, np.int32), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    sess = sdx.InferenceSession(m.SerializeToString())  # loads: the fold is skipped, not an error
    for _ in range(RUNS):
        with pytest.raises(sdx.SdxError, match=r"node 'const_div' \(Div\).*integer division by zero"):
            sess.run(None, {"x": np.ones(2, np.int32)})


# ---- Fused forms ----------------------------------------------------------------------------------------

def _sprinkle(x, seed, big=1e30):
    """x with NaN, +-inf, +-0, denormals and large values at scattered positions (no value that could
    overflow a sum in one order and not another)."""
    rng = np.random.default_rng(seed)
    flat = x.reshape(-1)
    vals = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1.4e-45, big, -big], x.dtype)
    idx = rng.choice(flat.size, size=max(len(vals), flat.size // 50), replace=False)
    flat[idx] = vals[np.arange(idx.size) % len(vals)]
    return x


# (id, ONNX op, attrs, opset, extra Clip bounds)
ACTIVATIONS = [
    ("relu", "Relu", {}, 17, None), ("leaky", "LeakyRelu", {"alpha": 0.1}, 17, None),
    ("leaky0", "LeakyRelu", {"alpha": 0.0}, 17, None), ("sigmoid", "Sigmoid", {}, 17, None),
    ("tanh", "Tanh", {}, 17, None), ("gelu", "Gelu", {}, 20, None), ("gelu_tanh", "Gelu", {"approximate": "tanh"}, 20, None),
    ("hard_sigmoid", "HardSigmoid", {}, 17, None), ("hard_swish", "HardSwish", {}, 17, None),
    ("clip", "Clip", {}, 17, (0.0, 6.0)), ("swish", "Swish", {}, 24, None),
]


def _activation_nodes(act, src, out):
    _, op, attrs, _, bounds = act
    inits = []
    ins = [src]
    if bounds is not None:
        inits = [numpy_helper.from_array(np.array(bounds[0], np.float32), "clip_lo"),
                 numpy_helper.from_array(np.array(bounds[1], np.float32), "clip_hi")]
        ins += ["clip_lo", "clip_hi"]
    return [helper.make_node(op, ins, [out], name="act0", **attrs)], inits


def _linear_model(x_shape, n, act, seed=0):
    rng = np.random.default_rng(seed)
    k = x_shape[-1]
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"], name="mm0"), helper.make_node("Add", ["h0", "b"], ["h1"], name="add0")]
    act_nodes, act_inits = _activation_nodes(act, "h1", "y")
    g = helper.make_graph(nodes + act_nodes, "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")] + act_inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", act[3])])
    m.ir_version = 10
    return m


@pytest.mark.parametrize("x_shape,n", [((4, 64), 48), ((64, 128), 256), ((2, 40, 96), 64)],
                         ids=["small-M", "oneDNN", "batched"])
@pytest.mark.parametrize("act", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_fused_linear(act, x_shape, n):
    model = _linear_model(x_shape, n, act)
    x = _sprinkle(np.random.default_rng(1).standard_normal(x_shape).astype(np.float32), 2)
    # Products summed in other orders (BLAS / oneDNN / the small-M kernel against numpy): 1e-4 of the sums'
    # magnitude (O(1) here), then the activation.
    sess = run_and_compare(model, {"x": x}, f"MatMul+Add+{act[1]} {x_shape}", rtol=1e-4, atol=1e-4)
    ops = sess.optimization_report()["ops_after"]
    assert ops.get("sdx.Linear") == 1 and "MatMul" not in ops and act[1] not in ops, ops


def _conv_model(w_shape, attrs, act_op, seed=0, act=None, bias=True):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal(w_shape) * 0.3).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if bias else [])
    nodes = [helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"], name="conv0", **attrs)]
    act = act or next(a for a in ACTIVATIONS if a[1] == act_op)
    act_nodes, act_inits = _activation_nodes(act, "c", "y")
    g = helper.make_graph(nodes + act_nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits + act_inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", max(17, act[3]))])
    m.ir_version = 10
    return m


CONV_CASES = [
    # (id, X shape, W shape, attrs): direct kernels (3 input channels, strides, 1x1) and one 3x3 stride-1
    # case with 16-channel multiples (oneDNN's Winograd kernels take it, see test_fused_conv_winograd).
    ("3x3-from-3", (1, 3, 20, 20), (16, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ("5x5-stride2", (2, 8, 17, 15), (24, 8, 5, 5), {"pads": [2, 1, 2, 1], "strides": [2, 2]}),
    ("1x1", (1, 24, 9, 9), (40, 24, 1, 1), {}),
    ("depthwise", (1, 32, 10, 10), (32, 1, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}),
]
CONV_ACTS = [a for a in ACTIVATIONS if a[0] in ("relu", "clip", "leaky", "hard_sigmoid", "sigmoid", "hard_swish")]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
@pytest.mark.parametrize("act", CONV_ACTS, ids=[a[0] for a in CONV_ACTS])
def test_fused_conv(act, case):
    _, x_shape, w_shape, attrs = case
    model = _conv_model(w_shape, attrs, act[1], act=act)
    x = _sprinkle(np.random.default_rng(3).standard_normal(x_shape).astype(np.float32), 4, big=1e20)
    sess = run_and_compare(model, {"x": x}, f"Conv+bias+{act[1]} {case[0]}", rtol=1e-4, atol=1e-4)
    ops = sess.optimization_report()["ops_after"]
    assert ops.get("sdx.FusedConv") == 1 and "Conv" not in ops and act[1] not in ops, ops


@pytest.mark.parametrize("act", CONV_ACTS, ids=[a[0] for a in CONV_ACTS])
def test_fused_conv_winograd(act):
    """3x3 stride 1, 16-channel multiples: oneDNN's Winograd kernels. NaN inputs give NaN exactly where the
    reference has it. An infinite input may make NaN where the reference convolution has +-inf (the
    Winograd transforms add and subtract the infinite products: inf - inf), so there (only there) the
    activation of NaN may stand for the reference's activation of +-inf; a NaN is never turned into a
    number, and elsewhere the values match."""
    model = _conv_model((16, 16, 3, 3), {"pads": [1, 1, 1, 1]}, act[1], act=act)
    x = np.random.default_rng(5).standard_normal((1, 16, 12, 12)).astype(np.float32)
    x.reshape(-1)[::97] = np.nan
    run_and_compare(model, {"x": x}, f"Winograd Conv+{act[1]}, NaN inputs", rtol=1e-4, atol=1e-4)
    x.reshape(-1)[5::97] = np.inf
    want = reference(model, {"x": x})[0]
    conv_only = _conv_model((16, 16, 3, 3), {"pads": [1, 1, 1, 1]}, "Relu", act=("none", "Identity", {}, 17, None))
    infinite = np.isinf(reference(conv_only, {"x": x})[0])  # where inf - inf may happen
    sess = sdx.InferenceSession(model.SerializeToString())
    for _ in range(RUNS):
        (got,) = sess.run(None, {"x": x})
        assert not np.any(np.isnan(want) & ~np.isnan(got)), "a NaN became a number"
        ok = ~infinite | ~np.isnan(got)  # outside the infinite sums: exactly the reference's NaN pattern
        assert_matches(np.where(ok, got, want), want, f"Winograd Conv+{act[1]}, inf inputs", rtol=1e-4, atol=1e-4)
        assert np.array_equal(np.isnan(got) & ~infinite, np.isnan(want) & ~infinite)


GLU_GATES = [("relu", "Relu", {}, 17), ("sigmoid", "Sigmoid", {}, 17), ("gelu", "Gelu", {}, 20), ("swish", "Swish", {}, 24)]


@pytest.mark.parametrize("gate", GLU_GATES, ids=[g[0] for g in GLU_GATES])
def test_fused_gated_linear_unit(gate):
    _, op, attrs, opset = gate
    shape = [4, 64]
    nodes = [helper.make_node(op, ["a"], ["g"], name="gate0", **attrs), helper.make_node("Mul", ["g", "b"], ["y"], name="mul0")]
    g = helper.make_graph(nodes, "glu", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("a", "b")],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    rng = np.random.default_rng(6)
    feeds = {"a": _sprinkle(rng.standard_normal(shape).astype(np.float32), 7),
             "b": _sprinkle(rng.standard_normal(shape).astype(np.float32), 8)}
    with np.errstate(all="ignore"):
        sess = run_and_compare(m, feeds, f"Mul({op}(a), b)", rtol=1e-5, atol=1e-6)
    ops = sess.optimization_report()["ops_after"]
    assert ops.get("sdx.GatedLinearUnit") == 1, ops


def _jit_chain(width=64):
    """An element-wise chain of the JIT's ops (Relu, LeakyRelu, Max, Min, ...), with NaN-producing steps."""
    # (No Mul right after Relu: Mul(Relu(a), c) is a gated linear unit, which the optimizer fuses first.)
    cycle = ("Add", "Relu", "Max", "Mul", "Sub", "LeakyRelu", "Min", "Neg", "Abs", "Sqrt", "Div", "Floor", "Log",
             "Reciprocal", "Ceil", "Relu")
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i, op in enumerate(cycle * 2):
        out = "y" if i == 2 * len(cycle) - 1 else f"t{i}"
        ins, attrs = [prev], {}
        if op in ("Add", "Mul", "Sub", "Max", "Min", "Div"):
            c = rng.uniform(-1.0, 1.0, width).astype(np.float32)
            c[::9] = [np.nan, np.inf, 0.0, -np.inf, 1e-40, -0.0, 2.0, -3.0][: len(c[::9])]
            inits.append(numpy_helper.from_array(c, f"c{i}"))
            ins.append(f"c{i}")
        if op == "LeakyRelu":
            attrs = {"alpha": 0.2}
        nodes.append(helper.make_node(op, ins, [out], name=f"n{i}", **attrs))
        prev = out
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, width])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, len(nodes)


@pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")), reason="no C++ compiler")
def test_jit_fused_chain(tmp_path):
    model, steps = _jit_chain()
    x = special()[:2].reshape(2, 40)
    x = np.concatenate([x, x[:, :24]], axis=1)  # [2, 64]
    feeds = {"x": x}
    opts = sdx.SessionOptions()
    opts.jit_cache_dir = str(tmp_path)
    plain_opts = sdx.SessionOptions()
    plain_opts.jit_enabled = False
    plain_opts.jit_cache_dir = str(tmp_path)
    want = reference(model, feeds)[0]
    with np.errstate(all="ignore"):
        plain = run_and_compare(model, feeds, "chain, JIT off", exact=False, rtol=1e-6, options=plain_opts)
        (unfused,) = plain.run(None, feeds)
        jit = sdx.InferenceSession(model.SerializeToString(), opts)
        (first,) = jit.run(None, feeds)  # warmup, slot by slot
        assert_matches(first, want, "JIT session, first run", [x], rtol=1e-6)
        jit.run(None, feeds)  # the signature again: freeze (the kernels compile) and capture
        assert jit.wait_for_jit(120)
        # The compiled segments are checked bit for bit against the unfused kernels on a call, then swapped in.
        for r in range(10):
            (got,), rep = jit.run_with_report(None, feeds)
            assert_matches(got, want, f"JIT session run {r + 2}", [x], rtol=1e-6)
            assert got.tobytes() == unfused.tobytes(), f"run {r + 2} differs from the unfused kernels"
            if rep["jit_segments"] and rep["jit_fused_segments"] == rep["jit_segments"]:
                break
        assert rep["jit_segments"] >= 1 and rep["jit_fused_segments"] == rep["jit_segments"], rep
        assert rep["jit_fused_steps"] == steps, rep
        for r in range(RUNS):  # replays on the fused kernels
            (got,), rep = jit.run_with_report(None, feeds)
            assert rep["jit_fused_segments"] == rep["jit_segments"], rep
            assert_matches(got, want, f"JIT fused replay {r + 1}", [x], rtol=1e-6)
            assert got.tobytes() == unfused.tobytes(), "the fused kernels differ from the unfused kernels"
    assert np.isnan(want).any() and np.isinf(want).any()
