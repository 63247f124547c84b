// Schemas for reductions, normalizations, softmax, losses, Einsum and Det.
// Arity is the widest across opset versions (axes became an input in opset 13/18).
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {

namespace {
// Reduce* ops: data plus optional axes input; output of the input's type.
void reduction(OpSchema& s) {
  s.category(OpCategory::kReduction)
      .inputs(1, 2)
      .outputs(1, 1)
      .infer(infer_same_as_input(0))
      .infer_shape(shape_reduce());
}
}  // namespace

SDX_OP_SCHEMA(ReduceSum)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceMean)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceMax)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceMin)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceProd)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceL1)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceL2)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceLogSum)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceLogSumExp)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ReduceSumSquare)
    .attrs({{"axes", AttrType::kInts}, {"keepdims", AttrType::kInt}, {"noop_with_empty_axes", AttrType::kInt}})
    .apply(reduction);
SDX_OP_SCHEMA(ArgMax)
    .attrs({{"axis", AttrType::kInt}, {"keepdims", AttrType::kInt}, {"select_last_index", AttrType::kInt}})
    .category(OpCategory::kReduction)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kInt64))
    .infer_shape(shape_arg_reduce());
SDX_OP_SCHEMA(ArgMin)
    .attrs({{"axis", AttrType::kInt}, {"keepdims", AttrType::kInt}, {"select_last_index", AttrType::kInt}})
    .category(OpCategory::kReduction)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kInt64))
    .infer_shape(shape_arg_reduce());

SDX_OP_SCHEMA(Softmax)
    .attrs({{"axis", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_same_as_input(0));
SDX_OP_SCHEMA(LogSoftmax)
    .attrs({{"axis", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_same_as_input(0));
SDX_OP_SCHEMA(Hardmax)
    .attrs({{"axis", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_same_as_input(0));

namespace {
// Y has X's type; Mean and InvStdDev have the stash type (float by default).
Status infer_layer_norm(Node& node) {
  Value* x = node.input(0);
  Value* y = node.output(0);
  if (x && y && y->type().kind == TypeInfo::Kind::kUnknown) y->mutable_type() = TypeInfo::tensor(x->type().elem);
  auto stash = dtype_from_onnx(static_cast<int>(node.attr_int("stash_type", 1)));
  if (!stash) return invalid_argument(node.describe() + ": attribute 'stash_type' is not a valid element type");
  for (int i = 1; i < node.num_outputs(); ++i) {
    Value* o = node.output(i);
    if (o && o->type().kind == TypeInfo::Kind::kUnknown) o->mutable_type() = TypeInfo::tensor(*stash);
  }
  return Status::ok();
}
}  // namespace

SDX_OP_SCHEMA(LayerNormalization)
    .attrs({{"axis", AttrType::kInt}, {"epsilon", AttrType::kFloat}, {"stash_type", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(2, 3)
    .outputs(1, 3)
    .infer(infer_layer_norm)
    .infer_shape(shape_layer_norm);
SDX_OP_SCHEMA(RMSNormalization)
    .attrs({{"axis", AttrType::kInt}, {"epsilon", AttrType::kFloat}, {"stash_type", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(BatchNormalization)
    .attrs({{"consumed_inputs", AttrType::kInts},
            {"epsilon", AttrType::kFloat},
            {"is_test", AttrType::kInt},
            {"momentum", AttrType::kFloat},
            {"spatial", AttrType::kInt},
            {"training_mode", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(5, 5)
    .outputs(1, 5)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(InstanceNormalization)
    .attrs({{"consumed_inputs", AttrType::kInts}, {"epsilon", AttrType::kFloat}})
    .category(OpCategory::kNormalization)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_output_same_as_input(0, 0));
SDX_OP_SCHEMA(GroupNormalization)
    .attrs({{"epsilon", AttrType::kFloat}, {"num_groups", AttrType::kInt}, {"stash_type", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LpNormalization)
    .attrs({{"axis", AttrType::kInt}, {"p", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(MeanVarianceNormalization)
    .attrs({{"axes", AttrType::kInts}})
    .category(OpCategory::kNormalization)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LRN)
    .attrs(
        {{"alpha", AttrType::kFloat}, {"beta", AttrType::kFloat}, {"bias", AttrType::kFloat}, {"size", AttrType::kInt}})
    .category(OpCategory::kNormalization)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));

SDX_OP_SCHEMA(SoftmaxCrossEntropyLoss)
    .attrs({{"ignore_index", AttrType::kInt}, {"reduction", AttrType::kString}})
    .category(OpCategory::kReduction)
    .inputs(2, 3)
    .outputs(1, 2)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(NegativeLogLikelihoodLoss)
    .attrs({{"ignore_index", AttrType::kInt}, {"reduction", AttrType::kString}})
    .category(OpCategory::kReduction)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));

SDX_OP_SCHEMA(Einsum)
    .attrs({{"equation", AttrType::kString}})
    .category(OpCategory::kMatMul)
    .inputs(1, INT_MAX)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Det).attrs({}).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));

}  // namespace sdx::ir
