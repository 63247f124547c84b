// Schemas of the attention, recurrent and signal-processing ops (the "seq" family).
#include "ir/op_schema.h"

namespace sdx::ir {

// Attention and friends. Output shapes follow from input shapes alone.
SDX_OP_SCHEMA(Attention).category(OpCategory::kAttention).inputs(3, 7).outputs(1, 4).infer(infer_same_as_input(0));
SDX_OP_SCHEMA_DOMAIN(FlexAttention, "ai.onnx.preview").category(OpCategory::kAttention).inputs(3, 3).outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LinearAttention).category(OpCategory::kAttention).inputs(3, 6).outputs(2, 2).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(RotaryEmbedding).category(OpCategory::kElementwise).inputs(3, 4).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(SwiGLU).category(OpCategory::kElementwise).inputs(2, 2).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(TensorScatter).category(OpCategory::kScatter).inputs(2, 3).outputs(1, 1).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(CausalConvWithState).category(OpCategory::kConv).inputs(2, 4).outputs(2, 2).infer(infer_same_as_input(0));

// Recurrent networks: the outputs are optional.
SDX_OP_SCHEMA(RNN).category(OpCategory::kOther).inputs(3, 6).outputs(0, 2).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GRU).category(OpCategory::kOther).inputs(3, 6).outputs(0, 2).infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LSTM).category(OpCategory::kOther).inputs(3, 8).outputs(0, 3).infer(infer_same_as_input(0));

// Signal processing. Window sizes, DFT lengths and the mel matrix depend on input values.
SDX_OP_SCHEMA(DFT).category(OpCategory::kOther).inputs(1, 3).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(STFT).category(OpCategory::kOther).inputs(2, 4).outputs(1, 1).data_dependent().infer(infer_same_as_input(0));
SDX_OP_SCHEMA(HannWindow).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(HammingWindow).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(BlackmanWindow).category(OpCategory::kOther).inputs(1, 1).outputs(1, 1).data_dependent();
SDX_OP_SCHEMA(MelWeightMatrix).category(OpCategory::kOther).inputs(5, 5).outputs(1, 1).data_dependent();

}  // namespace sdx::ir
