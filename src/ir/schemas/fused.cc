// Schemas of the fused ops the graph optimizer creates (domain "sdx", opset 1).
// Kernels: src/backend/cpu/kernels/fused_*.cc. The epilogue attributes are shared:
// `activation` names the activation applied last and `activation_params` holds its
// parameters (backend/cpu/kernels/util/activation.h lists the names and what each computes).
//
//   sdx.Linear(X [..., K], W [K, N], B [N]?, W_scale [N]?) -> act(X W' + B)       (LinearFusion,
//     QuantizationOptimizations). W' = W of X's type; or, X float32 only: W float16 (widened),
//     W int8 with W_scale float32 [N]: W'[k, n] = W[k, n] * W_scale[n] (W_scale exactly with int8 W).
//     x_quant: "none" (default) or, with int8 W only, "int16" / "dynamic": X is rounded per row to 16 /
//     8-bit integers on every call and the product taken in integers (backend/cpu/quant/int8_w16_gemm.h,
//     int8_dynamic_gemm.h; "int16" at up to kSmallMMaxRows rows of X, in float beyond).
//   sdx.FusedConv(X, W, B?, R?) -> act(Conv(X, W, B) + R), Conv's attributes       (ConvEpilogueFusion,
//     ConvResidualFusion). R (the residual, a ResNet shortcut) has X's type and exactly the output's
//     shape; it is added after the bias and before the activation. input_layout / output_layout /
//     residual_layout: "NCHW" (default) or "NCHW16c", X / Y / R channel-blocked with their logical
//     shapes unchanged (ConvLayoutOptimizations; float32, 4-D, channels a multiple of 16).
//     activation_clamp [lo, hi]: a Clip(lo, hi) after a relu or leaky_relu activation.
//     activation_affine [scale, shift]: act * scale + shift after a hard_swish or relu activation.
//   sdx.GatedLinearUnit(A, B) -> act(A) * B, numpy broadcasting                   (GatedDeltaNetFusion)
//   sdx.GatedLinearUnit(X, axis) -> act(first half of X) * second half along axis
// (GatedLinearUnit's activation defaults to "silu"; the others' to "none").
#include <string>

#include "ir/op_cost.h"
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
    const std::string xq = node.attr_string("x_quant", "none");
    if (xq != "none" && wt != DType::kUndefined && wt != DType::kInt8)
      return invalid_argument("x_quant '" + xq + "' needs an int8 W (with X float32)");
  }
  const std::string xq = node.attr_string("x_quant", "none");
  if (xq != "none" && xq != "dynamic" && xq != "int16")
    return invalid_argument("x_quant must be 'none', 'int16' or 'dynamic', got '" + xq + "'");
  if (scale && scale->type().kind == TypeInfo::Kind::kTensor && scale->type().elem != DType::kUndefined &&
      scale->type().elem != DType::kFloat32)
    return invalid_argument("W_scale must be float32");
  return infer_same_as_input(0)(node);
}

// FusedConv: the residual R (input 3), when present, has X's element type; a channel-blocked layout
// names an input that is there, on float32 X.
Status infer_fused_conv(Node& node) {
  const Value* x = node.input(0);
  const Value* r = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if (x && r && x->type().kind == TypeInfo::Kind::kTensor && r->type().kind == TypeInfo::Kind::kTensor &&
      x->type().elem != DType::kUndefined && r->type().elem != DType::kUndefined && r->type().elem != x->type().elem)
    return invalid_argument(std::string("residual R ") + dtype_name(r->type().elem) + " must have X's type " +
                            dtype_name(x->type().elem));
  bool blocked = false;
  for (const char* name : {"input_layout", "output_layout", "residual_layout"}) {
    const std::string v = node.attr_string(name, "NCHW");
    if (v != "NCHW" && v != "NCHW16c")
      return invalid_argument(std::string(name) + " must be \"NCHW\" or \"NCHW16c\", got \"" + v + "\"");
    blocked = blocked || v != "NCHW";
  }
  if (node.attr_string("residual_layout", "NCHW") != "NCHW" && !r)
    return invalid_argument("residual_layout without a residual input");
  if (blocked && x && x->type().kind == TypeInfo::Kind::kTensor && x->type().elem != DType::kUndefined &&
      x->type().elem != DType::kFloat32)
    return invalid_argument(std::string("channel-blocked layouts need float32, got ") + dtype_name(x->type().elem));
  return infer_same_as_input(0)(node);
}

