// Arithmetic cost rules for OpSchema::flops: the floating-point operations (a multiply-add counts 2) of one
// execution, from frozen shapes. They count the work the op defines, not what a kernel happens to do.
//
//   SDX_OP_SCHEMA(MatMul)...flops(flops_matmul);
#pragma once

#include <vector>

#include "core/shape.h"
#include "ir/graph.h"

namespace sdx::ir {

// 2 * numel(Y) * K, K = A's last dim (MatMul, sdx.Linear: X [..., K]).
double flops_matmul(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out);
// 2 * numel(Y) * K, K = A's dim 1 (dim 0 when transA).
double flops_gemm(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out);
// 2 * numel(Y) * numel(W) / W[0]: each output element is a dot product over (C / group) * kernel size.
double flops_conv(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out);
// 2 * numel(X) * numel(W) / W[0]: each input element is scattered over (M / group) * kernel size outputs.
double flops_conv_transpose(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out);
// 4 * numel(Q) * S_kv (Q K^T and P V), S_kv = K's dim -2 for 4-D K, dim 1 for 3-D.
double flops_attention(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out);

}  // namespace sdx::ir
