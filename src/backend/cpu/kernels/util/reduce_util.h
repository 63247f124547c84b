// Helpers shared by the reduction / normalization kernels (reduce_*, norm_*,
// softmax*, loss_*): axis normalization, reading an axes input tensor, and a
// ReducePlan that walks an input in row-major order telling the caller which
// output element each input element reduces into.
//
//   SDX_ASSIGN_OR_RETURN(std::vector<int> axes, normalize_axes(raw_axes, x.rank()), "ReduceSum");
//   ReducePlan plan(x.shape(), axes);           // dims not in axes are kept
//   plan.for_each_run([&](int64_t out, int64_t in, int64_t n, int64_t out_step) {
//     for (int64_t k = 0; k < n; ++k) acc[out + k * out_step] += px[in + k];
//   });
//   Shape y_shape = plan.output_shape(keepdims);
//
// Adjacent dims that are both reduced or both kept are merged first, so the
// common layouts (reduce the last dim, reduce everything, reduce a middle dim)
// run as long contiguous runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/small_buffer.h"
#include "core/tensor_values.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx::cpu {

// Normalizes axes in [-rank, rank) to sorted unique [0, rank); fails on an
// out-of-range or repeated axis, naming it.
inline Result<std::vector<int>> normalize_axes(const std::vector<int64_t>& axes, int rank) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return invalid_argument("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    int n = static_cast<int>(a < 0 ? a + rank : a);
    if (std::find(out.begin(), out.end(), n) != out.end())
      return invalid_argument("axis " + std::to_string(a) + " is repeated");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Reads a 1-D (or scalar) int32/int64 tensor of integers, e.g. an `axes` input.
inline Result<std::vector<int64_t>> read_int_list(const Tensor& t, const std::string& what) {
  if (t.rank() > 1) return invalid_argument(what + " must be 1-D, got shape " + t.shape().to_string());
  return read_int64s(t, what, IntTypes::kInt32Or64);
}

class ReducePlan {
 public:
  // axes: sorted unique normalized axes (from normalize_axes).
  ReducePlan(const Shape& in, const std::vector<int>& axes) : in_(in) {
    const int rank = in.rank();
    reduced_.assign(static_cast<size_t>(rank), false);
    for (int a : axes) reduced_[static_cast<size_t>(a)] = true;
    reduce_count_ = 1;
    for (int d = 0; d < rank; ++d)
      if (reduced_[static_cast<size_t>(d)]) reduce_count_ *= in.dim(d);
    // Collapse: drop size-1 dims, merge neighbours with the same kind.
    for (int d = 0; d < rank; ++d) {
      int64_t n = in.dim(d);
      if (n == 1) continue;
      bool r = reduced_[static_cast<size_t>(d)];
      if (!dims_.empty() && kinds_.back() == r) {
        dims_.back() *= n;
      } else {
        dims_.push_back(n);
        kinds_.push_back(r);
      }
    }
    // Output strides per collapsed dim (0 for reduced dims).
    ostr_.assign(dims_.size(), 0);
    int64_t s = 1;
    for (size_t i = dims_.size(); i-- > 0;) {
      if (!kinds_[i]) {
        ostr_[i] = s;
        s *= dims_[i];
      }
    }
  }

  // True when the input is [rows, n] with every output element reducing one contiguous row of
  // n elements (the reduced dims are the innermost ones, or everything): rows, n receive the sizes.
  bool contiguous_rows(int64_t& rows, int64_t& n) const {
    if (in_.numel() == 0) return false;
    if (dims_.size() == 1 && kinds_[0]) {
      rows = 1;
      n = dims_[0];
      return true;
    }
    if (dims_.size() == 2 && !kinds_[0] && kinds_[1]) {
      rows = dims_[0];
      n = dims_[1];
      return true;
    }
    return false;
  }

  // Elements reduced into each output element (product of the reduced dims).
  int64_t reduce_count() const { return reduce_count_; }
  int64_t output_numel() const { return output_shape(false).numel(); }
  Shape output_shape(bool keepdims) const { return Shape(out_dims(keepdims)); }

  // fn(int64_t out_offset, int64_t in_offset, int64_t count, int64_t out_step): input
  // elements in_offset + k (k < count) reduce into output out_offset + k * out_step.
  template <typename F>
  void for_each_run(F&& fn) const {
    if (in_.numel() == 0) return;
    const size_t rank = dims_.size();
    if (rank == 0) {
      fn(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0});
      return;
    }
    const size_t inner = rank - 1;
    const int64_t count = dims_[inner];
    const int64_t ostep = ostr_[inner];
    const int64_t outer = in_.numel() / count;
    SmallBuffer<int64_t, 8> ctr(rank, 0);  // no allocation up to collapsed rank 8 (bound kernels)
    int64_t out = 0;
    for (int64_t r = 0, in = 0; r < outer; ++r, in += count) {
      fn(out, in, count, ostep);
      for (size_t d = inner; d-- > 0;) {
        if (++ctr[d] < dims_[d]) {
          out += ostr_[d];
          break;
        }
        out -= ostr_[d] * (dims_[d] - 1);
        ctr[d] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> out_dims(bool keepdims) const {
    std::vector<int64_t> o;
    for (int d = 0; d < in_.rank(); ++d) {
      if (!reduced_[static_cast<size_t>(d)]) o.push_back(in_.dim(d));
      else if (keepdims) o.push_back(1);
    }
    return o;
  }

  Shape in_;
  std::vector<bool> reduced_;
  int64_t reduce_count_ = 1;
  std::vector<int64_t> dims_;
  std::vector<bool> kinds_;  // true = reduced
  std::vector<int64_t> ostr_;
};

// Accumulation type: double for every float type (cheap, and keeps sums of
// float16/float32 accurate), 64-bit integers for integer types.
template <typename T>
using accum_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double,
                                   std::conditional_t<std::is_signed_v<compute_t<T>>, int64_t, uint64_t>>;

// exp(x) for float without a libm call, so loops over it vectorize. Cephes-style:
// x = n ln2 + r, |r| <= ln2/2, degree-5 polynomial; about 1-2 ulp. Returns 0 below
// -87.3 (no denormals), +inf above 88.72, NaN for NaN; inputs in (88.37, 88.72]
// saturate at exp(88.37) (2^n must stay finite). Meant for softmax-style x <= 0.
inline float fast_expf(float x) {
  const float xc = x < -87.3f ? -87.3f : (x > 88.37f ? 88.37f : x);
  const float fx = xc * 1.44269504088896341f;
  const float r = (fx + 12582912.f) - 12582912.f;  // round to nearest (|fx| < 2^22)
  float t = xc - r * 0.693359375f;
  t = t + r * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * t + 1.3981999507e-3f;
  p = p * t + 8.3334519073e-3f;
  p = p * t + 4.1665795894e-2f;
  p = p * t + 1.6666665459e-1f;
  p = p * t + 5.0000001201e-1f;
  const float y = p * t * t + t + 1.0f;
  const int32_t n = static_cast<int32_t>(r);
  const float scale = bits_float(static_cast<uint32_t>(n + 127) << 23);
  const float out = y * scale;
  return x < -87.3f ? 0.0f : (x > 88.72f ? std::numeric_limits<float>::infinity() : (x != x ? x : out));
}

// Splits a shape at `axis`: outer = prod(dims[:axis]), inner = prod(dims[axis:]).
inline void split_at(const Shape& s, int axis, int64_t& outer, int64_t& inner) {
  outer = s.size_between(0, axis);
  inner = s.size_between(axis, s.rank());
}

}  // namespace sdx::cpu
