// Window geometry shared by the NN kernels (Conv, ConvTranspose, pools, DeformConv).
//
//   SDX_ASSIGN_OR_RETURN(AutoPad ap, parse_auto_pad(node.attr_string("auto_pad", "NOTSET")), "auto_pad");
//   WindowGeometry g;  // kernel/strides/dilations/pads filled from attributes (or defaults)
//   SDX_RETURN_IF_ERROR(g.resolve(in_spatial, ap, /*ceil_mode=*/false), "Conv");
//   // g.out[i]: output size of spatial dim i; g.pads[i] / g.pads[n + i]: begin / end padding used.
//
// Also holds small helpers shared by the NN kernels: ComputeView/ComputeOut (16-bit
// floats compute in float) and product(). Value reading/conversion (read_doubles,
// load_as<double>) is in tensor_values.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "core/tensor_values.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace sdx::cpu {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

inline Result<AutoPad> parse_auto_pad(const std::string& s) {
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  return invalid_argument("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + s + "'");
}

// Sliding-window parameters over n spatial dims.
struct WindowGeometry {
  std::vector<int64_t> kernel;     // n
  std::vector<int64_t> strides;    // n (default 1)
  std::vector<int64_t> dilations;  // n (default 1)
  std::vector<int64_t> pads;       // 2n: begins then ends (attribute value, then resolved)
  std::vector<int64_t> out;        // n, set by resolve()

  int rank() const { return static_cast<int>(kernel.size()); }
  int64_t window(int i) const { return (kernel[i] - 1) * dilations[i] + 1; }

  // Reads strides/dilations/pads attributes for a kernel of rank n (kernel must be set).
  Status read_attrs(const ir::Node& node) {
    return set_params(node.attr_ints("strides"), node.attr_ints("dilations"), node.attr_ints("pads"));
  }

  // Sets strides/dilations/pads (empty means the default: 1, 1, 0) and validates them
  // against the kernel rank.
  Status set_params(std::vector<int64_t> s, std::vector<int64_t> d, std::vector<int64_t> p) {
    const size_t n = kernel.size();
    strides = s.empty() ? std::vector<int64_t>(n, 1) : std::move(s);
    dilations = d.empty() ? std::vector<int64_t>(n, 1) : std::move(d);
    pads = p.empty() ? std::vector<int64_t>(2 * n, 0) : std::move(p);
    if (strides.size() != n) return invalid_argument("strides must have " + std::to_string(n) + " values");
    if (dilations.size() != n) return invalid_argument("dilations must have " + std::to_string(n) + " values");
    if (pads.size() != 2 * n) return invalid_argument("pads must have " + std::to_string(2 * n) + " values");
    for (size_t i = 0; i < n; ++i) {
      if (kernel[i] <= 0) return invalid_argument("kernel_shape values must be positive");
      if (strides[i] <= 0) return invalid_argument("strides must be positive");
      if (dilations[i] <= 0) return invalid_argument("dilations must be positive");
      if (pads[i] < 0 || pads[i + n] < 0) return invalid_argument("pads must be non-negative");
    }
    return Status::ok();
  }

  // Computes out[] and the effective pads for the given input spatial sizes.
  // ceil_mode (pools) rounds the output size up but never starts a window in the end padding.
  Status resolve(const std::vector<int64_t>& in, AutoPad auto_pad, bool ceil_mode) {
    const int n = rank();
    if (static_cast<int>(in.size()) != n) {
      return invalid_argument("input has " + std::to_string(in.size()) + " spatial dims but the kernel has " +
                              std::to_string(n));
    }
    out.assign(static_cast<size_t>(n), 0);
    for (int i = 0; i < n; ++i) {
      const int64_t w = window(i), s = strides[i];
      if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
        out[i] = (in[i] + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s + w - in[i]);
        const int64_t small = total / 2, big = total - small;
        pads[i] = auto_pad == AutoPad::kSameUpper ? small : big;
        pads[i + n] = auto_pad == AutoPad::kSameUpper ? big : small;
      } else {
        if (auto_pad == AutoPad::kValid) pads[i] = pads[i + n] = 0;
        const int64_t span = in[i] + pads[i] + pads[i + n] - w;
        if (span < 0)  // the spec and onnxruntime reject it; an empty output would hide the mistake
          return invalid_argument("the window of spatial dim " + std::to_string(i) + " (" + std::to_string(w) +
                                  " elements: kernel " + std::to_string(kernel[i]) + ", dilation " +
                                  std::to_string(dilations[i]) + ") is larger than the padded input (" +
                                  std::to_string(in[i] + pads[i] + pads[i + n]) + ")");
        if (ceil_mode && auto_pad != AutoPad::kValid) {
          out[i] = (span + s - 1) / s + 1;
          if ((out[i] - 1) * s >= in[i] + pads[i]) --out[i];
        } else {
          out[i] = span / s + 1;
        }
      }
    }
    return Status::ok();
  }
};

// Product of a list of sizes (1 for an empty list).
inline int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Reads input i as a contiguous buffer of compute_t<T> (copies only for 16-bit floats).
template <typename T>
class ComputeView {
 public:
  using C = compute_t<T>;
  explicit ComputeView(const Tensor& t) {
    const T* src = t.data<T>();
    if constexpr (std::is_same_v<T, C>) {
      ptr_ = src;
    } else {
      copy_.resize(static_cast<size_t>(t.numel()));
      for (int64_t i = 0; i < t.numel(); ++i) copy_[static_cast<size_t>(i)] = to_f32(src[i]);
      ptr_ = copy_.data();
    }
  }
  const C* data() const { return ptr_; }

 private:
  const C* ptr_ = nullptr;
  std::vector<C> copy_;
};

// Output buffer in compute_t<T>: writes go straight to the tensor unless T is a 16-bit float,
// in which case commit() converts a scratch buffer into the tensor.
template <typename T>
class ComputeOut {
 public:
  using C = compute_t<T>;
  explicit ComputeOut(Tensor& t) : t_(t) {
    if constexpr (std::is_same_v<T, C>) {
      ptr_ = t.data<T>();
    } else {
      copy_.assign(static_cast<size_t>(t.numel()), C(0));
      ptr_ = copy_.data();
    }
  }
  C* data() { return ptr_; }
  void commit() {
    if constexpr (!std::is_same_v<T, C>) {
      T* dst = t_.data<T>();
      for (size_t i = 0; i < copy_.size(); ++i) dst[i] = from_f32<T>(copy_[i]);
    }
  }

 private:
  Tensor& t_;
  C* ptr_ = nullptr;
  std::vector<C> copy_;
};

}  // namespace sdx::cpu
