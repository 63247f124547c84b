// LoopTrace: a bounded ring of per-iteration summary statistics of a loop's carried values, the record
// the loop analyses (analysis/evolution.h, analysis/termination.h) read. It keeps statistics only (norm,
// min, max, mean and a hash of the bytes), never a copy of a tensor, so its memory is capacity x values
// rows of a few doubles whatever the tensors' sizes. It records every `stride`-th iteration; when the ring
// is full the oldest row is dropped, so the ring always holds the latest `capacity` recorded iterations.
//
//   analysis::LoopTrace trace({"x", "i"}, {.capacity = 256, .stride = 1});
//   for (int64_t it = 0; ...; ++it) {
//     if (trace.wants(it)) SDX_RETURN_IF_ERROR(trace.record(it, {x, i}), "loop trace");
//     ...
//   }
//   std::vector<double> xs = trace.series(0, analysis::StatField::kMean);  // oldest first
//
// Not thread-safe: one trace belongs to one running loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace sdx::analysis {

// Summary statistics of one tensor. For an empty tensor numel is 0 and the statistics are 0.
struct ValueStats {
  int64_t numel = 0;
  double norm = 0;  // L2 norm over all elements
  double min = 0;
  double max = 0;
  double mean = 0;
  uint64_t hash = 0;     // XXH3-64 of the tensor's bytes: equal hashes mean (almost surely) an unchanged value
  bool finite = true;    // false when any element is NaN or infinite
};

// The statistics of a numeric tensor (float, double, float16, bfloat16, any integer type, bool); other
// element types (strings, sub-byte and 8-bit float types) give Unimplemented naming the type.
Result<ValueStats> summarize(const Tensor& t);

// Which statistic a series reads.
enum class StatField { kNorm, kMin, kMax, kMean };
const char* stat_field_name(StatField f);

struct LoopTraceOptions {
  size_t capacity = 256;  // rows kept (the latest ones); at least 1
  int64_t stride = 1;     // records iterations 0, stride, 2*stride, ...; at least 1
};

class LoopTrace {
 public:
  // One name per carried value, in the order record() receives them.
  LoopTrace(std::vector<std::string> names, LoopTraceOptions options = {});

  // True when `iteration` falls on the stride (the caller skips computing anything otherwise).
  bool wants(int64_t iteration) const { return iteration % options_.stride == 0; }
  // Summarizes the values of one iteration into the ring (one tensor per name). Iterations off the stride
  // are ignored; an error (wrong count, unsupported type) leaves the ring unchanged.
  Status record(int64_t iteration, const std::vector<Tensor>& values);
  // The same with precomputed statistics (one per name).
  Status record_stats(int64_t iteration, std::vector<ValueStats> stats);

  const std::vector<std::string>& names() const { return names_; }
  const LoopTraceOptions& options() const { return options_; }
  size_t size() const { return rows_.size(); }
  // Rows recorded since construction, including those the ring has dropped.
  int64_t recorded() const { return recorded_; }
  // The iteration numbers held, oldest first.
  std::vector<int64_t> iterations() const;
  // The statistics of value `index` at the held iterations, oldest first.
  std::vector<ValueStats> stats(size_t index) const;
  // One statistic of value `index` at the held iterations, oldest first.
  std::vector<double> series(size_t index, StatField field) const;

 private:
  struct Row {
    int64_t iteration = 0;
    std::vector<ValueStats> values;
  };
  // The i-th oldest row.
  const Row& row(size_t i) const { return rows_[(head_ + i) % rows_.size()]; }

  std::vector<std::string> names_;
  LoopTraceOptions options_;
  std::vector<Row> rows_;  // a ring once full: head_ is the oldest row
  size_t head_ = 0;
  int64_t recorded_ = 0;
};

}  // namespace sdx::analysis
