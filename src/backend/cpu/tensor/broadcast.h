// Numpy-style multidirectional broadcasting for CPU kernels with N inputs.
//
// BroadcastPlan computes the output shape of N input shapes and walks the output
// in row-major order, telling the caller which element of every input feeds each
// output element. Dimensions are collapsed first (adjacent dims that broadcast the
// same way for every input are merged), so the common cases (same shapes, scalar
// operand, bias over the last dim) run as one or a few long contiguous runs.
//
//   SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({a.shape(), b.shape()}), "Add");
//   SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, a.dtype(), plan.output_shape()), "");
//   const float* pa = a.data<float>(); const float* pb = b.data<float>(); float* py = y.data<float>();
//   // Element-wise helper, one typed pointer per input (the usual case):
//   broadcast_map(plan, py, [](float x, float z) { return x + z; }, pa, pb);
//   // Or the raw run-wise walk, for kernels that need more control:
//   plan.for_each_run([&](int64_t out, const int64_t* in, const int64_t* step, int64_t n) {
//     for (int64_t k = 0; k < n; ++k) py[out + k] = pa[in[0] + k * step[0]] + pb[in[1] + k * step[1]];
//   });
//
// Expand-style use (one data input, a target shape): make({x.shape(), target}) and
// read only in_offsets[0] in for_each_run; the target needs no data pointer.
//
// A plan holds only shapes; build it in run() (shapes are known there) and use it
// from one thread at a time, or share it read-only: for_each_* are const. Bound
// kernels build it in prepare() and walk it on every replay: the walks allocate
// nothing while the collapsed rank and the number of inputs are at most 8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/tensor/small_buffer.h"
#include "core/shape.h"
#include "core/status.h"

namespace sdx::cpu {

class BroadcastPlan {
 public:
  BroadcastPlan() = default;

  // Broadcasts all input shapes together (numpy rules: align right, each dim equal
  // or 1). Fails naming the shapes when they are incompatible. At least one shape.
  static Result<BroadcastPlan> make(const std::vector<Shape>& inputs);

  const Shape& output_shape() const { return out_shape_; }
  int num_inputs() const { return num_inputs_; }
  int64_t numel() const { return out_shape_.numel(); }
  // True when input i has the output's shape exactly (it can be read linearly).
  bool is_identity(int i) const { return identity_[static_cast<size_t>(i)]; }
  // Element count of input i. Equal to numel(): the input reads linearly (same layout as the
  // output, up to size-1 dims); 1: one element feeds every output element.
  int64_t input_numel(int i) const { return in_numel_[static_cast<size_t>(i)]; }
  // Elements per for_each_run call (the innermost collapsed dim; 1 for a scalar output).
  int64_t run_length() const { return dims_.empty() ? 1 : dims_.back(); }

  // Visits the output in contiguous runs along the innermost collapsed dim:
  //   fn(int64_t out_offset, const int64_t* in_offsets, const int64_t* in_steps, int64_t count)
  // Output element out_offset + k (k < count) reads element in_offsets[i] + k * in_steps[i]
  // of input i; in_steps[i] is 0 (broadcast) or 1. No calls when the output is empty.
  template <typename F>
  void for_each_run(F&& fn) const {
    for_each_run(0, num_runs(), fn);
  }

  // Number of for_each_run calls: numel() / run_length() (0 for an empty output).
  int64_t num_runs() const { return out_shape_.numel() == 0 ? 0 : out_shape_.numel() / run_length(); }

  // Only runs [first, last) of for_each_run, with the same arguments: lets parallel chunks
  // each walk their own runs (cpu::parallel_for(plan.num_runs(), ...)).
  template <typename F>
  void for_each_run(int64_t first, int64_t last, F&& fn) const;

  // Per element: fn(int64_t out_offset, const int64_t* in_offsets).
  template <typename F>
  void for_each(F&& fn) const {
    SmallBuffer<int64_t, kInlineDims> idx(static_cast<size_t>(num_inputs_), 0);
    for_each_run([&](int64_t out, const int64_t* in, const int64_t* step, int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        for (int i = 0; i < num_inputs_; ++i) idx[static_cast<size_t>(i)] = in[i] + k * step[i];
        fn(out + k, idx.data());
      }
    });
  }

 private:
  // Collapsed rank / input count up to which the walks keep their counters on the stack.
  static constexpr size_t kInlineDims = 8;

  Shape out_shape_;
  int num_inputs_ = 0;
  std::vector<bool> identity_;
  std::vector<int64_t> in_numel_;
  // Collapsed iteration space: dims_[d] and strides_[i * rank + d] for input i (0 = broadcast).
  std::vector<int64_t> dims_;
  std::vector<int64_t> strides_;
};

