// JitOptions: the kernel JIT's controls (CPU_JIT, the DSP document's MLIR_CPU mode), part of
// SessionOptions; their SDX_JIT_* variables, defaults and ranges are rows of
// src/runtime/session_options.inc, read by SessionOptions::from_env.
#pragma once

#include <string>

namespace sdx::jit {

struct JitOptions {
  // Fuse segments of elementwise steps into generated kernels (SDX_JIT_ENABLED).
  bool enabled = true;
  // Minimum FusionScoring score for a segment to be fused (SDX_JIT_FUSION_SCORE_THRESHOLD).
  double fusion_score_threshold = 0.5;
  // Swap a fused kernel in only when, timed in the replay that checks it, it runs no slower than the
  // steps it replaces (SDX_JIT_KEEP_ONLY_FASTER).
  bool keep_only_faster = true;
  // The C++ compiler (SDX_JIT_COMPILER); empty: c++, then g++, from PATH.
  std::string compiler;
  // Root of the kernel disk cache (SDX_JIT_CACHE_DIR); empty: $SDX_CACHE_DIR/jit, else
  // $XDG_CACHE_HOME/sdx/jit, else ~/.cache/sdx/jit. Kernels live in its subfolder v1/.
  std::string cache_dir;
};

}  // namespace sdx::jit
