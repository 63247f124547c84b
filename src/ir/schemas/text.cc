// Schemas for text featurization operators.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
SDX_OP_SCHEMA(TfIdfVectorizer)
    .attrs({{"max_gram_length", AttrType::kInt},
            {"max_skip_count", AttrType::kInt},
            {"min_gram_length", AttrType::kInt},
            {"mode", AttrType::kString},
            {"ngram_counts", AttrType::kInts},
            {"ngram_indexes", AttrType::kInts},
            {"pool_int64s", AttrType::kInts},
            {"pool_strings", AttrType::kStrings},
            {"weights", AttrType::kFloats}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_fixed_type(DType::kFloat32));
}  // namespace
}  // namespace sdx::ir