namespace detail {
// A value read once and held (a copy when trivially copyable, so stores to out cannot alias it).
template <typename T>
using held_t = std::conditional_t<std::is_trivially_copyable_v<T>, const T, const T&>;

template <typename Out, typename Op, typename Ptrs, std::size_t... I>
void broadcast_map_impl(const BroadcastPlan& plan, int64_t first, int64_t last, Out* out, Op& op, const Ptrs& in,
                        std::index_sequence<I...>) {
  plan.for_each_run(first, last, [&](int64_t o, const int64_t* off, const int64_t* step, int64_t n) {
    Out* y = out + o;
    if (((step[I] == 1) && ...)) {  // every input contiguous: lets the compiler vectorize
      for (int64_t k = 0; k < n; ++k) y[k] = op(std::get<I>(in)[off[I] + k]...);
      return;
    }
    if constexpr (sizeof...(I) == 2) {
      // One input fixed along the run, the other contiguous ([N, 1] == [1, M], a one-hot's compare):
      // the fixed one is read once, so the loop vectorizes too.
      const auto* a = std::get<0>(in) + off[0];
      const auto* b = std::get<1>(in) + off[1];
      if (step[0] == 0 && step[1] == 1) {
        held_t<std::remove_cvref_t<decltype(a[0])>> av = a[0];
        for (int64_t k = 0; k < n; ++k) y[k] = op(av, b[k]);
        return;
      }
      if (step[0] == 1 && step[1] == 0) {
        held_t<std::remove_cvref_t<decltype(b[0])>> bv = b[0];
        for (int64_t k = 0; k < n; ++k) y[k] = op(a[k], bv);
        return;
      }
    }
    for (int64_t k = 0; k < n; ++k) y[k] = op(std::get<I>(in)[off[I] + k * step[I]]...);
  });
}
}  // namespace detail

// Applies op element-wise with broadcasting: out[j] = op(in0[..], in1[..], ...).
// One typed input pointer per plan input, in plan order; op returns something
// assignable to Out.
template <typename Out, typename Op, typename... In>
void broadcast_map(const BroadcastPlan& plan, Out* out, Op&& op, const In*... in) {
  detail::broadcast_map_impl(plan, 0, plan.num_runs(), out, op, std::tuple<const In*...>(in...),
                             std::index_sequence_for<In...>{});
}

// broadcast_map over runs [first, last) of for_each_run only (parallel chunks of the same map).
template <typename Out, typename Op, typename... In>
void broadcast_map_runs(const BroadcastPlan& plan, int64_t first, int64_t last, Out* out, Op&& op, const In*... in) {
  detail::broadcast_map_impl(plan, first, last, out, op, std::tuple<const In*...>(in...),
                             std::index_sequence_for<In...>{});
}

template <typename F>
void BroadcastPlan::for_each_run(int64_t first, int64_t last, F&& fn) const {
  if (out_shape_.numel() == 0 || first >= last) return;
  const int rank = static_cast<int>(dims_.size());
  const size_t n = static_cast<size_t>(num_inputs_);
  SmallBuffer<int64_t, kInlineDims> offs(n, 0), steps(n, 0);
  if (rank == 0) {
    fn(int64_t{0}, offs.data(), steps.data(), int64_t{1});
    return;
  }
  const int inner = rank - 1;
  const int64_t count = dims_[static_cast<size_t>(inner)];
  for (size_t i = 0; i < n; ++i) steps[i] = strides_[i * static_cast<size_t>(rank) + static_cast<size_t>(inner)];
  SmallBuffer<int64_t, kInlineDims> counter(static_cast<size_t>(rank), 0);
  // Start the odometer at run `first`.
  for (int64_t rest = first, d = inner - 1; d >= 0 && rest > 0; --d) {
    const size_t du = static_cast<size_t>(d);
    counter[du] = rest % dims_[du];
    rest /= dims_[du];
    for (size_t i = 0; i < n; ++i) offs[i] += counter[du] * strides_[i * static_cast<size_t>(rank) + du];
  }
  int64_t out = first * count;
  for (int64_t r = first; r < last; ++r, out += count) {
    fn(out, offs.data(), steps.data(), count);
    // Advance the odometer over dims [0, inner), updating input offsets incrementally.
    for (int d = inner - 1; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      if (++counter[du] < dims_[du]) {
        for (size_t i = 0; i < n; ++i) offs[i] += strides_[i * static_cast<size_t>(rank) + du];
        break;
      }
      for (size_t i = 0; i < n; ++i) offs[i] -= strides_[i * static_cast<size_t>(rank) + du] * (dims_[du] - 1);
      counter[du] = 0;
    }
  }
}

}  // namespace sdx::cpu
