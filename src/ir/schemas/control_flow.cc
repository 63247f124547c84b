// Schemas for control flow, sequence and optional operators. All are GAPs in a
// captured plan: their output shapes depend on data or on subgraph execution.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
constexpr auto kCF = OpCategory::kControlFlow;
SDX_OP_SCHEMA(If)
    .attrs({{"else_branch", AttrType::kGraph}, {"then_branch", AttrType::kGraph}})
    .category(kCF)
    .inputs(1, 1)
    .outputs(1, INT_MAX)
    .data_dependent();
SDX_OP_SCHEMA(Loop)
    .attrs({{"body", AttrType::kGraph}})
    .category(kCF)
    .inputs(2, INT_MAX)
    .outputs(1, INT_MAX)
    .data_dependent();
SDX_OP_SCHEMA(Scan)
    .attrs({{"body", AttrType::kGraph},
            {"directions", AttrType::kInts},
            {"num_scan_inputs", AttrType::kInt},
            {"scan_input_axes", AttrType::kInts},
            {"scan_input_directions", AttrType::kInts},
            {"scan_output_axes", AttrType::kInts},
            {"scan_output_directions", AttrType::kInts}})
    .category(kCF)
    .inputs(1, INT_MAX)
    .outputs(1, INT_MAX)
    .data_dependent();
SDX_OP_SCHEMA(SequenceEmpty)
    .attrs({{"dtype", AttrType::kInt}})
    .category(kCF)
    .inputs(0, 0)
    .outputs(1, 1)
    .data_dependent();
SDX_OP_SCHEMA(SequenceConstruct).attrs({}).category(kCF).inputs(1, INT_MAX).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceAt).attrs({}).category(kCF).inputs(2, 2).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceInsert).attrs({}).category(kCF).inputs(2, 3).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceErase).attrs({}).category(kCF).inputs(1, 2).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(SequenceLength)
    .attrs({})
    .category(kCF)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_fixed_type(DType::kInt64));
SDX_OP_SCHEMA(ConcatFromSequence)
    .attrs({{"axis", AttrType::kInt}, {"new_axis", AttrType::kInt}})
    .category(kCF)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent();
SDX_OP_SCHEMA(SplitToSequence)
    .attrs({{"axis", AttrType::kInt}, {"keepdims", AttrType::kInt}})
    .category(kCF)
    .inputs(1, 2)
    .outputs(1, 1)
    .data_dependent();
SDX_OP_SCHEMA(SequenceMap)
    .attrs({{"body", AttrType::kGraph}})
    .category(kCF)
    .inputs(1, INT_MAX)
    .outputs(1, INT_MAX)
    .data_dependent();
SDX_OP_SCHEMA(Optional)
    .attrs({{"type", AttrType::kTypeProto}})
    .category(kCF)
    .inputs(0, 1)
    .outputs(1, 1)
    .data_dependent();
SDX_OP_SCHEMA(OptionalHasElement)
    .attrs({})
    .category(kCF)
    .inputs(0, 1)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_fixed_type(DType::kBool));
SDX_OP_SCHEMA(OptionalGetElement).attrs({}).category(kCF).inputs(1, 1).outputs(1, 1).data_dependent();
}  // namespace
}  // namespace sdx::ir
