#include "runtime/session.h"

#include <map>

#include "frontend/onnx/onnx_loader.h"
#include "ir/op_schema.h"
#include "ir/type_inference.h"
#include "ir/verifier.h"

namespace sdx::runtime {

std::string describe_unsupported(const std::vector<const ir::Node*>& nodes) {
  std::map<std::string, std::vector<std::string>> by_op;
  for (const ir::Node* n : nodes) {
    std::string op = (n->domain().empty() ? "" : n->domain() + ".") + n->op_type() + " (opset " + std::to_string(n->opset()) + ")";
    by_op[op].push_back("'" + n->name() + "'");
  }
  std::string msg = std::to_string(by_op.size()) + " unsupported operator" + (by_op.size() == 1 ? "" : "s") + ": ";
  bool first = true;
  for (const auto& [op, names] : by_op) {
    if (!first) msg += "; ";
    first = false;
    msg += op + " at node" + (names.size() == 1 ? " " : "s ");
    for (size_t i = 0; i < names.size() && i < 8; ++i) msg += (i ? ", " : "") + names[i];
    if (names.size() > 8) msg += ", ... (" + std::to_string(names.size()) + " in all)";
  }
  return msg;
}

Result<std::unique_ptr<Session>> Session::load_file(const std::string& path, SessionOptions options) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_file(path), "");
  auto s = create(std::move(model), options);
  if (!s.is_ok()) return s.status().with_context("model '" + path + "'");
  return s;
}

Result<std::unique_ptr<Session>> Session::load_bytes(const std::string& bytes, SessionOptions options) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(bytes), "");
  return create(std::move(model), options);
}

Result<std::unique_ptr<Session>> Session::create(ir::Model model, SessionOptions options) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  s->options_ = SessionOptions::from_env(options);
  SDX_RETURN_IF_ERROR(s->init(), "");
  return s;
}

Status Session::init() {
  if (!model_.graph) return invalid_argument("model has no graph");
  SDX_RETURN_IF_ERROR(ir::infer_types(*model_.graph), "type inference");
  SDX_RETURN_IF_ERROR(ir::verify(*model_.graph), "verifier");
  std::vector<const ir::Node*> unsupported;
  SDX_RETURN_IF_ERROR(executor_.prepare(*model_.graph, &unsupported), "");
  if (!unsupported.empty()) return unimplemented(describe_unsupported(unsupported));
  for (const ir::Value* v : model_.graph->inputs())
    if (!v->is_initializer()) inputs_.push_back({v->name(), v->type()});
  for (const ir::Value* v : model_.graph->outputs()) outputs_.push_back({v->name(), v->type()});
  return Status::ok();
}

Status Session::check_feed(const ValueInfo& info, const Datum& d) const {
  const std::string where = "input '" + info.name + "'";
  using Kind = ir::TypeInfo::Kind;
  if (info.type.kind == Kind::kSequence) {
    if (!d.is_sequence()) return invalid_argument(where + ": expected a sequence of tensors");
    return Status::ok();
  }
  if (info.type.kind == Kind::kOptional) return Status::ok();
  if (!d.is_tensor()) return invalid_argument(where + ": expected a tensor");
  const Tensor& t = d.as_tensor();
  if (info.type.kind == Kind::kTensor && info.type.elem != DType::kUndefined && t.dtype() != info.type.elem)
    return invalid_argument(where + ": expected element type " + dtype_name(info.type.elem) + " but got " +
                            dtype_name(t.dtype()));
  if (info.type.shape) {
    const auto& dims = *info.type.shape;
    if (static_cast<int>(dims.size()) != t.rank())
      return invalid_argument(where + ": expected rank " + std::to_string(dims.size()) + " with shape " +
                              info.type.shape_string() + " but got rank " + std::to_string(t.rank()) + " with shape " +
                              t.shape().to_string());
    for (int i = 0; i < t.rank(); ++i)
      if (dims[static_cast<size_t>(i)].is_fixed() && dims[static_cast<size_t>(i)].value != t.shape()[i])
        return invalid_argument(where + ": dimension " + std::to_string(i) + " must be " +
                                std::to_string(dims[static_cast<size_t>(i)].value) + " (expected shape " +
                                info.type.shape_string() + ") but got shape " + t.shape().to_string());
  }
  return Status::ok();
}