// FusedConv: Conv's output shape, which the residual R (input 3), when present, must have exactly
// (it does not broadcast); with the output's shape unknown, R gives it.
Status shape_fused_conv(Node& node) {
  SDX_RETURN_IF_ERROR(shape_conv_pool(ConvPoolKind::kConv)(node), "");
  const Dims* r = input_dims(node, 3);
  const Value* y = node.num_outputs() > 0 ? node.output(0) : nullptr;
  if (!r || !y) return Status::ok();
  const auto& out = y->type().shape;
  if (!out) {
    set_output_dims(node, 0, *r);
    return Status::ok();
  }
  bool same = out->size() == r->size();
  for (size_t i = 0; same && i < r->size(); ++i)
    same = !(*out)[i].is_fixed() || !(*r)[i].is_fixed() || (*out)[i].value == (*r)[i].value;
  if (!same)
    return invalid_argument("residual R " + dims_string(*r) + " must have the output's shape " + dims_string(*out));
  return Status::ok();
}

// FusedConv: Conv's shape rule (with the residual), and channel-blocked tensors 4-D with a multiple
// of 16 channels where the channel count is known.
Status shape_fused_conv_layouts(Node& node) {
  SDX_RETURN_IF_ERROR(shape_fused_conv(node), "");
  auto check = [&](const char* attr, const Dims* d) -> Status {
    if (node.attr_string(attr, "NCHW") == "NCHW" || !d) return Status::ok();
    if (d->size() != 4 || ((*d)[1].is_fixed() && (*d)[1].value % 16 != 0))
      return invalid_argument(std::string(attr) + " NCHW16c needs a 4-D tensor with a multiple of 16 channels, got " +
                              dims_string(*d));
    return Status::ok();
  };
  const Value* y = node.num_outputs() > 0 ? node.output(0) : nullptr;
  SDX_RETURN_IF_ERROR(check("input_layout", input_dims(node, 0)), "");
  SDX_RETURN_IF_ERROR(check("output_layout", y && y->type().shape ? &*y->type().shape : nullptr), "");
  return check("residual_layout", input_dims(node, 3));
}

}  // namespace

SDX_OP_SCHEMA_DOMAIN(Linear, kSdx)
    .attrs({{"activation", AttrType::kString}, {"activation_params", AttrType::kFloats}, {"x_quant", AttrType::kString}})
    .category(OpCategory::kMatMul)
    .inputs(2, 4)
    .outputs(1, 1)
    .infer(infer_linear)
    .infer_shape(shape_matmul)  // W is 2-D: X [..., K] x W [K, N] -> [..., N]
    .flops(flops_matmul);

SDX_OP_SCHEMA_DOMAIN(FusedConv, kSdx)
    .attrs({{"activation", AttrType::kString},
            {"activation_affine", AttrType::kFloats},
            {"activation_clamp", AttrType::kFloats},
            {"activation_params", AttrType::kFloats},
            {"auto_pad", AttrType::kString},
            {"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"input_layout", AttrType::kString},
            {"kernel_shape", AttrType::kInts},
            {"output_layout", AttrType::kString},
            {"pads", AttrType::kInts},
            {"residual_layout", AttrType::kString},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(2, 4)
    .outputs(1, 1)
    .infer(infer_fused_conv)
    .infer_shape(shape_fused_conv_layouts)
    .flops(flops_conv);

SDX_OP_SCHEMA_DOMAIN(GatedLinearUnit, kSdx)
    .attrs({{"activation", AttrType::kString}, {"activation_params", AttrType::kFloats}, {"axis", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(1, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_gated_linear_unit);

}  // namespace sdx::ir
