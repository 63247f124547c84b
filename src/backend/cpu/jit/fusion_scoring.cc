#include "backend/cpu/jit/fusion_scoring.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace sdx::jit {
namespace {

// Rough figures for a current x86-64 core; only their ratios matter.
constexpr double kDispatchNs = 20;           // one bound kernel call in replay
constexpr double kBytesPerNs = 10;           // sustained memory bandwidth of one core
constexpr int kRegisters = 16;               // vector registers (SSE/AVX2)
constexpr double kSpillBytesPerValue = 8;    // one store and one load of a float per spilled value

}  // namespace

FusionScore score_fusion(const SegmentIR& ir) {
  FusionScore s;
  const double n = static_cast<double>(ir.domain.numel());
  // Intermediates: every instruction result that is not an output is never materialized.
  std::vector<bool> is_output(static_cast<size_t>(ir.num_values()), false);
  for (int o : ir.outputs) is_output[static_cast<size_t>(o)] = true;
  int eliminated = 0;
  for (size_t j = 0; j < ir.instrs.size(); ++j)
    if (!is_output[ir.inputs.size() + j]) ++eliminated;
  const double ops = static_cast<double>(ir.instrs.size());
  s.saved_ns = (ops - 1) * kDispatchNs + eliminated * n * 4 * 2 / kBytesPerNs;
  const int spilled = std::max(0, ir.max_live_values() - kRegisters);
  s.cost_ns = kDispatchNs / 2 + spilled * n * kSpillBytesPerValue / kBytesPerNs;
  s.score = s.saved_ns <= 0 ? 0 : s.saved_ns / (s.saved_ns + s.cost_ns);
  return s;
}

std::string FusionScore::explain() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "score %.2f (saves ~%.0f ns per call, costs ~%.0f ns)", score, saved_ns, cost_ns);
  return buf;
}

}  // namespace sdx::jit
