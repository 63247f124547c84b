#include "opt/pass.h"

#include <cstdio>
#include <iterator>
#include <string_view>

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

struct Row {
  int order;
  const char* name;
  PassCategory category;
  const char* alias;
  const char* summary;
};

constexpr Row kRows[] = {
#define SDX_PASS(order, name, category, alias, summary) {order, #name, PassCategory::category, #alias, summary},
#include "opt/pass_table.inc"
#undef SDX_PASS
};

// The rows are in run order, so reading the table top to bottom is reading the pipeline.
constexpr bool orders_increase() {
  for (size_t i = 1; i < std::size(kRows); ++i)
    if (kRows[i - 1].order >= kRows[i].order) return false;
  return true;
}
static_assert(orders_increase(), "pass_table.inc: orders must strictly increase down the table");

// Every name and alias names one pass, so a skip list or a report key is never ambiguous.
constexpr bool spellings_unique() {
  for (size_t i = 0; i < std::size(kRows); ++i)
    for (size_t j = 0; j < std::size(kRows); ++j) {
      const std::string_view a[] = {kRows[i].name, kRows[i].alias}, b[] = {kRows[j].name, kRows[j].alias};
      for (int x = 0; x < 2; ++x)
        for (int y = 0; y < 2; ++y)
          if ((i != j || x != y) && a[x] == b[y]) return false;
    }
  return true;
}
static_assert(spellings_unique(), "pass_table.inc: a name or alias appears twice");

struct Registration {
  std::string name;
  PassFactory create;
};

// Filled during static initialization (one PassRegistrar per pass file); read once, below.
std::vector<Registration>& registrations() {
  static std::vector<Registration> r;
  return r;
}

struct Pipeline {
  std::vector<PassInfo> passes;
  std::vector<std::string> problems;
};

Pipeline build_pipeline() {
  Pipeline p;
  std::vector<bool> used(registrations().size(), false);
  for (const Row& row : kRows) {
    const PassFactory* create = nullptr;
    for (size_t i = 0; i < registrations().size(); ++i) {
      if (registrations()[i].name != row.name) continue;
      if (create) p.problems.push_back(std::string("pass '") + row.name + "' is registered twice");
      create = &registrations()[i].create;
      used[i] = true;
    }
    if (!create) {
      p.problems.push_back(std::string("pass table row '") + row.name + "' has no registered pass (is its file linked?)");
      continue;
    }
    std::unique_ptr<Pass> probe = (*create)();
    if (std::string_view(probe->name()) != row.alias)
      p.problems.push_back(std::string("pass '") + row.name + "' is " + probe->name() + ", its table row says " + row.alias);
    if (probe->category() != row.category)
      p.problems.push_back(std::string("pass '") + row.name + "' has category " + pass_category_name(probe->category()) +
                           ", its table row says " + pass_category_name(row.category));
    p.passes.push_back({row.order, row.name, row.alias, row.category, row.summary, *create});
  }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i]) p.problems.push_back("pass '" + registrations()[i].name + "' is registered but has no row in pass_table.inc");
  return p;
}

const Pipeline& pipeline() {
  static const Pipeline p = build_pipeline();
  return p;
}

}  // namespace

PassRegistrar::PassRegistrar(const char* name, PassFactory create) {
  registrations().push_back({name, std::move(create)});
}

const std::vector<PassInfo>& registered_passes() { return pipeline().passes; }

const PassInfo* find_pass(const std::string& name_or_alias) {
  for (const PassInfo& p : registered_passes())
    if (p.name == name_or_alias || p.alias == name_or_alias) return &p;
  return nullptr;
}

const std::vector<std::string>& pass_table_problems() { return pipeline().problems; }

}  // namespace sdx::opt
