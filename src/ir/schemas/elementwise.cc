// Schemas of the element-wise ops (arithmetic, comparison, logic, math, activations).
// Kernels: src/backend/cpu/kernels/elementwise_*.cc.
#include "ir/op_schema.h"

namespace sdx::ir {

// Unary, output type = input type.
SDX_OP_SCHEMA(Abs).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Neg).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Exp).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Log).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sqrt).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Reciprocal).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Floor).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Ceil).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Round).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sign).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Erf).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sin).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Cos).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Tan).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Asin).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Acos).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Atan).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sinh).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Cosh).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Asinh).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Acosh).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Atanh).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Relu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LeakyRelu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Elu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Selu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Celu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sigmoid).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(HardSigmoid).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(HardSwish).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Softplus).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Softsign).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Tanh).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Gelu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Mish).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Swish).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ThresholdedRelu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Shrink).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Not).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(BitwiseNot).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));

// Unary predicates.
SDX_OP_SCHEMA(IsNaN).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(IsInf).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kBool));

// Binary with broadcasting, output type = input 0 type.
SDX_OP_SCHEMA(Add).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sub).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Mul).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Div).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Pow).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Mod).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(BitShift).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(BitwiseAnd).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(BitwiseOr).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(BitwiseXor).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(PRelu).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));

// Binary predicates with broadcasting.
SDX_OP_SCHEMA(And).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(Or).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(Xor).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(Equal).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(Less).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(LessOrEqual).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(Greater).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(GreaterOrEqual).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kBool));

// Variadic with broadcasting (1..N inputs).
SDX_OP_SCHEMA(Max).category(OpCategory::kElementwise).inputs(1, INT_MAX).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Min).category(OpCategory::kElementwise).inputs(1, INT_MAX).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Sum).category(OpCategory::kElementwise).inputs(1, INT_MAX).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Mean).category(OpCategory::kElementwise).inputs(1, INT_MAX).outputs(1, 1).infer(infer_same_as_input(0));

// Clip: min/max are attributes before opset 11, optional inputs after.
SDX_OP_SCHEMA(Clip).category(OpCategory::kElementwise).inputs(1, 3).outputs(1, 1).infer(infer_same_as_input(0));
// Where(condition, X, Y): output type follows X.
SDX_OP_SCHEMA(Where).category(OpCategory::kElementwise).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(1));

}  // namespace sdx::ir
