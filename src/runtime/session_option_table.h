// The session option table (rows in session_options.inc) as data: every option's field, type, names,
// default, range and help, with the parsing and checks every source of a value shares. Used by
// SessionOptions::from_env, the Python binding (a dict keyed by Python name) and the C ABI.
//
//   const SessionOptionRow* row = find_session_option("warmup_runs");
//   SDX_RETURN_IF_ERROR(set_session_option(&opts, *row, int64_t{4}, "SessionOptions.warmup_runs=4"), "...");
//   auto v = parse_session_option(*row, "abc");   // invalid_argument: "'abc' is not an integer; ..."
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "runtime/session_options.h"

namespace sdx::runtime {

enum class OptionType : uint8_t { kBool, kInt, kInt64, kDouble, kString, kStringList, kExecutionMode };
// "bool", "int", "int64", "double", "string", "string list", "execution mode".
const char* option_type_name(OptionType t);

// A value of any row: bool; int64_t for kInt/kInt64 (and an execution mode's id, C ABI); double; string
// (also an execution mode's name); string list.
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

struct OptionRange {
  bool bounded = false;   // false: SDX_ANY
  double lo = 0, hi = 0;  // inclusive unless lo_open
  bool lo_open = false;
  bool raise_to_lo = false;  // values below lo become lo (outside the C ABI)
};

struct SessionOptionRow {
  const char* field;    // "optimizer.max_iterations"
  OptionType type;
  const char* python;   // "optimizer_max_iterations"
  const char* env;      // "SDX_OPTIMIZER_MAX_ITERATIONS", or "NAME=WORD"
  const char* c_field;  // sdx_create_info_t's field, or nullptr
  OptionRange range;
  const char* help;
  OptionValue default_value;
  OptionValue (*get)(const SessionOptions&);
  void (*put)(SessionOptions&, const OptionValue&);  // a value set_session_option has checked

  // The variable's name: env without "=WORD".
  std::string env_name() const;
  // WORD of a "NAME=WORD" row, else empty.
  std::string env_word() const;
};

struct SessionOptionSwitch {
  const char* env;
  const char* field;
  const char* help;
  void (*apply)(SessionOptions&);
};

std::span<const SessionOptionRow> session_option_rows();
std::span<const SessionOptionSwitch> session_option_switches();
// The row whose Python name is `python`; nullptr when none.
const SessionOptionRow* find_session_option(std::string_view python);
// The row set by sdx_create_info_t's field `c_field`; nullptr when none.
const SessionOptionRow* find_session_option_by_c_field(std::string_view c_field);

// Parses an environment-variable value (the forms in session_options.inc). The error is invalid_argument
// "'TEXT' is not an integer; expected an integer >= 1" for the caller to prefix with the variable's name.
Result<OptionValue> parse_session_option(const SessionOptionRow& row, std::string_view text);
// A boolean as the environment writes one (a switch's value): 1/0, true/false, on/off, yes/no, any case.
Result<bool> parse_session_bool(std::string_view text);
// The environment form of `value`, which parse_session_option reads back as the same value.
std::string format_session_option(const SessionOptionRow& row, const OptionValue& value);
// What the row accepts, for messages: "an integer >= 1", "a number in (0, 1]", "1/0, true/false, ...".
std::string describe_session_option(const SessionOptionRow& row);

// How a value is checked against the row's range.
enum class OptionClamp : uint8_t { kRaiseToLo, kNever };
// Checks `value` (type, range, execution mode names and ids) and stores it in `opts`. `source` names the
// value in errors ("SDX_X='abc'", "SessionOptions.warmup_runs=0", "num_warmup_iterations -1").
Status set_session_option(SessionOptions* opts, const SessionOptionRow& row, OptionValue value,
                          const std::string& source, OptionClamp clamp = OptionClamp::kRaiseToLo);

}  // namespace sdx::runtime
