// Schemas of the tensor-manipulation ops (kernels in backend/cpu/kernels/tensor_*.cc).
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

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
    if (a.name == "value" && a.t.defined())
      out->mutable_type() = TypeInfo::tensor(a.t.dtype());
    else if (a.name == "value_float" || a.name == "value_floats")
      out->mutable_type() = TypeInfo::tensor(DType::kFloat32);
    else if (a.name == "value_int" || a.name == "value_ints")
      out->mutable_type() = TypeInfo::tensor(DType::kInt64);
    else if (a.name == "value_string" || a.name == "value_strings")
      out->mutable_type() = TypeInfo::tensor(DType::kString);
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
SDX_OP_SCHEMA(Identity)
    .attrs({})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_identity)
    .infer_shape(shape_same_as_input(0));
SDX_OP_SCHEMA(Constant)
    .attrs({{"sparse_value", AttrType::kSparseTensor},
            {"value", AttrType::kTensor},
            {"value_float", AttrType::kFloat},
            {"value_floats", AttrType::kFloats},
            {"value_int", AttrType::kInt},
            {"value_ints", AttrType::kInts},
            {"value_string", AttrType::kString},
            {"value_strings", AttrType::kStrings}})
    .category(C::kOther)
    .inputs(0, 0)
    .outputs(1, 1)
    .infer(infer_constant)
    .infer_shape(shape_constant);
SDX_OP_SCHEMA(ConstantOfShape)
    .attrs({{"value", AttrType::kTensor}})
    .category(C::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent_on({0})
    .infer(infer_constant_of_shape);
SDX_OP_SCHEMA(Shape)
    .attrs({{"end", AttrType::kInt}, {"start", AttrType::kInt}})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kInt64))
    .infer_shape(shape_shape);
SDX_OP_SCHEMA(Size)
    .attrs({})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kInt64))
    .infer_shape(shape_size);
SDX_OP_SCHEMA(EyeLike)
    .attrs({{"dtype", AttrType::kInt}, {"k", AttrType::kInt}})
    .category(C::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_eye_like);
SDX_OP_SCHEMA(Range)
    .attrs({{"stash_type", AttrType::kInt}})
    .category(C::kOther)
    .inputs(3, 3)
    .outputs(1, 1)
    .data_dependent_on({0, 1, 2})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_range);
SDX_OP_SCHEMA(Dropout)
    .attrs({{"consumed_inputs", AttrType::kInts},
            {"is_test", AttrType::kInt},
            {"ratio", AttrType::kFloat},
            {"seed", AttrType::kInt}})
    .category(C::kElementwise)
    .inputs(1, 3)
    .outputs(1, 2)
    .infer(infer_dropout)
    .infer_shape(shape_same_as_input(0));

// Shape changes and data movement.
SDX_OP_SCHEMA(Reshape)
    .attrs({{"allowzero", AttrType::kInt}, {"consumed_inputs", AttrType::kInts}, {"shape", AttrType::kInts}})
    .category(C::kShapeManipulation)
    .inputs(1, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_reshape);
SDX_OP_SCHEMA(Flatten)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_flatten);
SDX_OP_SCHEMA(Squeeze)
    .attrs({{"axes", AttrType::kInts}})
    .category(C::kShapeManipulation)
    .inputs(1, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_squeeze);
SDX_OP_SCHEMA(Unsqueeze)
    .attrs({{"axes", AttrType::kInts}})
    .category(C::kShapeManipulation)
    .inputs(1, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_unsqueeze);
SDX_OP_SCHEMA(Transpose)
    .attrs({{"perm", AttrType::kInts}})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_transpose);
SDX_OP_SCHEMA(DepthToSpace)
    .attrs({{"blocksize", AttrType::kInt}, {"mode", AttrType::kString}})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(SpaceToDepth)
    .attrs({{"blocksize", AttrType::kInt}, {"mode", AttrType::kString}})
    .category(C::kShapeManipulation)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Concat)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kConcat)
    .inputs(1, INT_MAX)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_concat);
