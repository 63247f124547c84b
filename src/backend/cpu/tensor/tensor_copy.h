// Whole-element copies between tensors of the same type (numeric, bool or string),
// used by control flow (stacking Loop/Scan outputs, slicing Scan inputs).
//
//   copy_elements(src, src_offset, dst, dst_offset, count);
//   SDX_ASSIGN_OR_RETURN(Tensor s, stack_tensors(items, DType::kFloat32), "scan output");
#pragma once

#include <vector>

#include "core/tensor.h"

namespace sdx::cpu {

// Copies `count` elements; offsets and count are in elements. Types must match and be byte-addressable or string.
void copy_elements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count);

// Stacks equally shaped tensors along a new leading axis. With no items, returns shape [0] of `empty_type`.
Result<Tensor> stack_tensors(const std::vector<Tensor>& items, DType empty_type);

// Moves axis `axis` of t to position `to` (a transpose), copying.
Result<Tensor> move_axis(const Tensor& t, int axis, int to);

}  // namespace sdx::cpu
