#include "runtime/session_option_table.h"

#include <cctype>
#include <cfloat>
#include <charconv>
#include <climits>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <utility>

namespace sdx::runtime {
namespace {

// Upper bounds the rows name: the field's own type's limit ("no upper bound" in messages).
constexpr double kIntMax = INT_MAX;
constexpr double kInt64Max = static_cast<double>(INT64_MAX);
constexpr double kDoubleMax = DBL_MAX;

template <typename T>
constexpr bool type_matches(OptionType t) {
  switch (t) {
    case OptionType::kBool: return std::is_same_v<T, bool>;
    case OptionType::kInt: return std::is_same_v<T, int>;
    case OptionType::kInt64: return std::is_same_v<T, int64_t>;
    case OptionType::kDouble: return std::is_same_v<T, double>;
    case OptionType::kString: return std::is_same_v<T, std::string>;
    case OptionType::kStringList: return std::is_same_v<T, std::vector<std::string>>;
    case OptionType::kExecutionMode: return std::is_same_v<T, ExecutionMode>;
  }
  return false;
}

OptionValue to_value(bool v) { return v; }
OptionValue to_value(int v) { return int64_t{v}; }
OptionValue to_value(int64_t v) { return v; }
OptionValue to_value(double v) { return v; }
OptionValue to_value(const std::string& v) { return v; }
OptionValue to_value(const std::vector<std::string>& v) { return v; }
OptionValue to_value(ExecutionMode m) { return std::string(execution_mode_name(m)); }

// `v` holds the alternative set_session_option leaves for the row's type.
void from_value(const OptionValue& v, bool* out) { *out = std::get<bool>(v); }
void from_value(const OptionValue& v, int* out) { *out = static_cast<int>(std::get<int64_t>(v)); }
void from_value(const OptionValue& v, int64_t* out) { *out = std::get<int64_t>(v); }
void from_value(const OptionValue& v, double* out) { *out = std::get<double>(v); }
void from_value(const OptionValue& v, std::string* out) { *out = std::get<std::string>(v); }
void from_value(const OptionValue& v, std::vector<std::string>* out) { *out = std::get<std::vector<std::string>>(v); }
void from_value(const OptionValue& v, ExecutionMode* out) { parse_execution_mode(std::get<std::string>(v), out); }

#define SDX_ANY OptionRange{}
#define SDX_RANGE(lo, hi) OptionRange{true, static_cast<double>(lo), hi, false, false}
#define SDX_ABOVE(lo, hi) OptionRange{true, static_cast<double>(lo), hi, true, false}
#define SDX_AT_LEAST(lo, hi) OptionRange{true, static_cast<double>(lo), hi, false, true}
#define SDX_C(name) #name
#define SDX_NO_C nullptr
#define SDX_FIELD_TYPE(field) std::remove_cvref_t<decltype(std::declval<SessionOptions&>().field)>
#define SDX_SESSION_OPTION(field, type, python, env, default_value, range, c_field, help)              \
  SessionOptionRow{#field, OptionType::type, python, env, c_field, range, help,                          \
                   [] {                                                                                  \
                     using T = SDX_FIELD_TYPE(field);                                                    \
                     static_assert(type_matches<T>(OptionType::type), #field ": the row's type is wrong"); \
                     const T v = default_value;                                                          \
                     return to_value(v);                                                                 \
                   }(),                                                                                  \
                   [](const SessionOptions& o) { return to_value(o.field); },                           \
                   [](SessionOptions& o, const OptionValue& v) { from_value(v, &o.field); }},

const std::vector<SessionOptionRow>& rows() {
  static const std::vector<SessionOptionRow> kRows = {
#define SDX_SESSION_SWITCH(...)
#include "runtime/session_options.inc"
#undef SDX_SESSION_SWITCH
  };
  return kRows;
}

const std::vector<SessionOptionSwitch>& switches() {
  static const std::vector<SessionOptionSwitch> kSwitches = {
#undef SDX_SESSION_OPTION
#define SDX_SESSION_OPTION(...)
#define SDX_SESSION_SWITCH(env, field, value, help) \
  SessionOptionSwitch{env, #field, help, [](SessionOptions& o) { o.field = value; }},
#include "runtime/session_options.inc"
#undef SDX_SESSION_SWITCH
  };
  return kSwitches;
}

#undef SDX_SESSION_OPTION
#undef SDX_FIELD_TYPE
#undef SDX_NO_C
#undef SDX_C
#undef SDX_AT_LEAST
#undef SDX_ABOVE
#undef SDX_RANGE
#undef SDX_ANY

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

constexpr char kBooleans[] = "1/0, true/false, on/off or yes/no";

// "a boolean", "an integer", ...: what a value of the type is called in messages.
const char* kind_of(OptionType t) {
  switch (t) {
    case OptionType::kBool: return "a boolean";
    case OptionType::kInt:
    case OptionType::kInt64: return "an integer";
    case OptionType::kDouble: return "a number";
    case OptionType::kString: return "a string";
    case OptionType::kStringList: return "a list of strings";
    case OptionType::kExecutionMode: return "an execution mode";
  }
  return "?";
}

// The environment's booleans, any case; false when `text` is none of them.
bool parse_bool(std::string_view text, bool* out) {
  const std::string s = lower(trim(text));
  if (s == "1" || s == "true" || s == "on" || s == "yes") *out = true;
  else if (s == "0" || s == "false" || s == "off" || s == "no") *out = false;
  else return false;
  return true;
}

// WORDs of the "NAME=WORD" rows that share `row`'s variable (SDX_OPTIMIZER_INT8=dynamic turns int8 on too).
std::vector<std::string> sibling_words(const SessionOptionRow& row) {
  std::vector<std::string> words;
  const std::string name = row.env_name();
  for (const SessionOptionRow& r : rows())
    if (&r != &row && r.env_name() == name && !r.env_word().empty()) words.push_back(r.env_word());
  return words;
}

// Shortest text that reads back as `v` ("0.25", "1", "1e+300").
std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

bool is_int_type(OptionType t) { return t == OptionType::kInt || t == OptionType::kInt64; }

double type_max(OptionType t) {
  return t == OptionType::kInt ? kIntMax : t == OptionType::kInt64 ? kInt64Max : kDoubleMax;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::kBool: return "bool";
    case OptionType::kInt: return "int";
    case OptionType::kInt64: return "int64";
    case OptionType::kDouble: return "double";
    case OptionType::kString: return "string";
    case OptionType::kStringList: return "string list";
    case OptionType::kExecutionMode: return "execution mode";
  }
  return "?";
}

std::string SessionOptionRow::env_name() const {
  const std::string_view e(env);
  return std::string(e.substr(0, e.find('=')));
}

std::string SessionOptionRow::env_word() const {
  const std::string_view e(env);
  const size_t eq = e.find('=');
  return eq == std::string_view::npos ? std::string() : std::string(e.substr(eq + 1));
}

std::span<const SessionOptionRow> session_option_rows() { return rows(); }
std::span<const SessionOptionSwitch> session_option_switches() { return switches(); }

const SessionOptionRow* find_session_option(std::string_view python) {
  for (const SessionOptionRow& r : rows())
    if (python == r.python) return &r;
  return nullptr;
}

const SessionOptionRow* find_session_option_by_c_field(std::string_view c_field) {
  for (const SessionOptionRow& r : rows())
    if (r.c_field && c_field == r.c_field) return &r;
  return nullptr;
}

std::string describe_session_option(const SessionOptionRow& row) {
  const OptionRange& g = row.range;
  const bool integer = is_int_type(row.type);
  auto number = [&](double v) { return integer ? std::to_string(static_cast<int64_t>(v)) : format_double(v); };
  switch (row.type) {
    case OptionType::kBool: {
      const std::string word = row.env_word();
      if (!word.empty()) return word + " (on), or " + std::string(kBooleans) + " (off)";
      const std::vector<std::string> words = sibling_words(row);
      return words.empty() ? std::string(kBooleans) : std::string(kBooleans) + ", or " + join(words, ", ") + " (on)";
    }
    case OptionType::kInt:
    case OptionType::kInt64:
    case OptionType::kDouble: {
      std::string s = integer ? "an integer" : "a number";
      if (!g.bounded) return s;
      if (g.hi >= type_max(row.type)) return s + (g.lo_open ? " > " : " >= ") + number(g.lo);
      return s + " in " + (g.lo_open ? "(" : "[") + number(g.lo) + ", " + number(g.hi) + "]";
    }
    case OptionType::kString: return "a string";
    case OptionType::kStringList: return "a comma-separated list";
    case OptionType::kExecutionMode: return "one of " + execution_mode_names() + " (any case, or their ids)";
  }
  return "?";
}

Result<OptionValue> parse_session_option(const SessionOptionRow& row, std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  switch (row.type) {
    case OptionType::kBool: {
      const std::string word = row.env_word();
      const std::string s = lower(trim(text));
      bool b = false;
      if (!word.empty()) {
        if (s == lower(word)) return OptionValue(true);
        if (parse_bool(text, &b)) return OptionValue(false);
      } else {
        if (parse_bool(text, &b)) return OptionValue(b);
        for (const std::string& w : sibling_words(row))
          if (s == lower(w)) return OptionValue(true);
      }
      return invalid_argument(quoted + " is not a boolean; expected " + describe_session_option(row));
    }
    case OptionType::kInt:
    case OptionType::kInt64: {
      std::string_view t = trim(text);
      if (!t.empty() && t.front() == '+') t.remove_prefix(1);
      int64_t v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec == std::errc::result_out_of_range)
        return invalid_argument(quoted + " is out of range; expected " + describe_session_option(row));
      if (t.empty() || ec != std::errc() || end != t.data() + t.size())
        return invalid_argument(quoted + " is not an integer; expected " + describe_session_option(row));
      return OptionValue(v);
    }
    case OptionType::kDouble: {
      std::string_view t = trim(text);
      if (!t.empty() && t.front() == '+') t.remove_prefix(1);
      double v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v))
        return invalid_argument(quoted + " is not a number; expected " + describe_session_option(row));
      return OptionValue(v);
    }
    case OptionType::kString: return OptionValue(std::string(text));
    case OptionType::kStringList: {
      std::vector<std::string> items;
      size_t start = 0;
      while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view item = trim(text.substr(start, end - start));
        if (!item.empty()) items.emplace_back(item);
        start = end + 1;
      }
      return OptionValue(std::move(items));
    }
    case OptionType::kExecutionMode: {
      ExecutionMode m;
      if (!parse_execution_mode(std::string(trim(text)), &m))
        return invalid_argument(quoted + " is not an execution mode; expected " + describe_session_option(row));
      return OptionValue(std::string(execution_mode_name(m)));
    }
  }
  return internal_error("unknown option type");
}

