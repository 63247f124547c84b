#include "opt/pass.h"

#include <algorithm>
#include <cstdio>

namespace sdx::opt {

const char* pass_category_name(PassCategory c) {
  switch (c) {
    case PassCategory::kCleanup: return "CLEANUP";
    case PassCategory::kConstant: return "CONSTANT";
    case PassCategory::kAlgebraic: return "ALGEBRAIC";
    case PassCategory::kLayout: return "LAYOUT";
    case PassCategory::kFusion: return "FUSION";
    case PassCategory::kPrecision: return "PRECISION";
  }
  return "?";
}

bool PassContext::applied(const ir::Node& anchor, const std::string& what) {
  ++count_;
  if (log_) log_->push_back({pass_, what, anchor.name()});
  if (options_.log_applied) std::fprintf(stderr, "sdx optimizer: %s: %s (node '%s')\n", pass_.c_str(), what.c_str(), anchor.name().c_str());
  return true;
}

bool PassContext::applied_value(const std::string& value, const std::string& what) {
  ++count_;
  if (log_) log_->push_back({pass_, what, value});
  if (options_.log_applied) std::fprintf(stderr, "sdx optimizer: %s: %s (value '%s')\n", pass_.c_str(), what.c_str(), value.c_str());
  return true;
}

namespace {
std::vector<PassInfo>& registry() {
  static std::vector<PassInfo> passes;
  return passes;
}
}  // namespace

PassRegistrar::PassRegistrar(int order, PassFactory create) {
  std::unique_ptr<Pass> probe = create();
  auto& r = registry();
  r.push_back({order, probe->name(), probe->category(), std::move(create)});
  std::stable_sort(r.begin(), r.end(), [](const PassInfo& a, const PassInfo& b) { return a.order < b.order; });
}

const std::vector<PassInfo>& registered_passes() { return registry(); }

}  // namespace sdx::opt
