// Schemas of the neural-network ops (matmul, conv, pooling, resampling, detection).
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {

// Output 0 takes the element type of input 0; further outputs are int64 (MaxPool Indices).
Status infer_first_same_rest_int64(Node& node) {
  Value* in = node.input(0);
  for (int i = 0; i < node.num_outputs(); ++i) {
    Value* out = node.output(i);
    if (!out || out->type().kind != TypeInfo::Kind::kUnknown) continue;
    if (i == 0) {
      if (in) out->mutable_type() = TypeInfo::tensor(in->type().elem);
    } else {
      out->mutable_type() = TypeInfo::tensor(DType::kInt64);
    }
  }
  return Status::ok();
}

}  // namespace

SDX_OP_SCHEMA(MatMul).category(OpCategory::kMatMul).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Gemm).category(OpCategory::kMatMul).inputs(2, 3).outputs(1, 1).infer(infer_same_as_input(0));

SDX_OP_SCHEMA(Conv).category(OpCategory::kConv).inputs(2, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(ConvTranspose).category(OpCategory::kConv).inputs(2, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(DeformConv).category(OpCategory::kConv).inputs(3, 5).outputs(1, 1).infer(infer_same_as_input(0));

SDX_OP_SCHEMA(AveragePool).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(MaxPool).category(OpCategory::kOther).inputs(1, 1).outputs(1, 2).infer(infer_first_same_rest_int64);
SDX_OP_SCHEMA(LpPool).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GlobalAveragePool).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GlobalMaxPool).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GlobalLpPool).category(OpCategory::kReduction).inputs(1, 1).outputs(1, 1)
    .infer(infer_same_as_input(0));
// The output shape may come from the optional output_shape input.
SDX_OP_SCHEMA(MaxUnpool).category(OpCategory::kScatter).inputs(2, 3).outputs(1, 1).data_dependent()
    .infer(infer_same_as_input(0));

// Output sizes come from the scales/sizes input values.
SDX_OP_SCHEMA(Resize).category(OpCategory::kOther).inputs(1, 4).outputs(1, 1).data_dependent()
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Upsample).category(OpCategory::kOther).inputs(1, 2).outputs(1, 1).data_dependent()
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GridSample).category(OpCategory::kGather).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
// The output shape is the value of the size input.
SDX_OP_SCHEMA(AffineGrid).category(OpCategory::kOther).inputs(2, 2).outputs(1, 1).data_dependent()
    .infer(infer_same_as_input(0));

SDX_OP_SCHEMA(RoiAlign).category(OpCategory::kOther).inputs(3, 3).outputs(1, 1).infer(infer_same_as_input(0));
// The number of selected boxes depends on the scores.
SDX_OP_SCHEMA(NonMaxSuppression).category(OpCategory::kOther).inputs(2, 5).outputs(1, 1).data_dependent()
    .infer(infer_fixed_type(DType::kInt64));

}  // namespace sdx::ir
