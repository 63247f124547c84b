#include "analysis/loop_trace.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tensor_values.h"
#include "core/type_dispatch.h"
#include "core/xxh3.h"

namespace sdx::analysis {

Result<ValueStats> summarize(const Tensor& t) {
  ValueStats s;
  s.numel = t.numel();
  Status st = dispatch<SDX_NUMERIC_TYPES, bool>(
      t.dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        if (s.numel == 0) return Status::ok();
        const T* p = t.data<T>();
        double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, sq = 0;
        bool finite = true;
        for (int64_t i = 0; i < s.numel; ++i) {
          const double v = load_as<double>(p[i]);
          finite = finite && std::isfinite(v);
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          sum += v;
          sq += v * v;
        }
        s.min = lo;
        s.max = hi;
        s.mean = sum / static_cast<double>(s.numel);
        s.norm = std::sqrt(sq);
        s.finite = finite;
        return Status::ok();
      },
      "loop trace statistics");
  if (!st.is_ok()) return st;
  if (s.numel > 0) s.hash = xxh3_64(t.raw_data(), t.nbytes());
  return s;
}

const char* stat_field_name(StatField f) {
  switch (f) {
    case StatField::kNorm: return "norm";
    case StatField::kMin: return "min";
    case StatField::kMax: return "max";
    case StatField::kMean: return "mean";
  }
  return "?";
}

LoopTrace::LoopTrace(std::vector<std::string> names, LoopTraceOptions options)
    : names_(std::move(names)), options_(options) {
  options_.capacity = std::max<size_t>(options_.capacity, 1);
  options_.stride = std::max<int64_t>(options_.stride, 1);
}

Status LoopTrace::record(int64_t iteration, const std::vector<Tensor>& values) {
  if (!wants(iteration)) return Status::ok();
  if (values.size() != names_.size())
    return invalid_argument("loop trace of " + std::to_string(names_.size()) + " values was given " +
                            std::to_string(values.size()));
  std::vector<ValueStats> stats;
  stats.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    SDX_ASSIGN_OR_RETURN(ValueStats s, summarize(values[i]), "loop-carried value '" + names_[i] + "'");
    stats.push_back(s);
  }
  return record_stats(iteration, std::move(stats));
}

Status LoopTrace::record_stats(int64_t iteration, std::vector<ValueStats> stats) {
  if (!wants(iteration)) return Status::ok();
  if (stats.size() != names_.size())
    return invalid_argument("loop trace of " + std::to_string(names_.size()) + " values was given " +
                            std::to_string(stats.size()) + " statistics");
  Row r{iteration, std::move(stats)};
  if (rows_.size() < options_.capacity) {
    rows_.push_back(std::move(r));
  } else {
    rows_[head_] = std::move(r);  // overwrite the oldest; the next oldest becomes the head
    head_ = (head_ + 1) % rows_.size();
  }
  ++recorded_;
  return Status::ok();
}

std::vector<int64_t> LoopTrace::iterations() const {
  std::vector<int64_t> out;
  out.reserve(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) out.push_back(row(i).iteration);
  return out;
}

std::vector<ValueStats> LoopTrace::stats(size_t index) const {
  SDX_ASSERT(index < names_.size());
  std::vector<ValueStats> out;
  out.reserve(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) out.push_back(row(i).values[index]);
  return out;
}

std::vector<double> LoopTrace::series(size_t index, StatField field) const {
  std::vector<double> out;
  for (const ValueStats& s : stats(index)) {
    switch (field) {
      case StatField::kNorm: out.push_back(s.norm); break;
      case StatField::kMin: out.push_back(s.min); break;
      case StatField::kMax: out.push_back(s.max); break;
      case StatField::kMean: out.push_back(s.mean); break;
    }
  }
  return out;
}

}  // namespace sdx::analysis
