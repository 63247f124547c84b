// Schemas of the tensor-manipulation ops (kernels in backend/cpu/kernels/tensor_*.cc).
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {

// Output i gets the element type of input in_i; other outputs get `rest`.
TypeInferenceFn infer_first_like_input_rest(int in_i, DType rest) {
  return [in_i, rest](Node& node) -> Status {
    for (int o = 0; o < node.num_outputs(); ++o) {
      Value* out = node.output(o);
      if (!out || out->type().kind != TypeInfo::Kind::kUnknown) continue;
      if (o == 0) {
        Value* in = node.input(in_i);
        if (in && in->type().kind == TypeInfo::Kind::kTensor) out->mutable_type() = TypeInfo::tensor(in->type().elem);
      } else {
        out->mutable_type() = TypeInfo::tensor(rest);
      }
    }
    return Status::ok();
  };
}

// Identity passes sequences and optionals through too.
Status infer_identity(Node& node) {
  Value* in = node.input(0);
  Value* out = node.output(0);
  if (in && out && out->type().kind == TypeInfo::Kind::kUnknown) out->mutable_type() = in->type();
  return Status::ok();
}

Status infer_constant(Node& node) {
  Value* out = node.output(0);
  if (!out || out->type().kind != TypeInfo::Kind::kUnknown) return Status::ok();
  for (const Attribute& a : node.attributes()) {
    if (a.name == "value" && a.t.defined()) out->mutable_type() = TypeInfo::tensor(a.t.dtype());
    else if (a.name == "value_float" || a.name == "value_floats") out->mutable_type() = TypeInfo::tensor(DType::kFloat32);
    else if (a.name == "value_int" || a.name == "value_ints") out->mutable_type() = TypeInfo::tensor(DType::kInt64);
    else if (a.name == "value_string" || a.name == "value_strings") out->mutable_type() = TypeInfo::tensor(DType::kString);
  }
  return Status::ok();
}

Status infer_constant_of_shape(Node& node) {
  Value* out = node.output(0);
  if (!out || out->type().kind != TypeInfo::Kind::kUnknown) return Status::ok();
  const Attribute* a = node.attr("value");
  out->mutable_type() = TypeInfo::tensor(a && a->t.defined() ? a->t.dtype() : DType::kFloat32);
  return Status::ok();
}

Status infer_eye_like(Node& node) {
  Value* out = node.output(0);
  if (!out || out->type().kind != TypeInfo::Kind::kUnknown) return Status::ok();
  if (node.attr("dtype")) {
    auto dt = dtype_from_onnx(static_cast<int>(node.attr_int("dtype", 0)));
    if (!dt) return invalid_argument("EyeLike 'dtype' is not a valid element type");
    out->mutable_type() = TypeInfo::tensor(*dt);
  } else if (node.input(0)) {
    out->mutable_type() = TypeInfo::tensor(node.input(0)->type().elem);
  }
  return Status::ok();
}

Status infer_dropout(Node& node) {
  Value* in = node.input(0);
  if (Value* out = node.output(0); in && out && out->type().kind == TypeInfo::Kind::kUnknown)
    out->mutable_type() = TypeInfo::tensor(in->type().elem);
  if (Value* mask = node.output(1); mask && mask->type().kind == TypeInfo::Kind::kUnknown)
    mask->mutable_type() = TypeInfo::tensor(node.opset() >= 10 || !in ? DType::kBool : in->type().elem);
  return Status::ok();
}

}  // namespace

using C = OpCategory;

// Values from attributes / metadata.
SDX_OP_SCHEMA(Identity).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_identity);
SDX_OP_SCHEMA(Constant).category(C::kOther).inputs(0, 0).outputs(1, 1).infer(infer_constant);
SDX_OP_SCHEMA(ConstantOfShape).category(C::kOther).inputs(1, 1).outputs(1, 1).data_dependent().infer(infer_constant_of_shape);
SDX_OP_SCHEMA(Shape).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kInt64));
SDX_OP_SCHEMA(Size).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kInt64));
SDX_OP_SCHEMA(EyeLike).category(C::kOther).inputs(1, 1).outputs(1, 1).infer(infer_eye_like);
SDX_OP_SCHEMA(Range).category(C::kOther).inputs(3, 3).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Dropout).category(C::kElementwise).inputs(1, 3).outputs(1, 2).infer(infer_dropout);

// Shape changes and data movement.
SDX_OP_SCHEMA(Reshape).category(C::kShapeManipulation).inputs(1, 2).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Flatten).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Squeeze).category(C::kShapeManipulation).inputs(1, 2).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Unsqueeze).category(C::kShapeManipulation).inputs(1, 2).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Transpose).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(DepthToSpace).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(SpaceToDepth).category(C::kShapeManipulation).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Concat).category(C::kConcat).inputs(1, INT_MAX).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Split).category(C::kSplit).inputs(1, 2).outputs(1, INT_MAX).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Slice).category(C::kSlice).inputs(1, 5).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Expand).category(C::kTile).inputs(2, 2).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Tile).category(C::kTile).inputs(2, 3).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Pad).category(C::kTile).inputs(1, 4).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(CenterCropPad).category(C::kSlice).inputs(2, 2).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Trilu).category(C::kElementwise).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReverseSequence).category(C::kOther).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Col2Im).category(C::kImage2Col).inputs(3, 3).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));

// Indexing.
SDX_OP_SCHEMA(Gather).category(C::kGather).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GatherElements).category(C::kGather).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GatherND).category(C::kGather).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ScatterElements).category(C::kScatter).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Scatter).category(C::kScatter).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ScatterND).category(C::kScatter).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(OneHot).category(C::kGather).inputs(3, 3).outputs(1, 1).data_dependent().infer(infer_same_as_input(2));
SDX_OP_SCHEMA(Compress).category(C::kGather).inputs(2, 2).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(NonZero).category(C::kGather).inputs(1, 1).outputs(1, 1).data_dependent().infer(infer_fixed_type(DType::kInt64));

// Sorting and scans.
SDX_OP_SCHEMA(TopK).category(C::kOther).inputs(1, 2).outputs(2, 2).data_dependent()
    .infer(infer_first_like_input_rest(0, DType::kInt64));
SDX_OP_SCHEMA(Unique).category(C::kOther).inputs(1, 1).outputs(1, 4).data_dependent()
    .infer(infer_first_like_input_rest(0, DType::kInt64));
SDX_OP_SCHEMA(CumSum).category(C::kOther).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(CumProd).category(C::kOther).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));

}  // namespace sdx::ir