Result<std::vector<Datum>> Session::run(const std::vector<std::pair<std::string, Datum>>& feeds,
                                        const std::vector<std::string>& output_names, StepObserver* observer) const {
  const ir::Graph& g = *model_.graph;
  Frame frame(&g, nullptr);
  frame.observer = observer;
  std::vector<bool> fed(inputs_.size(), false);
  for (const auto& [name, datum] : feeds) {
    size_t idx = 0;
    while (idx < inputs_.size() && inputs_[idx].name != name) ++idx;
    if (idx == inputs_.size()) {
      const ir::Value* v = g.find_value(name);
      if (v && v->is_initializer()) {
        // Overriding an initializer that is also a graph input is allowed (ONNX semantics).
        bool is_input = false;
        for (const ir::Value* in : g.inputs()) is_input |= in == v;
        if (is_input) {
          frame.slots[static_cast<size_t>(v->index())] = datum;
          continue;
        }
      }
      std::string names;
      for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
      return invalid_argument("unknown input name '" + name + "'; the model's inputs are: " + names);
    }
    SDX_RETURN_IF_ERROR(check_feed(inputs_[idx], datum), "");
    frame.slots[static_cast<size_t>(g.find_value(name)->index())] = datum;
    fed[idx] = true;
  }
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!fed[i] && inputs_[i].type.kind != ir::TypeInfo::Kind::kOptional)
      return invalid_argument("missing input '" + inputs_[i].name + "' (" + inputs_[i].type.to_string() + " with shape " +
                              inputs_[i].type.shape_string() + ")");
  std::vector<const ir::Value*> wanted;
  if (output_names.empty()) {
    for (const ir::Value* v : g.outputs()) wanted.push_back(v);
  } else {
    for (const std::string& name : output_names) {
      const ir::Value* found = nullptr;
      for (const ir::Value* v : g.outputs())
        if (v->name() == name) found = v;
      if (!found) {
        std::string names;
        for (const auto& o : outputs_) names += (names.empty() ? "" : ", ") + o.name;
        return invalid_argument("unknown output name '" + name + "'; the model's outputs are: " + names);
      }
      wanted.push_back(found);
    }
  }
  // Planned memory, unless the caller observes the run itself or a feed is not a plain tensor.
  std::unique_ptr<Context> ctx;
  Context::Entry* entry = nullptr;
  if (options_.execution_mode == ExecutionMode::kAuto && !observer) {
    ShapeSignature sig;
    bool plannable = true;
    for (const ir::Value* in : g.inputs()) {
      const Datum& d = frame.slots[static_cast<size_t>(in->index())];
      if (d.is_tensor()) sig.emplace_back(d.as_tensor().dtype(), d.as_tensor().shape());
      else if (!d.is_empty() || !in->is_initializer()) plannable = false;
    }
    if (plannable) {
      ctx = acquire_context();
      entry = &ctx->entry_for(sig, executor_.plan());
      if (entry->phase == PlanPhase::kShapesFrozen) frame.planned = &entry->planned;
      else frame.observer = entry->recorder.get();
    }
  }
  Status status = executor_.run(frame);
  if (status.is_ok() && entry && entry->phase == PlanPhase::kWarmup && ++entry->warmup_runs >= options_.warmup_runs)
    status = ctx->freeze(*entry, executor_.plan());
  std::vector<Datum> out;
  if (status.is_ok()) {
    out.reserve(wanted.size());
    for (const ir::Value* v : wanted) {
      // Never hand out planned memory (reused by the next run) or the caller's own input buffers.
      Datum d = frame.lookup(v);
      if (d.is_tensor() && d.as_tensor().buffer() && d.as_tensor().buffer()->borrowed()) {
        auto copy = d.as_tensor().clone();
        if (!copy.is_ok()) status = copy.status();
        else d = Datum::tensor(std::move(copy).value());
      }
      out.push_back(std::move(d));
    }
  }
  // Intermediates must not outlive the context that owns their memory.
  frame.slots.clear();
  if (ctx) release_context(std::move(ctx));
  if (!status.is_ok()) return status;
  return out;
}

std::unique_ptr<Context> Session::acquire_context() const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (pool_.empty()) return std::make_unique<Context>();
  std::unique_ptr<Context> ctx = std::move(pool_.back());
  pool_.pop_back();
  return ctx;
}

void Session::release_context(std::unique_ptr<Context> ctx) const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(ctx));
}

}  // namespace sdx::runtime
