// Schemas of the cast and quantization family (Cast, CastLike, BitCast, QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, MatMulInteger, ConvInteger,
// QLinearConv).
#include "ir/op_cost.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {
namespace {

void set_if_unknown(Value* out, DType t) {
  if (out && out->type().kind == TypeInfo::Kind::kUnknown && t != DType::kUndefined)
    out->mutable_type() = TypeInfo::tensor(t);
}

DType input_elem(const Node& node, int i) {
  const Value* v = node.input(i);
  return v && v->type().kind == TypeInfo::Kind::kTensor ? v->type().elem : DType::kUndefined;
}

// Output i gets the element type of input `from`.
TypeInferenceFn infer_output_like_input(int from) {
  return [from](Node& node) -> Status {
    set_if_unknown(node.output(0), input_elem(node, from));
    return Status::ok();
  };
}

// QuantizeLinear: zero point's type, else output_dtype, else uint8.
Status infer_quantize(Node& node) {
  DType t = input_elem(node, 2);
  if (t == DType::kUndefined) {
    const int64_t code = node.attr_int("output_dtype", 0);
    auto dt = dtype_from_onnx(static_cast<int>(code));
    if (code != 0 && !dt)
      return invalid_argument(node.describe() + ": attribute 'output_dtype' is not an element type");
    t = code != 0 ? *dt : DType::kUint8;
  }
  set_if_unknown(node.output(0), t);
  return Status::ok();
}

// DequantizeLinear: output_dtype, else the scale's type.
Status infer_dequantize(Node& node) {
  const int64_t code = node.attr_int("output_dtype", 0);
  DType t = input_elem(node, 1);
  if (code != 0) {
    auto dt = dtype_from_onnx(static_cast<int>(code));
    if (!dt) return invalid_argument(node.describe() + ": attribute 'output_dtype' is not an element type");
    t = *dt;
  }
  set_if_unknown(node.output(0), t);
  return Status::ok();
}

Status infer_dynamic_quantize(Node& node) {
  set_if_unknown(node.output(0), DType::kUint8);
  set_if_unknown(node.output(1), input_elem(node, 0));
  set_if_unknown(node.output(2), DType::kUint8);
  return Status::ok();
}

}  // namespace

SDX_OP_SCHEMA(Cast)
    .attrs({{"round_mode", AttrType::kString}, {"saturate", AttrType::kInt}, {"to", AttrType::kUndefined}})
    .category(OpCategory::kElementwise)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_from_attr_to())
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(CastLike)
    .attrs({{"round_mode", AttrType::kString}, {"saturate", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_output_like_input(1))
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(BitCast)
    .attrs({{"to", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_from_attr_to());
SDX_OP_SCHEMA(QuantizeLinear)
    .attrs({{"axis", AttrType::kInt},
            {"block_size", AttrType::kInt},
            {"output_dtype", AttrType::kInt},
            {"precision", AttrType::kInt},
            {"saturate", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_quantize)
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(DequantizeLinear)
    .attrs({{"axis", AttrType::kInt}, {"block_size", AttrType::kInt}, {"output_dtype", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_dequantize)
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(DynamicQuantizeLinear)
    .attrs({})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(3, 3)
    .infer(infer_dynamic_quantize);
SDX_OP_SCHEMA(QLinearMatMul)
    .attrs({})
    .category(OpCategory::kMatMul)
    .inputs(8, 8)
    .outputs(1, 1)
    .infer(infer_output_like_input(7));
// ONNX Runtime's contrib op (what its QDQ and dynamic-quantization rewrites make, and what sdx's
// quantize_weights makes of MatMul(DequantizeLinear(x), dequantized int8 W)):
//   Y = (A - a_zero_point) (B - b_zero_point) * a_scale * b_scale + bias, the sums exact in integers.
SDX_OP_SCHEMA_DOMAIN(MatMulIntegerToFloat, "com.microsoft")
    .attrs({})
    .category(OpCategory::kMatMul)
    .inputs(4, 7)
    .outputs(1, 1)
    .infer(infer_output_like_input(2))
    .infer_shape(shape_matmul)
    .flops(flops_matmul);
SDX_OP_SCHEMA(MatMulInteger)
    .attrs({})
    .category(OpCategory::kMatMul)
    .inputs(2, 4)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kInt32));
SDX_OP_SCHEMA(ConvInteger)
    .attrs({{"auto_pad", AttrType::kString},
            {"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(2, 4)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kInt32));
SDX_OP_SCHEMA(QLinearConv)
    .attrs({{"auto_pad", AttrType::kString},
            {"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(8, 9)
    .outputs(1, 1)
    .infer(infer_output_like_input(7));

}  // namespace sdx::ir
