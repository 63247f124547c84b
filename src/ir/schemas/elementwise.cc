// Schemas of the element-wise ops (arithmetic, comparison, logic, math, activations).
// Kernels: src/backend/cpu/kernels/elementwise_*.cc.
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {

namespace {
// One input; output of the same type and shape.
void unary(OpSchema& s) {
  s.category(OpCategory::kElementwise)
      .inputs(1, 1)
      .outputs(1, 1)
      .infer(infer_same_as_input(0))
      .infer_shape(shape_same_as_input(0));
}
// Two inputs broadcast together; output of the first input's type.
void binary(OpSchema& s) {
  s.category(OpCategory::kElementwise)
      .inputs(2, 2)
      .outputs(1, 1)
      .infer(infer_same_as_input(0))
      .infer_shape(shape_broadcast());
}
// Two inputs broadcast together; bool output.
void comparison(OpSchema& s) {
  s.category(OpCategory::kElementwise)
      .inputs(2, 2)
      .outputs(1, 1)
      .infer(infer_fixed_type(DType::kBool))
      .infer_shape(shape_broadcast());
}
// One or more inputs broadcast together; output of the first input's type.
void variadic(OpSchema& s) {
  s.category(OpCategory::kElementwise)
      .inputs(1, INT_MAX)
      .outputs(1, 1)
      .infer(infer_same_as_input(0))
      .infer_shape(shape_broadcast());
}
}  // namespace

// Unary, output type = input type.
SDX_OP_SCHEMA(Abs).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Neg).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Exp).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Log).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Sqrt).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Reciprocal).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Floor).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Ceil).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Round).attrs({}).apply(unary);
SDX_OP_SCHEMA(Sign).attrs({}).apply(unary);
SDX_OP_SCHEMA(Erf).attrs({}).apply(unary);
SDX_OP_SCHEMA(Sin).attrs({}).apply(unary);
SDX_OP_SCHEMA(Cos).attrs({}).apply(unary);
SDX_OP_SCHEMA(Tan).attrs({}).apply(unary);
SDX_OP_SCHEMA(Asin).attrs({}).apply(unary);
SDX_OP_SCHEMA(Acos).attrs({}).apply(unary);
SDX_OP_SCHEMA(Atan).attrs({}).apply(unary);
SDX_OP_SCHEMA(Sinh).attrs({}).apply(unary);
SDX_OP_SCHEMA(Cosh).attrs({}).apply(unary);
SDX_OP_SCHEMA(Asinh).attrs({}).apply(unary);
SDX_OP_SCHEMA(Acosh).attrs({}).apply(unary);
SDX_OP_SCHEMA(Atanh).attrs({}).apply(unary);
SDX_OP_SCHEMA(Relu).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(LeakyRelu).attrs({{"alpha", AttrType::kFloat}, {"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Elu).attrs({{"alpha", AttrType::kFloat}, {"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Selu)
    .attrs({{"alpha", AttrType::kFloat}, {"consumed_inputs", AttrType::kInts}, {"gamma", AttrType::kFloat}})
    .apply(unary);
SDX_OP_SCHEMA(Celu).attrs({{"alpha", AttrType::kFloat}}).apply(unary);
SDX_OP_SCHEMA(Sigmoid).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(HardSigmoid)
    .attrs({{"alpha", AttrType::kFloat}, {"beta", AttrType::kFloat}, {"consumed_inputs", AttrType::kInts}})
    .apply(unary);
SDX_OP_SCHEMA(HardSwish).attrs({}).apply(unary);
SDX_OP_SCHEMA(Softplus).attrs({}).apply(unary);
SDX_OP_SCHEMA(Softsign).attrs({}).apply(unary);
SDX_OP_SCHEMA(Tanh).attrs({{"consumed_inputs", AttrType::kInts}}).apply(unary);
SDX_OP_SCHEMA(Gelu).attrs({{"approximate", AttrType::kString}}).apply(unary);
SDX_OP_SCHEMA(Mish).attrs({}).apply(unary);
SDX_OP_SCHEMA(Swish).attrs({{"alpha", AttrType::kFloat}}).apply(unary);
SDX_OP_SCHEMA(ThresholdedRelu).attrs({{"alpha", AttrType::kFloat}}).apply(unary);
SDX_OP_SCHEMA(Shrink).attrs({{"bias", AttrType::kFloat}, {"lambd", AttrType::kFloat}}).apply(unary);
SDX_OP_SCHEMA(Not).attrs({}).apply(unary);
SDX_OP_SCHEMA(BitwiseNot).attrs({}).apply(unary);

// Unary predicates.
SDX_OP_SCHEMA(IsNaN)
    .attrs({})
    .category(OpCategory::kElementwise)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kBool))
    .infer_shape(shape_same_as_input(0));