SDX_OP_SCHEMA(Split)
    .attrs({{"axis", AttrType::kInt}, {"num_outputs", AttrType::kInt}, {"split", AttrType::kInts}})
    .category(C::kSplit)
    .inputs(1, 2)
    .outputs(1, INT_MAX)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_split);
SDX_OP_SCHEMA(Slice)
    .attrs({{"axes", AttrType::kInts}, {"ends", AttrType::kInts}, {"starts", AttrType::kInts}})
    .category(C::kSlice)
    .inputs(1, 5)
    .outputs(1, 1)
    .data_dependent_on({1, 2, 3, 4})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_slice);
SDX_OP_SCHEMA(Expand)
    .attrs({})
    .category(C::kTile)
    .inputs(2, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0))
    .infer_shape(shape_expand);
SDX_OP_SCHEMA(Tile).attrs({}).category(C::kTile).inputs(2, 3).outputs(1, 1).data_dependent_on({1}).infer(
    infer_same_as_input(0));
SDX_OP_SCHEMA(Pad)
    .attrs({{"mode", AttrType::kString},
            {"paddings", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"value", AttrType::kFloat}})
    .category(C::kTile)
    .inputs(1, 4)
    .outputs(1, 1)
    .data_dependent_on({1, 2, 3})
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(CenterCropPad)
    .attrs({{"axes", AttrType::kInts}})
    .category(C::kSlice)
    .inputs(2, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Trilu)
    .attrs({{"upper", AttrType::kInt}})
    .category(C::kElementwise)
    .inputs(1, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReverseSequence)
    .attrs({{"batch_axis", AttrType::kInt}, {"time_axis", AttrType::kInt}})
    .category(C::kOther)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Col2Im)
    .attrs({{"dilations", AttrType::kInts}, {"pads", AttrType::kInts}, {"strides", AttrType::kInts}})
    .category(C::kImage2Col)
    .inputs(3, 3)
    .outputs(1, 1)
    .data_dependent_on({1, 2})
    .infer(infer_same_as_input(0));

// Indexing.
SDX_OP_SCHEMA(Gather)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kGather)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_gather);
SDX_OP_SCHEMA(GatherElements)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kGather)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GatherND)
    .attrs({{"batch_dims", AttrType::kInt}})
    .category(C::kGather)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ScatterElements)
    .attrs({{"axis", AttrType::kInt}, {"reduction", AttrType::kString}})
    .category(C::kScatter)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Scatter)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kScatter)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ScatterND)
    .attrs({{"reduction", AttrType::kString}})
    .category(C::kScatter)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(OneHot)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kGather)
    .inputs(3, 3)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(2));
SDX_OP_SCHEMA(Compress)
    .attrs({{"axis", AttrType::kInt}})
    .category(C::kGather)
    .inputs(2, 2)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(NonZero)
    .attrs({})
    .category(C::kGather)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_fixed_type(DType::kInt64));

// Sorting and scans.
SDX_OP_SCHEMA(TopK)
    .attrs({{"axis", AttrType::kInt}, {"k", AttrType::kInt}, {"largest", AttrType::kInt}, {"sorted", AttrType::kInt}})
    .category(C::kOther)
    .inputs(1, 2)
    .outputs(2, 2)
    .data_dependent_on({1})
    .infer(infer_first_like_input_rest(0, DType::kInt64));
SDX_OP_SCHEMA(Unique)
    .attrs({{"axis", AttrType::kInt}, {"sorted", AttrType::kInt}})
    .category(C::kOther)
    .inputs(1, 1)
    .outputs(1, 4)
    .data_dependent()
    .infer(infer_first_like_input_rest(0, DType::kInt64));
SDX_OP_SCHEMA(CumSum)
    .attrs({{"exclusive", AttrType::kInt}, {"reverse", AttrType::kInt}})
    .category(C::kOther)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(CumProd)
    .attrs({{"exclusive", AttrType::kInt}, {"reverse", AttrType::kInt}})
    .category(C::kOther)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));

}  // namespace sdx::ir
