// JitLibrary: one compiled segment library loaded with dlopen (RTLD_NOW | RTLD_LOCAL), checked
// against the ABI and frozen domain size it must export (cpp_emitter.h), unloaded when the last
// owner lets go. Bound kernels hold a shared_ptr to it, so its code stays mapped while they live.
//
//   SDX_ASSIGN_OR_RETURN(std::shared_ptr<JitLibrary> lib, JitLibrary::open(path, ir.domain.numel()), "");
//   lib->segment()(inputs, outputs, 0, n);
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace sdx::jit {

using SegmentFn = void (*)(const float* const* in, float* const* out, long long begin, long long end);

class JitLibrary {
 public:
  static Result<std::shared_ptr<JitLibrary>> open(const std::string& path, int64_t expected_numel);
  ~JitLibrary();
  JitLibrary(const JitLibrary&) = delete;
  JitLibrary& operator=(const JitLibrary&) = delete;

  SegmentFn segment() const { return fn_; }
  const std::string& path() const { return path_; }

 private:
  JitLibrary() = default;
  void* handle_ = nullptr;
  SegmentFn fn_ = nullptr;
  std::string path_;
};

}  // namespace sdx::jit
