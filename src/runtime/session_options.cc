#include "runtime/session_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "runtime/session_option_table.h"

namespace sdx::runtime {

Result<SessionOptions> SessionOptions::from_env(SessionOptions base) {
  for (const SessionOptionRow& row : session_option_rows()) {
    const std::string name = row.env_name();
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) continue;  // empty counts as unset, so `SDX_X= cmd` keeps the field's value
    Result<OptionValue> parsed = parse_session_option(row, v);
    if (!parsed.is_ok()) return invalid_argument(name + "=" + parsed.status().message());
    OptionValue value = std::move(parsed).value();
    if (auto* items = std::get_if<std::vector<std::string>>(&value)) {
      // A list variable adds to the field's list (SDX_OPTIMIZER_SKIP skips those passes too).
      auto merged = std::get<std::vector<std::string>>(row.get(base));
      for (std::string& s : *items)
        if (std::find(merged.begin(), merged.end(), s) == merged.end()) merged.push_back(std::move(s));
      value = std::move(merged);
    }
    if (Status s = set_session_option(&base, row, std::move(value), name + "='" + v + "'"); !s.is_ok()) return s;
  }
  for (const SessionOptionSwitch& sw : session_option_switches()) {
    const char* v = std::getenv(sw.env);
    if (!v || !*v) continue;
    Result<bool> on = parse_session_bool(v);
    if (!on.is_ok()) return invalid_argument(std::string(sw.env) + "=" + on.status().message());
    if (*on) sw.apply(base);
  }
  // Values set in code (C++, Python) meet the same ranges and floors as the variables'.
  for (const SessionOptionRow& row : session_option_rows()) {
    OptionValue value = row.get(base);
    const std::string source = std::string("SessionOptions.") + row.field + "=" + format_session_option(row, value);
    if (Status s = set_session_option(&base, row, std::move(value), source); !s.is_ok()) return s;
  }
  // The dynamic int8 path quantizes the weights as int8 does; asking for it asks for int8.
  if (base.optimizer.int8_dynamic) base.optimizer.int8 = true;
  return base;
}

int64_t SessionOptions::plan_cache_budget_bytes() const {
  if (plan_cache_memory_budget_bytes > 0) return plan_cache_memory_budget_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  const double total = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 8e9;
  return static_cast<int64_t>(total * plan_cache_memory_fraction);
}

}  // namespace sdx::runtime
