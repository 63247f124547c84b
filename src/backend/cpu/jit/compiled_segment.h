// CompiledSegment: the JIT's answer for one SegmentIR, shared between the background compiler
// (which fills it in) and the plans that use it. Its state starts PENDING and moves once to
// READY (a loaded library) or FAILED (a reason).
//
// Publication: the JIT engine's worker thread writes every other field, then stores state_ with
// memory_order_release; readers call state() (acquire) and may read the fields only after it
// returned READY or FAILED. The fields never change after that.
//
//   std::shared_ptr<CompiledSegment> c = engine.request(ir);
//   if (c->state() == JitState::kReady) c->fn()(in, out, 0, n);
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "backend/cpu/jit/jit_library.h"
#include "backend/cpu/jit/segment_ir.h"

namespace sdx::jit {

enum class JitState : uint8_t {
#define SDX_JIT_COMPILE_STATE(enumerator, NAME) enumerator,
#include "backend/cpu/jit/jit_states.inc"
#undef SDX_JIT_COMPILE_STATE
};
const char* jit_state_name(JitState s);  // PENDING, READY, FAILED (jit_states.inc)

class CompiledSegment {
 public:
  CompiledSegment(SegmentIR ir, std::string source) : ir_(std::move(ir)), source_(std::move(source)) {}

  JitState state() const { return state_.load(std::memory_order_acquire); }
  const SegmentIR& ir() const { return ir_; }
  const std::string& source() const { return source_; }

  // Valid once state() is READY.
  SegmentFn fn() const { return library_->segment(); }
  const std::shared_ptr<JitLibrary>& library() const { return library_; }
  bool cache_hit() const { return cache_hit_; }  // found in the disk cache (no compile)
  double compile_seconds() const { return compile_seconds_; }
  // Valid once state() is not PENDING: the disk-cache key ("" when none was computed).
  const std::string& key() const { return key_; }
  // Valid once state() is FAILED: why (compiler missing, compile error, ...).
  const std::string& failure() const { return failure_; }

 private:
  friend class JitEngine;
  void publish_ready(std::shared_ptr<JitLibrary> lib, std::string key, bool cache_hit, double seconds) {
    library_ = std::move(lib);
    key_ = std::move(key);
    cache_hit_ = cache_hit;
    compile_seconds_ = seconds;
    state_.store(JitState::kReady, std::memory_order_release);  // publishes library_, key_, cache_hit_
  }
  void publish_failed(std::string reason, std::string key) {
    failure_ = std::move(reason);
    key_ = std::move(key);
    state_.store(JitState::kFailed, std::memory_order_release);  // publishes failure_, key_
  }

  const SegmentIR ir_;
  const std::string source_;
  std::atomic<JitState> state_{JitState::kPending};
  std::shared_ptr<JitLibrary> library_;
  std::string key_, failure_;
  bool cache_hit_ = false;
  double compile_seconds_ = 0;
};

}  // namespace sdx::jit
