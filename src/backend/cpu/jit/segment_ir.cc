#include "backend/cpu/jit/segment_ir.h"

#include <algorithm>
#include <map>

namespace sdx::jit {
namespace {

constexpr JitOpInfo kOps[] = {
#define SDX_JIT_OP(e, onnx, arity, fn, exact) {JitOp::e, onnx, arity, fn, exact},
#include "backend/cpu/jit/jit_ops.inc"
#undef SDX_JIT_OP
};

}  // namespace

const JitOpInfo& jit_op_info(JitOp op) { return kOps[static_cast<size_t>(op)]; }

const JitOpInfo* find_jit_op(const std::string& onnx_op) {
  for (const JitOpInfo& info : kOps)
    if (onnx_op == info.onnx_op) return &info;
  return nullptr;
}

Result<SegmentInput> SegmentInput::broadcast(const Shape& shape, const Shape& domain) {
  const int r = domain.rank();
  if (shape.rank() > r) return invalid_argument("input " + shape.to_string() + " has a higher rank than " + domain.to_string());
  // Align right (numpy); find the block of dims the input does not broadcast.
  const int lead = r - shape.rank();
  int first = -1, last = -1;
  for (int d = 0; d < r; ++d) {
    const int64_t in = d < lead ? 1 : shape[d - lead];
    if (in != 1 && in != domain[d])
      return invalid_argument("input " + shape.to_string() + " does not broadcast to " + domain.to_string());
    if (in != 1) {
      if (first < 0) first = d;
      last = d;
    }
  }
  SegmentInput in;
  in.shape = shape;
  if (first < 0) return in;  // one element
  for (int d = first; d <= last; ++d) {
    const int64_t v = d < lead ? 1 : shape[d - lead];
    if (v != domain[d] && domain[d] != 1)
      return invalid_argument("input " + shape.to_string() + " broadcasts along inner dims of " + domain.to_string() +
                              " (not one contiguous block)");
  }
  in.count = 1;
  for (int d = first; d <= last; ++d) in.count *= domain[d];
  in.inner = 1;
  for (int d = last + 1; d < r; ++d) in.inner *= domain[d];
  return in;
}

int SegmentIR::max_live_values() const {
  // Live intervals over instruction positions: an input from its first use (emitters load
  // lazily), a result from its instruction, each to its last use; outputs live to the end.
  const int n = num_values();
  const int end = static_cast<int>(instrs.size());
  std::vector<int> def(static_cast<size_t>(n), -1), last(static_cast<size_t>(n), -1);
  for (size_t j = 0; j < instrs.size(); ++j) {
    def[inputs.size() + j] = static_cast<int>(j);
    for (int a : instrs[j].args) {
      if (a < 0) continue;
      if (def[static_cast<size_t>(a)] < 0) def[static_cast<size_t>(a)] = static_cast<int>(j);
      last[static_cast<size_t>(a)] = static_cast<int>(j);
    }
  }
  for (int o : outputs) last[static_cast<size_t>(o)] = end;
  std::vector<int> delta(static_cast<size_t>(end) + 2, 0);
  for (int v = 0; v < n; ++v) {
    if (def[static_cast<size_t>(v)] < 0 || last[static_cast<size_t>(v)] < def[static_cast<size_t>(v)]) continue;
    ++delta[static_cast<size_t>(def[static_cast<size_t>(v)])];
    --delta[static_cast<size_t>(last[static_cast<size_t>(v)]) + 1];
  }
  int live = 0, best = 0;
  for (int d : delta) best = std::max(best, live += d);
  return best;
}

Status SegmentIR::validate() const {
  if (domain.numel() <= 0) return invalid_argument("segment domain " + domain.to_string() + " is empty");
  if (instrs.empty() || outputs.empty()) return invalid_argument("segment has no operations or no outputs");
  for (const SegmentInput& in : inputs) {
    if (in.count < 1 || in.inner < 1 || in.count * in.inner > domain.numel() || in.shape.numel() != in.count)
      return invalid_argument("segment input " + in.shape.to_string() + " has an invalid access pattern");
  }
  for (size_t j = 0; j < instrs.size(); ++j) {
    const SegmentInstr& s = instrs[j];
    if (static_cast<size_t>(s.op) >= std::size(kOps)) return invalid_argument("unknown segment operation");
    const int self = static_cast<int>(inputs.size() + j);
    const int arity = jit_op_info(s.op).arity;
    for (int a = 0; a < 2; ++a) {
      const bool used = a < arity;
      if (used != (s.args[a] >= 0) || s.args[a] >= self)
        return invalid_argument("segment instruction " + std::to_string(j) + " has invalid operands");
    }
  }
  for (int o : outputs)
    if (o < 0 || o >= num_values()) return invalid_argument("segment output refers to no value");
  return Status::ok();
}

std::string SegmentIR::describe() const {
  std::map<std::string, int> hist;
  for (const SegmentInstr& s : instrs) ++hist[jit_op_info(s.op).onnx_op];
  std::vector<std::pair<std::string, int>> sorted(hist.begin(), hist.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string ops;
  for (size_t i = 0; i < sorted.size() && i < 6; ++i)
    ops += (i ? ", " : "") + sorted[i].first + " " + std::to_string(sorted[i].second);
  if (sorted.size() > 6) ops += ", ...";
  return std::string(ir::op_category_name(category)) + " float32" + domain.to_string() + ": " +
         std::to_string(instrs.size()) + " ops (" + ops + "), " + std::to_string(inputs.size()) + " input" +
         (inputs.size() == 1 ? "" : "s") + ", " + std::to_string(outputs.size()) + " output" + (outputs.size() == 1 ? "" : "s");
}

}  // namespace sdx::jit
