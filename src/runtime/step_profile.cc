#include "runtime/step_profile.h"

#include <string>

#include "ir/op_schema.h"
#include "obs/events.h"
#include "obs/op_timing_tracker.h"

namespace sdx::runtime {
namespace {

void append(std::string& s, const std::vector<const Tensor*>& ts, std::vector<const Shape*>& shapes, uint64_t& bytes) {
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i) s += ", ";
    const Tensor* t = ts[i];
    shapes.push_back(t && t->defined() ? &t->shape() : nullptr);
    if (!t || !t->defined()) {
      s += "-";
      continue;
    }
    s += t->type_string();
    bytes += t->nbytes();
  }
}

}  // namespace

StepProfile profile_step(const ir::Node& node, const std::vector<const Tensor*>& in, const std::vector<const Tensor*>& out) {
  StepProfile p;
  std::string text;
  std::vector<const Shape*> in_shapes, out_shapes;
  append(text, in, in_shapes, p.bytes);
  text += " -> ";
  append(text, out, out_shapes, p.bytes);
  p.shapes = obs::intern_name(text);
  if (const ir::OpSchema* s = ir::OpSchemaRegistry::get().find(node.op_type(), node.domain()))
    if (ir::FlopsFn f = s->flops_fn()) p.flops = f(node, in_shapes, out_shapes);
  return p;
}

StepProfile profile_step(const ir::Node& node, const Frame& frame) {
  auto tensor_of = [](const Datum& d) -> const Tensor* { return d.is_tensor() ? &d.as_tensor() : nullptr; };
  std::vector<const Tensor*> in, out;
  for (int i = 0; i < node.num_inputs(); ++i) in.push_back(node.input(i) ? tensor_of(frame.lookup(node.input(i))) : nullptr);
  for (int i = 0; i < node.num_outputs(); ++i) {
    const ir::Value* v = node.output(i);
    out.push_back(v ? tensor_of(frame.slots[static_cast<size_t>(v->index())]) : nullptr);
  }
  return profile_step(node, in, out);
}

void emit_kernel_event(const char* op, const char* node, const StepProfile& p, uint64_t start_ns, uint64_t ns) {
  obs::KernelEvent e;
  e.op = op;
  e.node = node;
  e.shapes = p.shapes;
  e.thread = obs::thread_ordinal();
  e.start_ns = start_ns;
  e.time_us = static_cast<double>(ns) / 1e3;
  e.flops = p.flops;
  e.bytes = p.bytes;
  if (ns > 0) {
    e.gflops = p.flops / static_cast<double>(ns);  // flop per ns = GFLOP/s
    e.gbps = static_cast<double>(p.bytes) / static_cast<double>(ns);
  }
  obs::EventBus::global().emit(e);
}

}  // namespace sdx::runtime
