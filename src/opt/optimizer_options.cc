#include "opt/optimizer_options.h"

#include <algorithm>
#include <cstdlib>

namespace sdx::opt {

bool OptimizerOptions::skips(const std::string& pass) const {
  return std::find(skip.begin(), skip.end(), pass) != skip.end();
}

namespace {
bool truthy(const char* v) {
  const std::string s(v);
  return !(s.empty() || s == "0" || s == "false" || s == "FALSE" || s == "off" || s == "no");
}
}  // namespace

OptimizerOptions OptimizerOptions::from_env(OptimizerOptions base) {
  if (const char* v = std::getenv("SDX_OPTIMIZER_ENABLED")) base.enabled = truthy(v);
  if (const char* v = std::getenv("SDX_OPTIMIZER_SKIP")) {
    std::string list(v);
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      std::string name = list.substr(start, end - start);
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t") + 1);
      if (!name.empty() && !base.skips(name)) base.skip.push_back(name);
      start = end + 1;
    }
  }
  if (const char* v = std::getenv("SDX_OPTIMIZER_LOG_APPLIED")) base.log_applied = truthy(v);
  if (const char* v = std::getenv("SDX_OPTIMIZER_MAX_ITERATIONS")) base.max_iterations = std::max(1, std::atoi(v));
  if (const char* v = std::getenv("SDX_OPTIMIZER_FP16")) base.fp16 = truthy(v);
  if (const char* v = std::getenv("SDX_OPTIMIZER_INT8")) {
    base.int8_dynamic = std::string(v) == "dynamic";
    base.int8 = base.int8_dynamic || truthy(v);
  }
  if (const char* v = std::getenv("SDX_VERIFY_EACH_PASS")) base.verify_each_pass = truthy(v);
  return base;
}

}  // namespace sdx::opt
