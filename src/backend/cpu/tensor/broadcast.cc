#include "backend/cpu/tensor/broadcast.h"

#include <string>

namespace sdx::cpu {

namespace {

std::string shapes_string(const std::vector<Shape>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i].to_string();
  return s;
}

}  // namespace

Result<BroadcastPlan> BroadcastPlan::make(const std::vector<Shape>& inputs) {
  if (inputs.empty()) return invalid_argument("broadcast needs at least one input shape");
  const size_t n = inputs.size();
  int rank = 0;
  for (const Shape& s : inputs) rank = s.rank() > rank ? s.rank() : rank;

  // Align every shape to the output rank (leading 1s) and compute the output dims.
  std::vector<std::vector<int64_t>> aligned(n, std::vector<int64_t>(static_cast<size_t>(rank), 1));
  std::vector<int64_t> out(static_cast<size_t>(rank), 1);
  for (size_t i = 0; i < n; ++i) {
    const int pad = rank - inputs[i].rank();
    for (int d = 0; d < inputs[i].rank(); ++d) aligned[i][static_cast<size_t>(d + pad)] = inputs[i][d];
  }
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    int64_t dim = 1;
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = aligned[i][d];
      if (v == 1 || v == dim) continue;
      if (dim != 1)
        return invalid_argument("shapes " + shapes_string(inputs) + " cannot be broadcast together (dimension " +
                                std::to_string(d) + " of the output)");
      dim = v;
    }
    out[d] = dim;
  }

  BroadcastPlan plan;
  SDX_ASSIGN_OR_RETURN(plan.out_shape_, Shape::make(out), "broadcast output shape");
  plan.num_inputs_ = static_cast<int>(n);
  plan.identity_.resize(n);
  for (size_t i = 0; i < n; ++i) plan.identity_[i] = inputs[i].dims() == out;
  for (const Shape& s : inputs) plan.in_numel_.push_back(s.numel());

  // Collapse: drop output dims of size 1, then merge neighbours whose broadcast
  // pattern (input dim == output dim, or input dim is 1) matches for every input.
  std::vector<int64_t> dims;
  std::vector<std::vector<bool>> full(n);  // full[i][k]: input i spans collapsed dim k
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    if (out[d] == 1) continue;
    bool same = !dims.empty();
    for (size_t i = 0; i < n && same; ++i) same = full[i].back() == (aligned[i][d] == out[d]);
    if (same) {
      dims.back() *= out[d];
    } else {
      dims.push_back(out[d]);
      for (size_t i = 0; i < n; ++i) full[i].push_back(aligned[i][d] == out[d]);
    }
  }
  const size_t r = dims.size();
  plan.dims_ = dims;
  plan.strides_.assign(n * r, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t stride = 1;
    for (size_t k = r; k-- > 0;) {
      if (full[i][k]) {
        plan.strides_[i * r + k] = stride;
        stride *= dims[k];
      }
    }
  }
  return plan;
}

}  // namespace sdx::cpu
