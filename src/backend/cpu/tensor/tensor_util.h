// Helpers shared by the tensor-manipulation kernels (tensor_*.cc): element-size
// dispatch for ops that only move elements, and the two copy engines most of them
// reduce to. Reading shape/axes/index inputs is in tensor_values.h.
//
//   SDX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, read_int64s(ctx.input(1), "axes"), "");
//   return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
//     using T = typename decltype(tag)::type;   // uint8_t..uint64_t, Storage128 or std::string
//     strided_copy(x.data<T>(), 0, in_strides, out_dims, y.data<T>());
//     return Status::ok();
//   }, "Transpose");
//
// Moving ops (Transpose, Slice, Gather, ...) never look at element values, so they
// dispatch on the element's storage size and work for every byte-addressable dtype
// plus strings with one instantiation per size.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/collapse_dims.h"
#include "backend/cpu/tensor/small_buffer.h"
#include "core/tensor_values.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx::cpu {

// 16-byte element (complex128) for element moves.
struct Storage128 {
  uint64_t lo, hi;
};

// Calls fn(TypeTag<T>) where T has the storage size of dtype (or std::string).
template <typename F>
Status dispatch_storage(DType dtype, F&& fn, const std::string& op) {
  if (dtype == DType::kString) return fn(TypeTag<std::string>{});
  if (dtype_is_byte_addressable(dtype)) {
    switch (dtype_bits(dtype)) {
      case 8: return fn(TypeTag<uint8_t>{});
      case 16: return fn(TypeTag<uint16_t>{});
      case 32: return fn(TypeTag<uint32_t>{});
      case 64: return fn(TypeTag<uint64_t>{});
      case 128: return fn(TypeTag<Storage128>{});
      default: break;
    }
  }
  return unimplemented(op + " does not support element type " + dtype_name(dtype));
}

// Normalizes a possibly negative index into [0, dim); fails naming `what` when out of range.
inline Status normalize_index(int64_t& idx, int64_t dim, const char* what) {
  if (idx < -dim || idx >= dim)
    return invalid_argument(std::string(what) + " index " + std::to_string(idx) + " is out of range for dimension of size " +
                            std::to_string(dim));
  if (idx < 0) idx += dim;
  return Status::ok();
}

// Copies n elements (works for strings too).
template <typename T>
void copy_n(const T* src, int64_t n, T* dst) {
  if constexpr (std::is_trivially_copyable_v<T>) {
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// Walks an output with out_dims (row-major) viewed onto an input through
// in_offset = base + sum(i_d * in_strides[d]) (strides may be 0 or negative), one run
// along the innermost dim at a time: fn(out_offset, in_offset, in_step, count). The dims are
// collapsed first (collapse_dims.h: Slice keeping whole rows, a trailing [.., 1]), so a run is as
// long as the layout allows.
template <typename F>
void for_each_strided_run(int64_t base, const std::vector<int64_t>& in_strides, const std::vector<int64_t>& out_dims,
                          F&& fn) {
  const int full_rank = static_cast<int>(out_dims.size());
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  // No allocation up to rank 8 (bound kernels).
  SmallBuffer<int64_t, 8> dims(static_cast<size_t>(full_rank) + 1, 1), strides(static_cast<size_t>(full_rank) + 1, 0);
  const size_t rank = collapse_dims(out_dims, in_strides, dims, strides);
  if (rank == 0) {
    fn(int64_t{0}, base, int64_t{0}, int64_t{1});
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  SmallBuffer<int64_t, 8> idx(rank, 0);
  int64_t in = base;
  for (int64_t out = 0; out < total; out += inner) {
    fn(out, in, inner_stride, inner);
    // Advance the outer counter (dims 0..rank-2).
    for (size_t d = rank - 1; d-- > 0;) {
      in += strides[d];
      if (++idx[d] < dims[d]) break;
      in -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

// Per element: fn(out_offset, in_offset).
template <typename F>
void for_each_strided(int64_t base, const std::vector<int64_t>& in_strides, const std::vector<int64_t>& out_dims, F&& fn) {
  for_each_strided_run(base, in_strides, out_dims, [&](int64_t out, int64_t in, int64_t step, int64_t n) {
    for (int64_t k = 0; k < n; ++k) fn(out + k, in + k * step);
  });
}

// dst (contiguous, out_dims) = src viewed through (base, in_strides).
template <typename T>
void strided_copy(const T* src, int64_t base, const std::vector<int64_t>& in_strides, const std::vector<int64_t>& out_dims,
                  T* dst) {
  for_each_strided_run(base, in_strides, out_dims, [&](int64_t out, int64_t in, int64_t step, int64_t n) {
    if (step == 1) {
      copy_n(src + in, n, dst + out);
    } else {
      for (int64_t k = 0; k < n; ++k) dst[out + k] = src[in + k * step];
    }
  });
}

// Copies every element of src into dst (same dtype, same numel).
inline Status copy_tensor(const Tensor& src, Tensor& dst, const std::string& op) {
  if (src.dtype() != DType::kString) {
    if (src.nbytes() > 0) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return Status::ok();
  }
  copy_n(src.data<std::string>(), src.numel(), dst.data<std::string>());
  (void)op;
  return Status::ok();
}

// Output dims from a validated int64 vector.
inline Result<Shape> make_shape(std::vector<int64_t> dims, const std::string& what) {
  for (int64_t d : dims)
    if (d < 0) return invalid_argument(what + " has a negative dimension: " + dims_to_string(dims));
  return Shape::make(std::move(dims));
}

}  // namespace sdx::cpu
