// Session: a loaded, verified, optimized model ready to run; the entry point of sdx's public C++ API.
// Immutable after load: run() may be called from many threads at once. Errors are values (status.h).
//
//   sdx::Result<sdx::Session> loaded = sdx::Session::load("model.onnx");    // or a .sdx bundle, or bytes
//   if (!loaded.is_ok()) return fail(loaded.status());
//   sdx::Session& s = loaded.value();
//   for (const sdx::ValueInfo& in : s.inputs()) std::cout << in.name << " " << in.type << "\n";
//
//   const int64_t dims[] = {1, 4};
//   float x[4] = {1, 2, 3, 4};
//   sdx::Session::Feeds feeds = {{"x", sdx::Value::borrow({sdx::ElementType::kFloat32, dims, 2, x}).value()}};
//   sdx::RunReport report;
//   sdx::Result<std::vector<sdx::Value>> outs = s.run(feeds, {"y"}, &report);   // report: optional
//
// The positional path on a RunContext is the fast one: once the plan is captured it replays with no
// allocation at all, and the outputs stay in the context until its next run.
//
//   std::unique_ptr<sdx::RunContext> ctx = s.create_context();
//   sdx::TensorView args[] = {{sdx::ElementType::kFloat32, dims, 2, x}};   // one per inputs(), in order
//   if (sdx::Status st = s.run(*ctx, args, 1); !st.is_ok()) ...
//   sdx::TensorView y;
//   ctx->output_view(0, &y);
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sdx/element_type.h"
#include "sdx/loop_report.h"
#include "sdx/session_options.h"
#include "sdx/status.h"
#include "sdx/tensor.h"

namespace sdx {

// One dimension of a declared shape: fixed (value >= 0), symbolic (param), or unknown (neither).
struct Dim {
  int64_t value = -1;
  std::string param;
};

// A graph input or output as the model declares it.
struct ValueInfo {
  std::string name;
  // onnxruntime's spelling: "tensor(float)", "seq(tensor(int64))", "optional(tensor(float))".
  std::string type;
  bool is_tensor = false;
  ElementType element_type = ElementType::kUndefined;  // a tensor's
  bool has_shape = false;                              // false: rank unknown
  std::vector<Dim> shape;
};

// What one run did (the engine's ExecutionReport). Strings are static or live as long as the session.
struct RunReport {
  int32_t slot_count = 0;  // values in the plan that ran
  // The mode this call used and the mode the session was asked for: names ("CPU_REPLAY") and the ids of
  // the C ABI's sdx_execution_mode_t; why they differ, or null.
  const char* execution_mode = "";
  const char* mode_requested = "";
  int32_t execution_mode_id = 0;
  int32_t mode_requested_id = 0;
  const char* mode_fallback_reason = nullptr;
  // The plan's phase after this call ("WARMUP", "SHAPES_FROZEN", "CAPTURED", "REPLAYING") and its
  // sdx_plan_phase_t id.
  const char* phase = "";
  int32_t phase_id = 0;
  int64_t replay_count = 0;       // replays of this plan so far, this call included
  int64_t call_count = 0;         // calls of this plan so far, this call included
  double avg_latency_us = 0;      // average latency of this plan's calls
  int64_t peak_memory_bytes = 0;  // memory the plan holds
  int32_t captured_steps = 0;
  int32_t gap_steps = 0;
  int32_t slot_by_slot_steps = 0;
  // The kernel JIT in this plan: segments found, fused (and the steps they replaced), pending, failed.
  int32_t jit_segments = 0;
  int32_t jit_fused_segments = 0;
  int32_t jit_fused_steps = 0;
  int32_t jit_pending_segments = 0;
  int32_t jit_failed_segments = 0;
  // Shape buckets (SessionOptions::shape_buckets): entries the call's bucketed dims were padded by (0: ran
  // at the shapes given).
  int64_t bucket_padding = 0;
  const char* fallback_reason = nullptr;  // why this call did not replay, or null
};

// Per-caller state of the positional path: the plans it has frozen and the outputs of its last run. One
// call at a time; it must not outlive the session that created it.
class RunContext {
 public:
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  // Outputs of the last successful run (the requested ones, in the order asked for).
  size_t num_outputs() const;
  // A view of output i when it is a dense tensor (false for strings, sequences and "none"); valid until
  // the next run on this context.
  bool output_view(size_t i, TensorView* out) const;
  // Output i of any kind, sharing the context's storage: copy what must outlive the next run (owned()).
  Value output(size_t i) const;
  // The phase of the plan the last run used, as an sdx_plan_phase_t id (WARMUP = 0 ... REPLAYING = 3).
  int32_t plan_phase_id() const;
  // Runs on this context stop between two steps, with StatusCode::kCancelled, once *flag is true (another
  // thread may set it; its release store pairs with the run's acquire loads). Null: never. The flag stays
  // the caller's and must outlive the runs it governs.
  void set_terminate_flag(const std::atomic<bool>* flag);

  struct Impl;

