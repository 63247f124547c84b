// Schema of sdx.PagedAttention (domain "sdx", opset 1): attention of a decoder step whose past keys and
// values live in a shared pool of slots (a paged KV cache) instead of a past tensor per sequence; made by
// the paged rewrite of sdx.generate (python/sdx/_paged_graph.py) from an exporter's Concat(past, new) ->
// attention; CPU kernel in backend/cpu/kernels/paged_attention.cc.
//
//   inputs:  Q [B, H, S, D], K_new [B, H_kv, S, D], V_new [B, H_kv, S, Dv] (this step's keys and values),
//            K_cache [H_kv, slots, D], V_cache [H_kv, slots, Dv] (the pool), slot_map [B, P] int64 (the
//            pool slot of past token t of sequence b; -1: no token there; -2 - j: this call's new token j,
//            row j / S, position j % S of K_new / V_new, so one call can hold several tokens of a sequence
//            as rows of their own), mask (optional) broadcastable to [B, H, S, P + S]: bool (true =
//            keep) or additive float
//   output:  Y [B, H, S, Dv]
//   attrs:   scale (float, default 1/sqrt(D)); causal (int 0/1, default 1: query i sees new key j <= i; every
//            past token is visible); mask_value (float, default -inf: the score of a key a bool mask hides)
//
// The keys of sequence b are its past tokens (K_cache[h / (H / H_kv), slot_map[b, t]] for t < P; a zero
// key and value where the entry is -1, K_new's token j where it is -2 - j) followed by K_new[b]; mask
// position t < P is past token t, P + j is new key j. It is sdx.Attention over sdx.PagedConcat(K_cache,
// slot_map, K_new) and the same for V, with the same mask and causal, without the gathered tensors
// (AttentionFusionOptimizations makes it from that form).
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {

SDX_OP_SCHEMA_DOMAIN(PagedAttention, "sdx")
    .attrs({{"causal", AttrType::kInt}, {"mask_value", AttrType::kFloat}, {"scale", AttrType::kFloat}})
    .category(OpCategory::kAttention)
    .inputs(6, 7)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_attention);

}  // namespace sdx::ir
