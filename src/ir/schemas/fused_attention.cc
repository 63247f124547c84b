// Schema of sdx.Attention (domain "sdx", opset 1): scaled dot-product attention over inputs that are
// already split into heads, produced by AttentionFusionOptimizations from the exporter pattern
// MatMul(Q, K^T) / scale / mask / Softmax / MatMul(P, V); CPU kernel in backend/cpu/kernels/fused_attention.cc.
//
//   inputs:  Q [B, H, S_q, D], K [B|1, H|1, S_kv, D], V [B|1, H|1, S_kv, Dv],
//            mask (optional) broadcastable to [B, H, S_q, S_kv]: bool (true = keep) or additive (Q's type)
//   output:  Y [B, H, S_q, Dv], Q's element type
//   attrs:   scale (float, default 1/sqrt(D)); causal (int 0/1: query i sees keys j <= i + S_kv - S_q, the
//            bottom-right / KV-cache alignment); mask_value (float, default -inf: the score of a key a bool
//            mask hides, as Where(mask, scores, mask_value) gives)
//
// Y[b,h,i] = softmax_j(s_ij) . V[b,h] with s_ij = scale * Q[b,h,i].K[b,h,j], then + mask (additive) or
// mask_value where the bool mask is false; keys past the causal limit are left out of the softmax. A row
// with no key inside the causal limit is zero; a row whose scores are all -inf is NaN (as Softmax gives).
#include "ir/op_cost.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {

SDX_OP_SCHEMA_DOMAIN(Attention, "sdx")
    .attrs({{"causal", AttrType::kInt}, {"mask_value", AttrType::kFloat}, {"scale", AttrType::kFloat}})
    .category(OpCategory::kAttention)
    .inputs(3, 4)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_attention)
    .flops(flops_attention);

}  // namespace sdx::ir
