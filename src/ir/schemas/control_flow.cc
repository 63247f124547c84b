// Schemas for control flow, sequence and optional operators. All are GAPs in a
// captured plan: their output shapes depend on data or on subgraph execution.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
constexpr auto kCF = OpCategory::kControlFlow;
SDX_OP_SCHEMA(If).category(kCF).inputs(1, 1).outputs(1, INT_MAX).data_dependent();
SDX_OP_SCHEMA(Loop).category(kCF).inputs(2, INT_MAX).outputs(1, INT_MAX).data_dependent();
SDX_OP_SCHEMA(Scan).category(kCF).inputs(1, INT_MAX).outputs(1, INT_MAX).data_dependent();
SDX_OP_SCHEMA(SequenceEmpty).category(kCF).inputs(0, 0).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceConstruct).category(kCF).inputs(1, INT_MAX).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceAt).category(kCF).inputs(2, 2).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceInsert).category(kCF).inputs(2, 3).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceErase).category(kCF).inputs(1, 2).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceLength).category(kCF).inputs(1, 1).outputs(1, 1).data_dependent().infer(infer_fixed_type(DType::kInt64));
SDX_OP_SCHEMA(ConcatFromSequence).category(kCF).inputs(1, 1).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SplitToSequence).category(kCF).inputs(1, 2).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceMap).category(kCF).inputs(1, INT_MAX).outputs(1, INT_MAX).data_dependent();
SDX_OP_SCHEMA(Optional).category(kCF).inputs(0, 1).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(OptionalHasElement).category(kCF).inputs(0, 1).outputs(1, 1).data_dependent().infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(OptionalGetElement).category(kCF).inputs(1, 1).outputs(1, 1).data_dependent();
}  // namespace
}  // namespace sdx::ir