Result<bool> parse_session_bool(std::string_view text) {
  bool b = false;
  if (!parse_bool(text, &b))
    return invalid_argument("'" + std::string(text) + "' is not a boolean; expected " + std::string(kBooleans));
  return b;
}

std::string format_session_option(const SessionOptionRow& row, const OptionValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) {
    if (!row.env_word().empty() && *b) return row.env_word();
    return *b ? "1" : "0";
  }
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) return format_double(*d);
  if (const std::string* s = std::get_if<std::string>(&value)) return *s;
  return join(std::get<std::vector<std::string>>(value), ",");
}

Status set_session_option(SessionOptions* opts, const SessionOptionRow& row, OptionValue value,
                          const std::string& source, OptionClamp clamp) {
  auto wrong = [&] {
    return invalid_argument(source + " is not " + kind_of(row.type) + "; expected " + describe_session_option(row));
  };
  switch (row.type) {
    case OptionType::kBool:
      if (!std::holds_alternative<bool>(value)) return wrong();
      break;
    case OptionType::kInt:
    case OptionType::kInt64:
    case OptionType::kDouble: {
      double x = 0;
      if (const int64_t* i = std::get_if<int64_t>(&value)) {
        x = static_cast<double>(*i);
        if (row.type == OptionType::kDouble) value = x;
      } else if (const double* d = std::get_if<double>(&value); d && row.type == OptionType::kDouble) {
        x = *d;
      } else {
        return wrong();
      }
      const OptionRange& g = row.range;
      const bool too_low = g.bounded && (g.lo_open ? !(x > g.lo) : !(x >= g.lo));
      const bool too_high = (g.bounded && !(x <= g.hi)) || (row.type == OptionType::kInt && x < INT_MIN) ||
                            !std::isfinite(x);
      if (too_low && g.raise_to_lo && clamp == OptionClamp::kRaiseToLo && !std::isnan(x)) {
        // The documented floor (warmup_runs >= 1, ...): below it means "the least there is".
        value = is_int_type(row.type) ? OptionValue(static_cast<int64_t>(g.lo)) : OptionValue(g.lo);
      } else if (too_low || too_high) {
        return invalid_argument(source + " is out of range; expected " + describe_session_option(row));
      }
      break;
    }
    case OptionType::kString:
      if (!std::holds_alternative<std::string>(value)) return wrong();
      break;
    case OptionType::kStringList:
      if (!std::holds_alternative<std::vector<std::string>>(value)) return wrong();
      break;
    case OptionType::kExecutionMode: {
      ExecutionMode m;
      const std::string* name = std::get_if<std::string>(&value);
      const int64_t* id = std::get_if<int64_t>(&value);
      if (!(name ? parse_execution_mode(*name, &m) : id && execution_mode_from_id(*id, &m))) return wrong();
      value = std::string(execution_mode_name(m));
      break;
    }
  }
  row.put(*opts, value);
  return Status::ok();
}

}  // namespace sdx::runtime
