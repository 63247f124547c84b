// Schemas of the fused ops the graph optimizer creates (domain "sdx", opset 1).
// Kernels: src/backend/cpu/kernels/fused_*.cc. The epilogue attributes are shared:
// `activation` names the activation applied last and `activation_params` holds its
// parameters (backend/cpu/activation.h lists the names and what each computes).
//
//   sdx.Linear(X [..., K], W [K, N], B [N]?, W_scale [N]?) -> act(X W' + B)       (LinearFusion,
//     QuantizationOptimizations). W' = W of X's type; or, X float32 only: W float16 (widened),
//     W int8 with W_scale float32 [N]: W'[k, n] = W[k, n] * W_scale[n] (W_scale exactly with int8 W).
//   sdx.FusedConv(X, W, B?) -> act(Conv(X, W, B)), Conv's attributes              (ConvEpilogueFusion)
//   sdx.GatedLinearUnit(A, B) -> act(A) * B, numpy broadcasting                   (GatedDeltaNetFusion)
//   sdx.GatedLinearUnit(X, axis) -> act(first half of X) * second half along axis
// (GatedLinearUnit's activation defaults to "silu"; the others' to "none").
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {
namespace {

constexpr const char* kSdx = "sdx";

// GatedLinearUnit: two inputs broadcast like Mul; one input is halved along `axis`.
Status shape_gated_linear_unit(Node& node) {
  if (node.num_inputs() >= 2 && node.input(1)) return shape_broadcast()(node);
  const Dims* x = input_dims(node, 0);
  if (!x || x->empty()) return Status::ok();
  const int64_t rank = static_cast<int64_t>(x->size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    return invalid_argument("axis " + std::to_string(node.attr_int("axis", -1)) + " out of range for " +
                            dims_string(*x));
  Dims out = *x;
  Dim& d = out[static_cast<size_t>(axis)];
  if (d.is_fixed()) {
    if (d.value % 2 != 0) return invalid_argument("dim " + std::to_string(axis) + " of " + dims_string(*x) + " is odd");
    d = Dim::fixed(d.value / 2);
  } else {
    d = Dim{};
  }
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

// Linear: W of X's type, or float16 / int8 (+ W_scale) with X float32; the output has X's type.
Status infer_linear(Node& node) {
  const Value* x = node.input(0);
  const Value* w = node.num_inputs() > 1 ? node.input(1) : nullptr;
  const Value* scale = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if (x && w && x->type().kind == TypeInfo::Kind::kTensor && w->type().kind == TypeInfo::Kind::kTensor) {
    const DType xt = x->type().elem, wt = w->type().elem;
    if (xt != DType::kUndefined && wt != DType::kUndefined && wt != xt) {
      if (xt != DType::kFloat32 || (wt != DType::kFloat16 && wt != DType::kInt8))
        return invalid_argument(std::string("W ") + dtype_name(wt) + " with X " + dtype_name(xt) +
                                ": W must have X's type, or be float16/int8 with X float32");
    }
    if (wt != DType::kUndefined && (wt == DType::kInt8 && xt != DType::kInt8) != (scale != nullptr))
      return invalid_argument("W_scale is required with an int8 W (and X float32), and only then");
  }
  if (scale && scale->type().kind == TypeInfo::Kind::kTensor && scale->type().elem != DType::kUndefined &&
      scale->type().elem != DType::kFloat32)
    return invalid_argument("W_scale must be float32");
  return infer_same_as_input(0)(node);
}

}  // namespace

SDX_OP_SCHEMA_DOMAIN(Linear, kSdx)
    .attrs({{"activation", AttrType::kString}, {"activation_params", AttrType::kFloats}})
    .category(OpCategory::kMatMul)
    .inputs(2, 4)
    .outputs(1, 1)
    .infer(infer_linear)
    .infer_shape(shape_matmul);  // W is 2-D: X [..., K] x W [K, N] -> [..., N]

SDX_OP_SCHEMA_DOMAIN(FusedConv, kSdx)
    .attrs({{"activation", AttrType::kString},
            {"activation_params", AttrType::kFloats},
            {"auto_pad", AttrType::kString},
            {"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kConv));

SDX_OP_SCHEMA_DOMAIN(GatedLinearUnit, kSdx)
    .attrs({{"activation", AttrType::kString}, {"activation_params", AttrType::kFloats}, {"axis", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(1, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_gated_linear_unit);

}  // namespace sdx::ir
