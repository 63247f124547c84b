// Schemas for the ai.onnx.preview.training optimizer operators (opset 1).
// Each takes R (learning rate), T (update count), then per-tensor groups of
// inputs (X..., G..., states...), and returns updated X... and states....
#include <climits>

#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
constexpr const char* kTraining = "ai.onnx.preview.training";
// All outputs share the element type of the first optimized tensor (input 2).
SDX_OP_SCHEMA_DOMAIN(Adagrad, kTraining)
    .attrs({{"decay_factor", AttrType::kFloat}, {"epsilon", AttrType::kFloat}, {"norm_coefficient", AttrType::kFloat}})
    .inputs(5, INT_MAX)
    .outputs(2, INT_MAX)
    .infer(infer_same_as_input(2));
SDX_OP_SCHEMA_DOMAIN(Adam, kTraining)
    .attrs({{"alpha", AttrType::kFloat},
            {"beta", AttrType::kFloat},
            {"epsilon", AttrType::kFloat},
            {"norm_coefficient", AttrType::kFloat},
            {"norm_coefficient_post", AttrType::kFloat}})
    .inputs(6, INT_MAX)
    .outputs(3, INT_MAX)
    .infer(infer_same_as_input(2));
SDX_OP_SCHEMA_DOMAIN(Momentum, kTraining)
    .attrs({{"alpha", AttrType::kFloat},
            {"beta", AttrType::kFloat},
            {"mode", AttrType::kString},
            {"norm_coefficient", AttrType::kFloat}})
    .inputs(5, INT_MAX)
    .outputs(2, INT_MAX)
    .infer(infer_same_as_input(2));
}  // namespace
}  // namespace sdx::ir
