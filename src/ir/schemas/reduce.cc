// Schemas for reductions, normalizations, softmax, losses, Einsum and Det.
// Arity is the widest across opset versions (axes became an input in opset 13/18).
#include "ir/op_schema.h"

namespace sdx::ir {

SDX_OP_SCHEMA(ReduceSum).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceMean).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceMax).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceMin).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceProd).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceL1).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceL2).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceLogSum).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceLogSumExp).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ReduceSumSquare).category(OpCategory::kReduction).inputs(1, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ArgMax).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kInt64));
SDX_OP_SCHEMA(ArgMin).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kInt64));

SDX_OP_SCHEMA(Softmax).category(OpCategory::kNormalization).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LogSoftmax).category(OpCategory::kNormalization).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Hardmax).category(OpCategory::kNormalization).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));

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

SDX_OP_SCHEMA(LayerNormalization).category(OpCategory::kNormalization).inputs(2, 3).outputs(1, 3).infer(infer_layer_norm);
SDX_OP_SCHEMA(RMSNormalization).category(OpCategory::kNormalization).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(BatchNormalization).category(OpCategory::kNormalization).inputs(5, 5).outputs(1, 5).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(InstanceNormalization).category(OpCategory::kNormalization).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GroupNormalization).category(OpCategory::kNormalization).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LpNormalization).category(OpCategory::kNormalization).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(MeanVarianceNormalization).category(OpCategory::kNormalization).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LRN).category(OpCategory::kNormalization).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));

SDX_OP_SCHEMA(SoftmaxCrossEntropyLoss).category(OpCategory::kReduction).inputs(2, 3).outputs(1, 2).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(NegativeLogLikelihoodLoss).category(OpCategory::kReduction).inputs(2, 3).outputs(1, 1).infer(infer_same_as_input(0));

SDX_OP_SCHEMA(Einsum).category(OpCategory::kMatMul).inputs(1, INT_MAX).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Det).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));

}  // namespace sdx::ir
