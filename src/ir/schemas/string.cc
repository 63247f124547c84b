// Schemas for string operators.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
constexpr auto kEW = OpCategory::kElementwise;
SDX_OP_SCHEMA(StringConcat).category(kEW).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kString));
SDX_OP_SCHEMA(StringSplit).category(OpCategory::kOther).inputs(1, 1).outputs(2, 2).data_dependent();
SDX_OP_SCHEMA(StringNormalizer).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1).data_dependent()
    .infer(infer_fixed_type(DType::kString));
SDX_OP_SCHEMA(RegexFullMatch).category(kEW).inputs(1, 1).outputs(1, 1).infer(infer_fixed_type(DType::kBool));
}  // namespace
}  // namespace sdx::ir