SDX_OP_SCHEMA(IsInf)
    .attrs({{"detect_negative", AttrType::kInt}, {"detect_positive", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kBool))
    .infer_shape(shape_same_as_input(0));

// Binary with broadcasting, output type = input 0 type.
SDX_OP_SCHEMA(Add)
    .attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}, {"consumed_inputs", AttrType::kInts}})
    .apply(binary);
SDX_OP_SCHEMA(Sub)
    .attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}, {"consumed_inputs", AttrType::kInts}})
    .apply(binary);
SDX_OP_SCHEMA(Mul)
    .attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}, {"consumed_inputs", AttrType::kInts}})
    .apply(binary);
SDX_OP_SCHEMA(Div)
    .attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}, {"consumed_inputs", AttrType::kInts}})
    .apply(binary);
SDX_OP_SCHEMA(Pow).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(binary);
SDX_OP_SCHEMA(Mod).attrs({{"fmod", AttrType::kInt}}).apply(binary);
SDX_OP_SCHEMA(BitShift).attrs({{"direction", AttrType::kString}}).apply(binary);
SDX_OP_SCHEMA(BitwiseAnd).attrs({}).apply(binary);
SDX_OP_SCHEMA(BitwiseOr).attrs({}).apply(binary);
SDX_OP_SCHEMA(BitwiseXor).attrs({}).apply(binary);
SDX_OP_SCHEMA(PRelu)
    .attrs({{"consumed_inputs", AttrType::kInts}})
    .category(OpCategory::kElementwise)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_same_as_input(0));

// Binary predicates with broadcasting.
SDX_OP_SCHEMA(And).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(comparison);
SDX_OP_SCHEMA(Or).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(comparison);
SDX_OP_SCHEMA(Xor).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(comparison);
SDX_OP_SCHEMA(Equal).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(comparison);
SDX_OP_SCHEMA(Less).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(comparison);
SDX_OP_SCHEMA(LessOrEqual).attrs({}).apply(comparison);
SDX_OP_SCHEMA(Greater).attrs({{"axis", AttrType::kInt}, {"broadcast", AttrType::kInt}}).apply(comparison);
SDX_OP_SCHEMA(GreaterOrEqual).attrs({}).apply(comparison);

// Variadic with broadcasting (1..N inputs).
SDX_OP_SCHEMA(Max).attrs({{"consumed_inputs", AttrType::kInts}}).apply(variadic);
SDX_OP_SCHEMA(Min).attrs({{"consumed_inputs", AttrType::kInts}}).apply(variadic);
SDX_OP_SCHEMA(Sum).attrs({{"consumed_inputs", AttrType::kInts}}).apply(variadic);
SDX_OP_SCHEMA(Mean).attrs({{"consumed_inputs", AttrType::kInts}}).apply(variadic);

// Clip: min/max are attributes before opset 11, optional inputs after.
SDX_OP_SCHEMA(Clip)
    .attrs({{"consumed_inputs", AttrType::kInts}, {"max", AttrType::kFloat}, {"min", AttrType::kFloat}})
    .category(OpCategory::kElementwise)
    .inputs(1, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_same_as_input(0));
// Where(condition, X, Y): output type follows X.
SDX_OP_SCHEMA(Where)
    .attrs({})
    .category(OpCategory::kElementwise)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(1))
    .infer_shape(shape_broadcast());

}  // namespace sdx::ir