 private:
  explicit RunContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class Session;
  friend struct SessionAccess;
};

// What a caller changes in an ONNX model as it loads (onnxruntime's SessionOptions: free dimension
// overrides, add_initializer / add_external_initializers, add_external_initializers_from_files_in_memory).
// Everything is read during load() only: the session keeps copies. A model loaded with overrides skips
// the disk plan cache; a bundle refuses them.
struct ModelOverrides {
  // Symbolic dims of graph inputs/outputs fixed by their dim_param name, or by their denotation.
  std::vector<std::pair<std::string, int64_t>> free_dims_by_name, free_dims_by_denotation;
  // Initializers of the main graph replaced by name (same element type and shape as the model's); also how
  // to supply an initializer whose external data the model cannot reach.
  std::vector<std::pair<std::string, TensorView>> initializers;
  // External data files by the location the model's tensors give, instead of files beside the model.
  std::vector<std::pair<std::string, std::string_view>> external_files;
};

class Session {
 public:
  using Feeds = std::vector<std::pair<std::string, Value>>;

  // An ONNX model file (external data read from its folder, confined to it) or a .sdx bundle (told apart
  // by its magic, whatever the file is called).
  static Result<Session> load(const std::string& path, const SessionOptions& options = {});
  // An ONNX model's bytes (no external data), or a bundle's.
  static Result<Session> load_bytes(std::string_view bytes, const SessionOptions& options = {});
  // The same, with the model changed as it loads.
  static Result<Session> load(const std::string& path, const SessionOptions& options, const ModelOverrides& overrides);
  static Result<Session> load_bytes(std::string_view bytes, const SessionOptions& options,
                                    const ModelOverrides& overrides);

  ~Session();
  Session(Session&& other) noexcept;
  Session& operator=(Session&& other) noexcept;

  // Graph inputs that are not initializers, in declaration order; graph outputs.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  // Position of an input/output by name, or -1.
  int input_index(std::string_view name) const;
  int output_index(std::string_view name) const;
  // Whether the graph has a value (input, initializer, intermediate or output) of this name.
  bool has_value(std::string_view name) const;
  // Bytes of the constant tensors the loaded session keeps: the initializers of its optimized graph and of
  // the subgraph bodies in it (If branches, Loop/Scan bodies), as stored (a string tensor counts its
  // element slots, not its characters). What a loaded model holds whatever it runs; not counted: each
  // context's planned intermediates (RunReport::peak_memory_bytes), kernels' packed weight copies, code.
  int64_t weight_bytes() const;

  // Runs the model on named inputs. Empty `output_names` = all outputs. Inputs are checked by name,
  // element type, rank and fixed dims; errors name the input and what was expected. Outputs own their
  // storage (or share it with a borrowed input they alias: see Value::borrows).
  // `terminate`: as RunContext::set_terminate_flag, for this call.
  Result<std::vector<Value>> run(const Feeds& feeds, const std::vector<std::string>& output_names = {},
                                 RunReport* report = nullptr, const std::atomic<bool>* terminate = nullptr) const;

  // The positional path. A new context; or one from the session's pool, given back with release_context.
  std::unique_ptr<RunContext> create_context() const;
  std::unique_ptr<RunContext> acquire_context() const;
  void release_context(std::unique_ptr<RunContext> ctx) const;
  // One TensorView per inputs() entry, in order; `outputs` are positions in outputs() (empty = all).
  // Results stay in ctx until its next run.
  Status run(RunContext& ctx, const TensorView* inputs, size_t num_inputs, const std::vector<int>& outputs = {},
             RunReport* report = nullptr) const;
  // Copies ctx's dense tensor outputs into dst[i] (nullptr: skipped; each at least the output's nbytes),
  // on the session's intra-op threads when they are large.
  void copy_outputs(const RunContext& ctx, void* const* dst) const;
  // Freezes the shapes of ctx's current plan now instead of after the configured warmup runs. Needs one
  // warmup run with the shapes to freeze.
  Status freeze_shapes(RunContext& ctx) const;
  // Overrides an initializer for runs on ctx (the values are copied); a new element type or shape drops
  // ctx's plans. Constants the optimizer folded away are refused (failed_precondition).
  Status set_variable(RunContext& ctx, const std::string& name, const TensorView& value) const;
  // One report per execution of a Loop node (nested ones included) since load or the last
  // clear_loop_reports(), oldest first; the latest 256 are kept. Empty unless the options set loop_analysis.
  std::vector<LoopReport> loop_reports() const;
  void clear_loop_reports() const;

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend struct SessionAccess;
};

// Compiles an ONNX model into a .sdx bundle: optimized with `options`, and warmed up for each entry of
// `calls` (a value for every graph input, by name), so that a session loaded from it starts at the first
// call with no optimizer and no warmup. Returns the bundle's bytes.
using NamedViews = std::vector<std::pair<std::string, TensorView>>;
Result<std::string> compile_bundle(const std::string& model_bytes, const SessionOptions& options,
                                   const std::vector<NamedViews>& calls);

}  // namespace sdx
