#include "api/bundle.h"

#include <cstdio>
#include <future>
#include <map>

#include "api/bundle_row_proof.h"
#include "backend/cpu/simd/isa.h"
#include "backend/cpu/threading/cpu_affinity.h"
#include "backend/packed_weights.h"
#include "core/fnv1a.h"
#include "core/version.h"
#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_loader.h"
#include "frontend/onnx/onnx_writer.h"
#include "runtime/context.h"

namespace sdx::api {
namespace {

}  // namespace

bundle::PlanRecord plan_record(const runtime::PlanEntry& e) { return plan_record(*e.plan, e.signature, e.shapes()); }

bundle::PlanRecord plan_record(const plan::Plan& plan, const runtime::ShapeSignature& signature,
                               const std::vector<plan::RecordedSlot>& shapes) {
  bundle::PlanRecord p;
  for (const auto& [dt, shape] : signature) p.inputs.emplace_back(dt, shape.dims());
  for (size_t i = 0; i < plan.slots().size() && i < shapes.size(); ++i) {
    const plan::RecordedSlot& r = shapes[i];
    p.slots.push_back({plan.slots()[i].value->name(), r.seen, r.stable, r.shared, r.view_of, r.dtype, r.shape.dims()});
  }
  return p;
}

Result<std::string> write_session_bundle(const runtime::Session& s, std::vector<bundle::PlanRecord> plans,
                                         const std::string& source_digest) {
  bundle::Bundle b;
  SDX_ASSIGN_OR_RETURN(onnx::SavedModel saved, onnx::save_model(s.model(), {.weights_in_blob = true}),
                       "writing the optimized graph");
  b.graph = saved.bytes;
  b.weights = saved.blob;
  b.node_opsets = std::move(saved.node_opsets);
  b.plans = std::move(plans);
  std::vector<std::pair<std::string, std::string_view>> packed;
  if (s.packed_weights()) packed = s.packed_weights()->entries();
  for (const auto& [key, bytes] : packed) b.packed.push_back({key, bytes});
  b.manifest = {{"sdx_version", version()},
                {"source_digest", source_digest},
                {"cpu_isa", cpu::simd::isa_name(cpu::simd::detected_isa())},
                {"plans", std::to_string(b.plans.size())},
                {"packed_weights", std::to_string(b.packed.size())}};
  write_row_proof(s.row_proof(), b.manifest);
  return bundle::write_bundle(b);
}

namespace {

// A record back onto this session's plan, by value name (slots it does not name stay unseen).
Result<std::vector<plan::RecordedSlot>> slots_for(const runtime::Session& s, const bundle::PlanRecord& p, size_t index) {
  const plan::Plan& plan = s.plan();
  std::map<std::string, int> slot_of_name;
  for (size_t i = 0; i < plan.slots().size(); ++i) slot_of_name[plan.slots()[i].value->name()] = static_cast<int>(i);
  std::vector<plan::RecordedSlot> rec(plan.slots().size());
  for (const bundle::SlotRecord& r : p.slots) {
    auto it = slot_of_name.find(r.name);
    if (it == slot_of_name.end())
      return data_loss("bundle plan " + std::to_string(index) + ": slot '" + r.name + "' is not a value of the graph");
    plan::RecordedSlot& out = rec[static_cast<size_t>(it->second)];
    out.seen = r.seen;
    out.stable = r.stable;
    out.shared = r.shared;
    out.dtype = r.dtype;
    out.shape = Shape(r.dims);
    if (r.view_of >= 0) {
      auto root = slot_of_name.find(p.slots[static_cast<size_t>(r.view_of)].name);
      if (root == slot_of_name.end()) return data_loss("bundle plan " + std::to_string(index) + ": a view of an unknown slot");
      out.view_of = root->second;
    }
  }
  // A view chain that loops would hang the memory planner's walk to the root: refuse it here.
  for (size_t i = 0; i < rec.size(); ++i) {
    int r = rec[i].view_of;
    for (size_t steps = 0; r >= 0; ++steps) {
      if (steps > rec.size()) return data_loss("bundle plan " + std::to_string(index) + ": slot views form a cycle");
      r = rec[static_cast<size_t>(r)].view_of;
    }
  }
  return rec;
}

// The call's arguments in the session's input order.
Result<std::vector<runtime::TensorArg>> positional(const runtime::Session& s, const NamedInputs& named, size_t index) {
  const std::string where = "input set " + std::to_string(index);
  std::string names;
  for (const runtime::ValueInfo& in : s.inputs()) names += (names.empty() ? "" : ", ") + in.name;
  std::vector<runtime::TensorArg> args(s.inputs().size());
  std::vector<bool> given(args.size(), false);
  for (const auto& [name, arg] : named) {
    const int i = s.input_index(name);
    if (i < 0) return invalid_argument(where + ": unknown input '" + name + "'; the model's inputs are " + names);
    args[static_cast<size_t>(i)] = arg;
    given[static_cast<size_t>(i)] = true;
  }
  for (size_t i = 0; i < args.size(); ++i)
    if (!given[i])
      return invalid_argument(where + ": missing inputs '" + s.inputs()[i].name + "'; the model's inputs are " + names);
  return args;
}

}  // namespace

Result<std::string> compile_bundle(const std::string& model_bytes, runtime::SessionOptions options,
                                   const std::vector<NamedInputs>& calls) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(model_bytes), "");
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s, runtime::Session::create(std::move(model), options), "");
  // Kernels that pack constant weights when they bind leave a copy here; the bundle carries them.
  s->set_packed_weights(backend::PackedWeights::recording());
  std::vector<bundle::PlanRecord> plans;
  for (size_t c = 0; c < calls.size(); ++c) {
    SDX_ASSIGN_OR_RETURN(std::vector<runtime::TensorArg> args, positional(*s, calls[c], c), "");
    std::unique_ptr<runtime::Context> ctx = s->create_context();
    // The warmup runs, then the call that freezes and captures (where kernels pack their weights).
    for (int i = 0; i <= s->options().warmup_runs; ++i)
      SDX_RETURN_IF_ERROR(s->run(*ctx, args.data(), args.size()), "warmup of input set " + std::to_string(c));
    const runtime::PlanEntry* e = ctx->current();
    if (!e || e->shapes().empty()) return internal_error("input set " + std::to_string(c) + " left no warmup record");
    plans.push_back(plan_record(*e));
  }
  // The fused kernels of these plans compile in the background: wait for them, so that they are in the
  // JIT disk cache when a process loads the bundle (a short-lived process would start the compiler
  // itself and stop it when it exits, never keeping the kernel).
  constexpr double kJitWaitSeconds = 600;
  if (!s->wait_for_jit(kJitWaitSeconds) && s->options().log_level >= 1)
    std::fprintf(stderr, "sdx: warning: compile: the JIT kernels were still compiling after %.0f s; the bundle is "
                         "written without waiting for them (processes that load it compile them)\n", kJitWaitSeconds);
  return write_session_bundle(*s, std::move(plans), "fnv1a:" + hex64(fnv1a64(model_bytes)));
}

