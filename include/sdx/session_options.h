// SessionOptions: how a session loads and runs, set by name. The options are the rows of the engine's one
// option table (src/runtime/session_options.inc: names, types, defaults, ranges, environment variables,
// help); this header does not list them again, SessionOptions::table() returns them, and a value is
// checked against its row when it is set. The names are those of Python's sdx.SessionOptions and of the
// README's options table.
//
//   sdx::SessionOptions o;
//   if (sdx::Status s = o.set("warmup_runs", int64_t{2}); !s.is_ok()) ...      // range-checked here
//   o.set("execution_mode", std::string("SLOT_BY_SLOT"));
//   o.set("optimizer_skip", std::vector<std::string>{"GeluFusion"});
//   for (const sdx::OptionInfo& row : sdx::SessionOptions::table()) std::cout << row.name << "\n";
//
// A session overlays the SDX_* environment variables onto these options when it loads, as every other
// entry point does (Python, the C ABI, the CLI).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sdx/status.h"

namespace sdx {

// A value of any option: bool; int64_t for integer options; double; string (also execution modes, by
// name); string list.
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

// One row of the option table.
struct OptionInfo {
  std::string name;         // "optimizer_max_iterations" (the name set() takes)
  std::string field;        // the engine's field: "optimizer.max_iterations"
  std::string type;         // "bool", "int", "int64", "double", "string", "string list", "execution mode"
  std::string env;          // "SDX_OPTIMIZER_MAX_ITERATIONS", or "NAME=WORD" for a bool that WORD in NAME turns on
  OptionValue default_value;
  std::string env_default;  // the default as the environment writes it
  std::string accepts;      // "an integer >= 1", "a number in (0, 1]", ...
  std::string c_field;      // sdx_create_info_t's field, or empty
  std::string help;
};

// An environment variable that sets another option's field when on (a kill switch).
struct OptionSwitch {
  std::string env;    // "SDX_NO_MEMORY_PLANNER"
  std::string field;  // the field it sets
  std::string help;
};

class SessionOptions {
 public:
  SessionOptions();  // every option at its default
  ~SessionOptions();
  SessionOptions(const SessionOptions& other);
  SessionOptions(SessionOptions&& other) noexcept;
  SessionOptions& operator=(const SessionOptions& other);
  SessionOptions& operator=(SessionOptions&& other) noexcept;

  // Sets option `name` (OptionInfo::name). not_found for an unknown name (the message lists the names),
  // invalid_argument for a value of the wrong type or out of its range ("SessionOptions.warmup_runs=0 ...").
  // Integer options below a documented floor are raised to it (warmup_runs >= 1), as in the environment.
  Status set(std::string_view name, OptionValue value);
  // The value of option `name` (not_found for an unknown name).
  Result<OptionValue> get(std::string_view name) const;

  // Every option, in the table's order; and the switches.
  static std::vector<OptionInfo> table();
  static std::vector<OptionSwitch> switches();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  friend struct OptionsAccess;
};

}  // namespace sdx
