#include "backend/cpu/jit/fused_kernel.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/threading/thread_pool.h"

namespace sdx::jit {
namespace {

class FusedSegmentKernel final : public backend::BoundKernel {
 public:
  FusedSegmentKernel(std::shared_ptr<const CompiledSegment> c, std::vector<const float*> in, std::vector<float*> out,
                     const std::vector<bool>& snapshot)
      : compiled_(std::move(c)),
        numel_(compiled_->ir().domain.numel()),
        // About 64K scalar operations per chunk: small domains run inline.
        grain_(std::max<int64_t>(1024, 65536 / static_cast<int64_t>(std::max<size_t>(1, compiled_->ir().instrs.size())))),
        in_(std::move(in)),
        out_(std::move(out)) {
    for (size_t k = 0; k < snapshot.size() && k < in_.size(); ++k) {
      if (!snapshot[k]) continue;
      snapshots_.push_back({in_[k], std::vector<float>(static_cast<size_t>(compiled_->ir().inputs[k].count))});
    }
    // Point the inputs at the copies once the vector no longer moves.
    size_t next = 0;
    for (size_t k = 0; k < snapshot.size() && k < in_.size(); ++k)
      if (snapshot[k]) in_[k] = snapshots_[next++].copy.data();
  }

  Status run() const override {
    for (const Snapshot& s : snapshots_)
      std::memcpy(const_cast<float*>(s.copy.data()), s.source, s.copy.size() * sizeof(float));
    const float* const* in = in_.data();
    float* const* out = out_.data();
    const SegmentFn fn = compiled_->fn();
    cpu::parallel_for(numel_, grain_, [&](int64_t b, int64_t e) { fn(in, out, b, e); });
    return Status::ok();
  }

 private:
  std::shared_ptr<const CompiledSegment> compiled_;  // keeps the library mapped
  int64_t numel_, grain_;
  std::vector<const float*> in_;
  std::vector<float*> out_;
  struct Snapshot {
    const float* source;
    std::vector<float> copy;  // refreshed at the start of every run, before any store
  };
  std::vector<Snapshot> snapshots_;
};

}  // namespace

std::unique_ptr<backend::BoundKernel> bind_segment(std::shared_ptr<const CompiledSegment> c, std::vector<const float*> in,
                                                   std::vector<float*> out, const std::vector<bool>& snapshot) {
  return std::make_unique<FusedSegmentKernel>(std::move(c), std::move(in), std::move(out), snapshot);
}

void run_segment(const CompiledSegment& c, const float* const* in, float* const* out) {
  c.fn()(in, out, 0, c.ir().domain.numel());
}

}  // namespace sdx::jit
