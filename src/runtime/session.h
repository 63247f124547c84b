// Session: a loaded, verified model ready to run. Immutable after load; run()
// may be called from many threads at once.
//
//   SDX_ASSIGN_OR_RETURN(auto session, Session::load_file("model.onnx"), "");
//   std::vector<std::pair<std::string, Datum>> feeds = {{"x", Datum::tensor(x)}};
//   SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, session->run(feeds, {"y"}), "");
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/datum.h"
#include "core/status.h"
#include "ir/graph.h"
#include "runtime/context.h"
#include "runtime/graph_executor.h"
#include "runtime/session_options.h"

namespace sdx::runtime {

struct ValueInfo {
  std::string name;
  ir::TypeInfo type;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> load_file(const std::string& path, SessionOptions options = {});
  static Result<std::unique_ptr<Session>> load_bytes(const std::string& bytes, SessionOptions options = {});
  // Takes an already-built model (C++ graph builder, tests).
  static Result<std::unique_ptr<Session>> create(ir::Model model, SessionOptions options = {});

  // Graph inputs that are not initializers, in declaration order.
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const ir::Model& model() const { return model_; }
  const SessionOptions& options() const { return options_; }
  // The plan the session runs (all graph outputs requested).
  const plan::Plan& plan() const { return executor_.plan(); }

  // Runs the model. Empty output_names = all outputs. Inputs are checked by name,
  // element type, rank and fixed dims; errors name the input and what was expected.
  // `observer`, when given, sees every top-level step (warmup shape recording, introspection).
  Result<std::vector<Datum>> run(const std::vector<std::pair<std::string, Datum>>& feeds,
                                 const std::vector<std::string>& output_names = {},
                                 StepObserver* observer = nullptr) const;

 private:
  Session() = default;
  Status init();
  Status check_feed(const ValueInfo& info, const Datum& d) const;

  std::unique_ptr<Context> acquire_context() const;
  void release_context(std::unique_ptr<Context> ctx) const;

  ir::Model model_;
  SessionOptions options_;
  std::vector<ValueInfo> inputs_, outputs_;
  GraphExecutor executor_;
  // Idle per-caller contexts. A caller takes one for the duration of run() and gives it
  // back; the mutex guards only this list, never a run.
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Context>> pool_;
};

// Describes nodes with no kernel as one message: "3 unsupported operators: Foo (opset 13) at nodes 'a', 'b'; ...".
std::string describe_unsupported(const std::vector<const ir::Node*>& nodes);

}  // namespace sdx::runtime
