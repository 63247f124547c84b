// Schemas for control flow, sequence and optional operators. All are GAPs in a
// captured plan: their output shapes depend on data or on subgraph execution (an If only while its
// condition is not fixed for the input shapes).
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {
constexpr auto kCF = OpCategory::kControlFlow;

// If's outputs: where both branches give a tensor of one element type, a tensor of that type; dims
// both branches fix to one value stay fixed, the others become unknown (ranks differ: no shape).
Status infer_if(Node& n) {
  const Attribute* t = n.attr("then_branch");
  const Attribute* e = n.attr("else_branch");
  if (!t || !t->g || !e || !e->g) return Status::ok();  // the verifier reports it
  for (int i = 0; i < n.num_outputs(); ++i) {
    Value* out = n.output(i);
    if (!out || out->type().kind != TypeInfo::Kind::kUnknown) continue;
    if (static_cast<size_t>(i) >= t->g->outputs().size() || static_cast<size_t>(i) >= e->g->outputs().size()) break;
    const TypeInfo& a = t->g->outputs()[static_cast<size_t>(i)]->type();
    const TypeInfo& b = e->g->outputs()[static_cast<size_t>(i)]->type();
    if (a.kind != TypeInfo::Kind::kTensor || b.kind != TypeInfo::Kind::kTensor || a.elem != b.elem ||
        a.elem == DType::kUndefined)
      continue;
    std::optional<std::vector<Dim>> shape;
    if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
      shape.emplace();
      for (size_t d = 0; d < a.shape->size(); ++d) {
        const Dim& x = (*a.shape)[d];
        const Dim& y = (*b.shape)[d];
        if (x.is_fixed() && y.is_fixed() && x.value == y.value)
          shape->push_back(x);
        else if (!x.is_fixed() && !y.is_fixed() && !x.param.empty() && x.param == y.param)
          shape->push_back(x);
        else
          shape->push_back(Dim::symbolic(""));
      }
    }
    out->mutable_type() = TypeInfo::tensor(a.elem, std::move(shape));
  }
  return Status::ok();
}

SDX_OP_SCHEMA(If)
    .attrs({{"else_branch", AttrType::kGraph}, {"then_branch", AttrType::kGraph}})
    .category(kCF)
    .inputs(1, 1)
    .outputs(1, INT_MAX)
    // The branch is chosen by the condition's value; with the condition fixed for a given input-shape
    // signature (computed from shapes), each replay takes the same branch and the outputs are expected to
    // keep their shapes: they get frozen memory, and a replay whose If changed one stops replaying.
    .data_dependent_on({0})
    .infer(infer_if);
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