namespace {

// The session a bundle describes, from its structure (read_bundle_unverified: every length checked).
Result<std::unique_ptr<runtime::Session>> session_from(bundle::Bundle& b, std::shared_ptr<void> owner,
                                                       runtime::SessionOptions options) {
  auto v = b.manifest.find("sdx_version");
  if (v == b.manifest.end()) return data_loss("bundle manifest has no sdx_version");
  if (v->second != version())
    return failed_precondition("bundle was compiled by sdx " + v->second + "; this is sdx " + version() +
                               ": compile the model again (sdx compile)");
  // The initializers are borrowed from the weights section, which `owner` keeps alive.
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(b.graph, onnx::ExternalData{"", b.weights, owner}),
                       "bundle graph");
  SDX_RETURN_IF_ERROR(onnx::apply_node_opsets(model, b.node_opsets), "bundle graph");
  // The graph is the optimizer's output already (its subgraph bodies are not: they are optimized when the
  // session compiles them).
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s,
                       runtime::Session::create(std::move(model), options, /*optimized=*/true), "bundle");
  SDX_ASSIGN_OR_RETURN(runtime::RowProof rows, read_row_proof(b.manifest), "");
  s->adopt_row_proof(std::move(rows));
  for (size_t i = 0; i < b.plans.size(); ++i) {
    const bundle::PlanRecord& p = b.plans[i];
    if (p.inputs.size() != s->inputs().size())
      return data_loss("bundle plan " + std::to_string(i) + " has " + std::to_string(p.inputs.size()) +
                       " inputs; the graph has " + std::to_string(s->inputs().size()));
    runtime::ShapeSignature sig;
    for (const auto& [dt, dims] : p.inputs) sig.emplace_back(dt, Shape(dims));
    SDX_ASSIGN_OR_RETURN(std::vector<plan::RecordedSlot> rec, slots_for(*s, p, i), "");
    s->seed_plan(std::move(sig), std::move(rec));
  }
  std::vector<std::pair<std::string, std::string_view>> packed;
  for (bundle::PackedRecord& r : b.packed) packed.emplace_back(std::move(r.key), r.bytes);
  s->set_packed_weights(backend::PackedWeights::from(std::move(packed), std::move(owner)));
  return s;
}

}  // namespace

Result<std::unique_ptr<runtime::Session>> load_bundle(std::string_view bytes, std::shared_ptr<void> owner,
                                                      runtime::SessionOptions options) {
  // The checksum reads every byte (1-4 ms for a 25 MB bundle here, memory-bound) while this thread reads
  // the structure, builds the session from it (believing no length unchecked) and binds its plans. The
  // session is handed out only once the checksum has passed, and a damaged bundle is reported as damaged
  // even when building from it failed first. The checksum's thread leaves this thread's CPU: on a VM the
  // scheduler may start it there and let it preempt this thread for milliseconds (cpu_affinity.h).
  std::future<Status> verified = std::async(std::launch::async, [bytes, caller = cpu::current_cpu()] {
    cpu::move_off_cpu(caller, cpu::allowed_cpus());
    return bundle::verify_bundle(bytes);
  });
  Result<bundle::Bundle> b = bundle::read_bundle_unverified(bytes);
  // `owner` (a copy goes to the session) keeps the bytes alive until the checksum is done with them.
  Result<std::unique_ptr<runtime::Session>> s =
      b.is_ok() ? session_from(*b, owner, std::move(options)) : Result<std::unique_ptr<runtime::Session>>(b.status());
  // The first call's work, done now beside the checksum: memory frozen from each plan's record, every
  // step bound (oneDNN primitives created, packed weights adopted). Nothing runs, so nothing reads the
  // weights before they are verified.
  Status bound = s.is_ok() ? (*s)->bind_seeded_plans() : Status::ok();
  if (Status v = verified.get(); !v.is_ok()) return v;
  if (!bound.is_ok()) return bound.with_context("binding the bundle's plans");
  return s;
}

Result<std::unique_ptr<runtime::Session>> load_bundle(const std::string& bytes, runtime::SessionOptions options) {
  auto copy = std::make_shared<std::string>(bytes);
  const std::string_view view = *copy;
  return load_bundle(view, std::move(copy), std::move(options));
}

}  // namespace sdx::api
