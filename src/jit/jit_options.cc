#include "jit/jit_options.h"

#include <cstdlib>

namespace sdx::jit {

JitOptions JitOptions::from_env(JitOptions base) {
  if (const char* v = std::getenv("SDX_JIT_ENABLED")) {
    const std::string s(v);
    if (s == "0" || s == "false" || s == "off" || s == "OFF" || s == "FALSE") base.enabled = false;
    else if (s == "1" || s == "true" || s == "on" || s == "ON" || s == "TRUE") base.enabled = true;
  }
  if (const char* v = std::getenv("SDX_JIT_FUSION_SCORE_THRESHOLD")) {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    if (end != v && t >= 0) base.fusion_score_threshold = t;
  }
  if (const char* v = std::getenv("SDX_JIT_COMPILER"); v && *v) base.compiler = v;
  if (const char* v = std::getenv("SDX_JIT_CACHE_DIR"); v && *v) base.cache_dir = v;
  return base;
}

}  // namespace sdx::jit
