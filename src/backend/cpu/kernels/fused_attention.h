// Blocking of the CPU kernel of sdx.Attention (kernels/fused_attention.cc, schema in
// ir/schemas/fused_attention.cc), exposed so tests can check that its scratch memory does not grow
// with the sequence lengths.
//
// The kernel streams the softmax (FlashAttention-style): for a block of at most kAttentionBlockQ query
// rows it walks the keys in blocks of at most kAttentionBlockKv, computes that block of scores with one
// GEMM, folds it into a running row maximum and row sum (rescaling the partial output rows already
// accumulated in the output buffer when the maximum grows) and adds P . V_block with a second GEMM.
// The full S_q x S_kv score matrix never exists.
//
//   int64_t n = cpu::fused_attention_scratch_bytes(sizeof(float), /*s_q=*/4096, /*s_kv=*/4096, /*d=*/64, /*dv=*/64);
//   // n is the same as for s_q = s_kv = 128: one block of scores plus GEMM packing space.
#pragma once

#include <cstdint>

namespace sdx::cpu {

inline constexpr int64_t kAttentionBlockQ = 64;    // query rows per block
inline constexpr int64_t kAttentionBlockKv = 128;  // keys per block

// Scratch bytes one call of the kernel uses for these sizes, with elements of elem_size bytes (4: float,
// 8: double): a score block, the running row maxima and sums and the GEMM workspace. Bounded by the block
// sizes and the head dims, whatever s_q and s_kv are.
int64_t fused_attention_scratch_bytes(int64_t elem_size, int64_t s_q, int64_t s_kv, int64_t d, int64_t dv);

}  // namespace sdx::cpu
