// What is behind the public API's handles (include/sdx/), for the code of sdx that needs the engine's own
// types: the C ABI (its options mapping), the Python module's introspection (debugger, replay checker,
// plan introspection, JIT statistics, the optimizer's report, the graph) and the implementation itself.
// Users of the public API never include this: include/ has no path to it.
//
//   runtime::Session& engine = api::engine(public_session);
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/datum.h"
#include "runtime/context.h"
#include "runtime/execution_report.h"
#include "runtime/session.h"
#include "runtime/session_options.h"
#include "sdx/session.h"
#include "sdx/session_options.h"
#include "sdx/tensor.h"

namespace sdx {

struct SessionOptions::Impl {
  runtime::SessionOptions options;
};

struct Value::Impl {
  Datum datum;
};

struct RunContext::Impl {
  std::unique_ptr<runtime::Context> ctx;
  const std::atomic<bool>* terminate = nullptr;  // set_terminate_flag's
};

struct Session::Impl {
  ~Impl();
  std::unique_ptr<runtime::Session> session;
  std::vector<ValueInfo> inputs, outputs;
  // acquire_context's pool: one fast slot, then a locked list (as runtime::ContextPool). The release store
  // publishes the context's state (plans, frozen memory) written by its last user; the acquire exchange
  // makes it visible to the next. Emptied in ~Impl, before the session the contexts point into.
  std::atomic<RunContext*> cached{nullptr};
  std::mutex mu;  // guards overflow only
  std::vector<std::unique_ptr<RunContext>> overflow;
};

// Friends of the public classes: build them from, and open them onto, the engine's types.
struct ValueAccess {
  static Value make(Datum d) { return Value(std::unique_ptr<Value::Impl>(new Value::Impl{std::move(d)})); }
  static const Datum& datum(const Value& v) { return v.impl_->datum; }
};
struct OptionsAccess {
  static runtime::SessionOptions& get(SessionOptions& o) { return o.impl_->options; }
  static const runtime::SessionOptions& get(const SessionOptions& o) { return o.impl_->options; }
};
struct SessionAccess {
  static Session make(std::unique_ptr<runtime::Session> s);
  static runtime::Session& engine(const Session& s) { return *s.impl_->session; }
  static runtime::Context& context(RunContext& c) { return *c.impl_->ctx; }
};

namespace api {

inline runtime::Session& engine(const Session& s) { return SessionAccess::engine(s); }
inline runtime::SessionOptions& engine_options(SessionOptions& o) { return OptionsAccess::get(o); }
inline const runtime::SessionOptions& engine_options(const SessionOptions& o) { return OptionsAccess::get(o); }
inline const Datum& datum_of(const Value& v) { return ValueAccess::datum(v); }
inline Value value_of(Datum d) { return ValueAccess::make(std::move(d)); }
// The public form of a runtime report, and of a graph value's declared type.
RunReport public_report(const runtime::ExecutionReport& r);
ValueInfo public_value_info(const runtime::ValueInfo& v);

}  // namespace api
}  // namespace sdx
