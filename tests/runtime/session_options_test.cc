// The session option table (src/runtime/session_options.inc): every row's default is the struct's and
// parses back, every variable round-trips, and malformed values are errors naming the variable, the
// value and what is accepted.
#include "runtime/session_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "runtime/session_option_table.h"

namespace sdx::runtime {
namespace {

// Unsets every variable of the table for the test's duration (the caller's environment may set some,
// e.g. SDX_VERIFY_EACH_PASS) and restores them afterwards; set() sets one more until then.
class CleanEnv {
 public:
  CleanEnv() {
    for (const SessionOptionRow& r : session_option_rows()) save(r.env_name());
    for (const SessionOptionSwitch& s : session_option_switches()) save(s.env);
  }
  ~CleanEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  void save(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
    unsetenv(name.c_str());
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

Result<SessionOptions> with_env(const std::string& name, const std::string& value, SessionOptions base = {}) {
  CleanEnv env;
  env.set(name, value);
  return SessionOptions::from_env(std::move(base));
}

std::string error_of(const Result<SessionOptions>& r) { return r.is_ok() ? "(ok)" : r.status().message(); }

TEST(SessionOptionsTable, RowsAreWellFormed) {
  std::set<std::string> pythons, fields, envs;
  for (const SessionOptionRow& r : session_option_rows()) {
    EXPECT_TRUE(pythons.insert(r.python).second) << r.python;
    EXPECT_TRUE(fields.insert(r.field).second) << r.field;
    EXPECT_TRUE(envs.insert(r.env).second) << r.env;
    EXPECT_EQ(r.env_name().rfind("SDX_", 0), 0u) << r.env;
    EXPECT_NE(std::string(r.help), "") << r.field;
    EXPECT_EQ(find_session_option(r.python), &r);
    if (r.c_field) EXPECT_EQ(find_session_option_by_c_field(r.c_field), &r);
    if (!r.env_word().empty()) EXPECT_EQ(r.type, OptionType::kBool) << r.env;
  }
  EXPECT_EQ(find_session_option("no_such_option"), nullptr);
  ASSERT_EQ(session_option_switches().size(), 1u);
  EXPECT_STREQ(session_option_switches()[0].env, "SDX_NO_MEMORY_PLANNER");
}

TEST(SessionOptionsTable, EveryRowParsesItsDefault) {
  const SessionOptions defaults;
  CleanEnv env;
  Result<SessionOptions> from_env = SessionOptions::from_env({});
  ASSERT_TRUE(from_env.is_ok()) << error_of(from_env);
  for (const SessionOptionRow& r : session_option_rows()) {
    // The struct's C++ default is the table's ...
    EXPECT_EQ(r.get(defaults), r.default_value) << r.field;
    // ... its environment form reads back as itself ...
    const std::string text = format_session_option(r, r.default_value);
    Result<OptionValue> parsed = parse_session_option(r, text);
    ASSERT_TRUE(parsed.is_ok()) << r.env << "='" << text << "': " << parsed.status().message();
    EXPECT_EQ(*parsed, r.default_value) << r.env << "='" << text << "'";
    // ... and an empty environment changes nothing.
    EXPECT_EQ(r.get(*from_env), r.default_value) << r.field;
  }
}

// A value of `r` other than its default, inside its range.
OptionValue another_value(const SessionOptionRow& r) {
  switch (r.type) {
    case OptionType::kBool: return !std::get<bool>(r.default_value);
    case OptionType::kInt:
    case OptionType::kInt64: {
      const int64_t d = std::get<int64_t>(r.default_value);
      return static_cast<double>(d + 1) <= r.range.hi || !r.range.bounded ? d + 1 : d - 1;
    }
    case OptionType::kDouble: {
      const double d = std::get<double>(r.default_value);
      return d + 0.125 <= r.range.hi || !r.range.bounded ? d + 0.125 : d - 0.125;
    }
    case OptionType::kString: return std::string("/tmp/sdx options test");
    case OptionType::kStringList: return std::vector<std::string>{"PassA", "PassB"};
    case OptionType::kExecutionMode: return std::string("SLOT_BY_SLOT");
  }
  return false;
}

TEST(SessionOptionsTable, EveryVariableRoundTrips) {
  for (const SessionOptionRow& r : session_option_rows()) {
    const OptionValue v = another_value(r);
    ASSERT_NE(v, r.default_value) << r.field;
    const std::string text = format_session_option(r, v);
    Result<SessionOptions> o = with_env(r.env_name(), text);
    ASSERT_TRUE(o.is_ok()) << r.env_name() << "='" << text << "': " << error_of(o);
    EXPECT_EQ(r.get(*o), v) << r.env_name() << "='" << text << "'";
    // The same value set in code passes the same checks unchanged.
    SessionOptions code;
    ASSERT_TRUE(set_session_option(&code, r, v, r.python).is_ok()) << r.python;
    EXPECT_EQ(r.get(code), v) << r.python;
  }
}

TEST(SessionOptionsTable, MalformedValuesAreErrorsNamingTheVariable) {
  for (const SessionOptionRow& r : session_option_rows()) {
    const char* bad = nullptr;
    switch (r.type) {
      case OptionType::kBool: bad = "maybe"; break;
      case OptionType::kInt:
      case OptionType::kInt64: bad = "12abc"; break;
      case OptionType::kDouble: bad = "0.5x"; break;
      case OptionType::kExecutionMode: bad = "BOGUS"; break;
      case OptionType::kString:
      case OptionType::kStringList: continue;  // every text is one
    }
    Result<SessionOptions> o = with_env(r.env_name(), bad);
    ASSERT_FALSE(o.is_ok()) << r.env_name() << "=" << bad;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(error_of(o).find(r.env_name() + "='" + bad + "'"), std::string::npos) << error_of(o);
    EXPECT_NE(error_of(o).find("expected"), std::string::npos) << error_of(o);
  }
  // What each message says.
  EXPECT_EQ(error_of(with_env("SDX_WARMUP_ITERATIONS", "abc")),
            "SDX_WARMUP_ITERATIONS='abc' is not an integer; expected an integer >= 1");
  EXPECT_EQ(error_of(with_env("SDX_JIT_ENABLED", "maybe")),
            "SDX_JIT_ENABLED='maybe' is not a boolean; expected 1/0, true/false, on/off or yes/no");
  EXPECT_EQ(error_of(with_env("SDX_PLAN_CACHE_MEMORY_FRACTION", "1.5")),
            "SDX_PLAN_CACHE_MEMORY_FRACTION='1.5' is out of range; expected a number in (0, 1]");
  const auto says = [](const char* var, const char* value, const char* text) {
    const std::string e = error_of(with_env(var, value));
    return e.find(text) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << e;
  };
  EXPECT_TRUE(says("SDX_PLAN_CACHE_MEMORY_FRACTION", "0", "out of range"));
  EXPECT_TRUE(says("SDX_PLAN_CACHE_MEMORY_FRACTION", "nan", "is not a number"));
  EXPECT_TRUE(says("SDX_LOG_LEVEL", "4", "expected an integer in [0, 3]"));
  EXPECT_TRUE(says("SDX_INTRA_OP_THREADS", "99999999999", "out of range"));
  EXPECT_TRUE(says("SDX_PLAN_CACHE_MEMORY_BUDGET_BYTES", "-1", "expected an integer >= 0"));
  EXPECT_TRUE(says("SDX_JIT_FUSION_SCORE_THRESHOLD", "-0.5", "out of range"));
  EXPECT_TRUE(says("SDX_OPTIMIZER_INT8", "sometimes", "or dynamic (on)"));
  EXPECT_TRUE(says("SDX_NO_MEMORY_PLANNER", "maybe", "SDX_NO_MEMORY_PLANNER='maybe' is not a boolean"));
  EXPECT_TRUE(says("SDX_EXECUTION_MODE", "BOGUS", "SDX_EXECUTION_MODE='BOGUS' is not an execution mode"));
}

TEST(SessionOptionsTable, TheFormsAcceptedBeforeStillAre) {
  for (const char* on : {"1", "true", "TRUE", "on", "ON", "yes", " 1 "}) {
    auto o = with_env("SDX_JIT_ENABLED", on, [] { SessionOptions b; b.jit.enabled = false; return b; }());
    ASSERT_TRUE(o.is_ok()) << on;
    EXPECT_TRUE(o->jit.enabled) << on;
  }
  for (const char* off : {"0", "false", "FALSE", "off", "OFF", "no"}) {
    auto o = with_env("SDX_OPTIMIZER_ENABLED", off);
    ASSERT_TRUE(o.is_ok()) << off;
    EXPECT_FALSE(o->optimizer.enabled) << off;
  }
  // An empty variable counts as unset.
  EXPECT_TRUE(with_env("SDX_OPTIMIZER_ENABLED", "")->optimizer.enabled);
  EXPECT_EQ(with_env("SDX_WARMUP_ITERATIONS", "")->warmup_runs, 1);
  // int8: a boolean, or "dynamic" for int8 weights and X quantized per row; a boolean clears dynamic.
  auto dyn = with_env("SDX_OPTIMIZER_INT8", "dynamic");
  ASSERT_TRUE(dyn.is_ok()) << error_of(dyn);
  EXPECT_TRUE(dyn->optimizer.int8 && dyn->optimizer.int8_dynamic);
  SessionOptions dynamic_in_code;
  dynamic_in_code.optimizer.int8_dynamic = true;
  auto weight_only = with_env("SDX_OPTIMIZER_INT8", "1", dynamic_in_code);
  EXPECT_TRUE(weight_only->optimizer.int8 && !weight_only->optimizer.int8_dynamic);
  CleanEnv none;
  auto implied = SessionOptions::from_env(dynamic_in_code);  // dynamic implies int8
  EXPECT_TRUE(implied->optimizer.int8);
  // The kill switch wins over SDX_EXECUTION_MODE; "0" leaves the mode alone.
  {
    CleanEnv env;
    env.set("SDX_EXECUTION_MODE", "cpu_replay");
    env.set("SDX_NO_MEMORY_PLANNER", "1");
    EXPECT_EQ(SessionOptions::from_env({})->execution_mode, ExecutionMode::kSlotBySlot);
    env.set("SDX_NO_MEMORY_PLANNER", "0");
    EXPECT_EQ(SessionOptions::from_env({})->execution_mode, ExecutionMode::kCpuReplay);
  }
  EXPECT_EQ(with_env("SDX_EXECUTION_MODE", "16")->execution_mode, ExecutionMode::kCpuReplay);
  EXPECT_EQ(with_env("SDX_EXECUTION_MODE", "mlir_cpu")->execution_mode, ExecutionMode::kCpuReplay);
  // A list: trimmed, empty items dropped, added to the field's list without repeats.
  SessionOptions skip_one;
  skip_one.optimizer.skip = {"AlgebraicOptimizations"};
  auto skips = with_env("SDX_OPTIMIZER_SKIP", " PeepholeOptimizations,,AlgebraicOptimizations ,", skip_one);
  EXPECT_EQ(skips->optimizer.skip, (std::vector<std::string>{"AlgebraicOptimizations", "PeepholeOptimizations"}));
  EXPECT_EQ(with_env("SDX_PLAN_CACHE_MEMORY_FRACTION", "+0.5")->plan_cache_memory_fraction, 0.5);
  EXPECT_EQ(with_env("SDX_JIT_FUSION_SCORE_THRESHOLD", "1.5")->jit.fusion_score_threshold, 1.5);
}

TEST(SessionOptionsTable, FloorsRaiseAndOtherRangesAreErrors) {
  // Documented floors (warmup_runs >= 1, ...) raise lower values, from the environment and from code.
  EXPECT_EQ(with_env("SDX_WARMUP_ITERATIONS", "0")->warmup_runs, 1);
  EXPECT_EQ(with_env("SDX_WARMUP_ITERATIONS", "-5")->warmup_runs, 1);
  EXPECT_EQ(with_env("SDX_INTER_OP_THREADS", "0")->inter_op_num_threads, 1);
  EXPECT_EQ(with_env("SDX_OPTIMIZER_MAX_ITERATIONS", "0")->optimizer.max_iterations, 1);
  CleanEnv env;
  SessionOptions low;
  low.warmup_runs = 0;
  low.plan_cache_max_count = -3;
  low.inter_op_num_threads = 0;
  auto raised = SessionOptions::from_env(low);
  ASSERT_TRUE(raised.is_ok()) << error_of(raised);
  EXPECT_EQ(raised->warmup_runs, 1);
  EXPECT_EQ(raised->plan_cache_max_count, 1);
  EXPECT_EQ(raised->inter_op_num_threads, 1);
  SessionOptions bad;
  bad.plan_cache_memory_fraction = 2;
  EXPECT_EQ(error_of(SessionOptions::from_env(bad)),
            "SessionOptions.plan_cache_memory_fraction=2 is out of range; expected a number in (0, 1]");
  // The C ABI never clamps: set_session_option with kNever errors instead.
  SessionOptions c;
  const SessionOptionRow* warmup = find_session_option_by_c_field("num_warmup_iterations");
  ASSERT_NE(warmup, nullptr);
  Status s = set_session_option(&c, *warmup, int64_t{-1}, "num_warmup_iterations -1", OptionClamp::kNever);
  EXPECT_EQ(s.message(), "num_warmup_iterations -1 is out of range; expected an integer >= 1");
  const SessionOptionRow* mode = find_session_option_by_c_field("execution_mode");
  ASSERT_NE(mode, nullptr);
  ASSERT_TRUE(set_session_option(&c, *mode, int64_t{1}, "execution_mode 1", OptionClamp::kNever).is_ok());
  EXPECT_EQ(c.execution_mode, ExecutionMode::kSlotBySlot);
  EXPECT_FALSE(set_session_option(&c, *mode, int64_t{17}, "execution_mode 17", OptionClamp::kNever).is_ok());
}

}  // namespace
}  // namespace sdx::runtime
