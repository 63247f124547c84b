// Schemas for string operators.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
constexpr auto kEW = OpCategory::kElementwise;
SDX_OP_SCHEMA(StringConcat).attrs({}).category(kEW).inputs(2, 2).outputs(1, 1).infer(infer_fixed_type(DType::kString));
SDX_OP_SCHEMA(StringSplit)
    .attrs({{"delimiter", AttrType::kString}, {"maxsplit", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(2, 2)
    .data_dependent();
SDX_OP_SCHEMA(StringNormalizer)
    .attrs({{"case_change_action", AttrType::kString},
            {"is_case_sensitive", AttrType::kInt},
            {"locale", AttrType::kString},
            {"stopwords", AttrType::kStrings}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_fixed_type(DType::kString));
SDX_OP_SCHEMA(RegexFullMatch)
    .attrs({{"pattern", AttrType::kString}})
    .category(kEW)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kBool));
}  // namespace
}  // namespace sdx::ir
