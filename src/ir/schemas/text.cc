// Schemas for text featurization operators.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
SDX_OP_SCHEMA(TfIdfVectorizer).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1)
    .infer(infer_fixed_type(DType::kFloat32));
}  // namespace
}  // namespace sdx::ir
