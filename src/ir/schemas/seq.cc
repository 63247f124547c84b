// Schemas of the attention, recurrent and signal-processing ops (the "seq" family).
#include "ir/op_cost.h"
#include "ir/op_schema.h"

namespace sdx::ir {

// Attention and friends. Output shapes follow from input shapes alone.
SDX_OP_SCHEMA(Attention)
    .attrs({{"is_causal", AttrType::kInt},
            {"kv_num_heads", AttrType::kInt},
            {"left_window_size", AttrType::kInt},
            {"q_num_heads", AttrType::kInt},
            {"qk_matmul_output_mode", AttrType::kInt},
            {"right_window_size", AttrType::kInt},
            {"scale", AttrType::kFloat},
            {"softcap", AttrType::kFloat},
            {"softmax_precision", AttrType::kInt}})
    .category(OpCategory::kAttention)
    .inputs(3, 7)
    .outputs(1, 4)
    .infer(infer_same_as_input(0))
    .flops(flops_attention);
SDX_OP_SCHEMA_DOMAIN(FlexAttention, "ai.onnx.preview")
    .attrs({{"prob_mod", AttrType::kGraph},
            {"scale", AttrType::kFloat},
            {"score_mod", AttrType::kGraph},
            {"softmax_precision", AttrType::kInt}})
    .category(OpCategory::kAttention)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LinearAttention)
    .attrs({{"chunk_size", AttrType::kInt},
            {"kv_num_heads", AttrType::kInt},
            {"q_num_heads", AttrType::kInt},
            {"scale", AttrType::kFloat},
            {"update_rule", AttrType::kString}})
    .category(OpCategory::kAttention)
    .inputs(3, 6)
    .outputs(2, 2)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(RotaryEmbedding)
    .attrs({{"interleaved", AttrType::kInt}, {"num_heads", AttrType::kInt}, {"rotary_embedding_dim", AttrType::kInt}})
    .category(OpCategory::kElementwise)
    .inputs(3, 4)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(SwiGLU)
    .attrs({{"alpha", AttrType::kFloat}})
    .category(OpCategory::kElementwise)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(TensorScatter)
    .attrs({{"axis", AttrType::kInt}, {"mode", AttrType::kString}})
    .category(OpCategory::kScatter)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(CausalConvWithState)
    .attrs({{"activation", AttrType::kString}})
    .category(OpCategory::kConv)
    .inputs(2, 4)
    .outputs(2, 2)
    .infer(infer_same_as_input(0));

// Recurrent networks: the outputs are optional.
SDX_OP_SCHEMA(RNN)
    .attrs({{"activation_alpha", AttrType::kFloats},
            {"activation_beta", AttrType::kFloats},
            {"activations", AttrType::kStrings},
            {"clip", AttrType::kFloat},
            {"direction", AttrType::kString},
            {"hidden_size", AttrType::kInt},
            {"layout", AttrType::kInt},
            {"output_sequence", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(3, 6)
    .outputs(0, 2)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GRU)
    .attrs({{"activation_alpha", AttrType::kFloats},
            {"activation_beta", AttrType::kFloats},
            {"activations", AttrType::kStrings},
            {"clip", AttrType::kFloat},
            {"direction", AttrType::kString},
            {"hidden_size", AttrType::kInt},
            {"layout", AttrType::kInt},
            {"linear_before_reset", AttrType::kInt},
            {"output_sequence", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(3, 6)
    .outputs(0, 2)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(LSTM)
    .attrs({{"activation_alpha", AttrType::kFloats},
            {"activation_beta", AttrType::kFloats},
            {"activations", AttrType::kStrings},
            {"clip", AttrType::kFloat},
            {"direction", AttrType::kString},
            {"hidden_size", AttrType::kInt},
            {"input_forget", AttrType::kInt},
            {"layout", AttrType::kInt},
            {"output_sequence", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(3, 8)
    .outputs(0, 3)
    .infer(infer_same_as_input(0));
// onnxruntime's dynamically quantized LSTM: W [dirs, input, 4H] and R [dirs, H, 4H] int8/uint8, then
// (after LSTM's B, sequence_lens, initial_h, initial_c, P) W_scale, W_zero_point, R_scale, R_zero_point.
SDX_OP_SCHEMA_DOMAIN(DynamicQuantizeLSTM, "com.microsoft")
    .attrs({{"activation_alpha", AttrType::kFloats},
            {"activation_beta", AttrType::kFloats},
            {"activations", AttrType::kStrings},
            {"clip", AttrType::kFloat},
            {"direction", AttrType::kString},
            {"hidden_size", AttrType::kInt},
            {"input_forget", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(12, 12)
    .outputs(0, 3)
    .infer(infer_same_as_input(0));

// Signal processing. Window sizes, DFT lengths and the mel matrix depend on input values.
SDX_OP_SCHEMA(DFT)
    .attrs({{"axis", AttrType::kInt}, {"inverse", AttrType::kInt}, {"onesided", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(1, 3)
    .outputs(1, 1)
    .data_dependent_on({1, 2})
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(STFT)
    .attrs({{"onesided", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(2, 4)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(HannWindow)
    .attrs({{"output_datatype", AttrType::kInt}, {"periodic", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent_on({0});
SDX_OP_SCHEMA(HammingWindow)
    .attrs({{"output_datatype", AttrType::kInt}, {"periodic", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent_on({0});
SDX_OP_SCHEMA(BlackmanWindow)
    .attrs({{"output_datatype", AttrType::kInt}, {"periodic", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .data_dependent_on({0});
SDX_OP_SCHEMA(MelWeightMatrix)
    .attrs({{"output_datatype", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(5, 5)
    .outputs(1, 1)
    .data_dependent_on({0, 1, 2, 3, 4});

}  // namespace sdx::ir
