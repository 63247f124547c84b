#include "backend/cpu/jit/segment_finder.h"

#include <cmath>
#include <unordered_map>

#include "ir/activation.h"
#include "ir/op_schema.h"

namespace sdx::jit {
namespace {

constexpr size_t kMaxInstrs = 4096;  // longer runs split: compile time grows with the function

const ValueType* type_of(const plan::Plan& plan, const ir::Value* v, const std::vector<ValueType>& types) {
  const int s = plan.slot_of(v);
  if (s < 0 || !types[static_cast<size_t>(s)].known) return nullptr;
  return &types[static_cast<size_t>(s)];
}

// LeakyRelu's slope: its attribute and default are the activation table's (ir/activation_defs.inc).
const ir::ActivationParam& leaky_relu_alpha() {
  return ir::activation_info(ir::ActivationKind::kLeakyRelu).params[0];
}

float leaky_relu_alpha(const ir::Node& node) {
  return node.attr_float(std::string(leaky_relu_alpha().attribute), leaky_relu_alpha().default_value);
}

// Attributes an op may carry and still fuse (anything else, e.g. legacy broadcast/axis, refuses).
bool attributes_allowed(const ir::Node& node) {
  for (const ir::Attribute& a : node.attributes()) {
    if (node.op_type() == "LeakyRelu" && a.name == leaky_relu_alpha().attribute) continue;
    return false;
  }
  return true;
}

}  // namespace

bool step_is_fusible(const plan::Plan& plan, int step, const std::vector<ValueType>& types, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  const plan::Step& st = plan.steps()[static_cast<size_t>(step)];
  const ir::Node& node = *st.node;
  if (st.gap) return no("data-dependent step");
  if (!node.domain().empty() && node.domain() != "ai.onnx") return no("not an ONNX default-domain op");
  const ir::OpSchema* schema = ir::OpSchemaRegistry::get().find(node.op_type(), node.domain());
  if (!schema || schema->op_category() != ir::OpCategory::kElementwise)
    return no(std::string("category ") + (schema ? ir::op_category_name(schema->op_category()) : "unknown"));
  const JitOpInfo* info = find_jit_op(node.op_type());
  if (!info) return no("op not in the JIT op table");
  if (node.num_inputs() != info->arity || node.num_outputs() != 1 || !node.output(0)) return no("arity");
  if (!attributes_allowed(node)) return no("attributes");
  if (node.op_type() == "LeakyRelu" && !std::isfinite(leaky_relu_alpha(node))) return no("non-finite alpha");
  const ValueType* out = type_of(plan, node.output(0), types);
  if (!out || out->dtype != DType::kFloat32) return no("output is not a float32 tensor of known shape");
  for (int i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    if (!v || v->owner() != &plan.graph()) return no("input from an enclosing graph");
    const ValueType* t = type_of(plan, v, types);
    if (!t || t->dtype != DType::kFloat32) return no("input is not a float32 tensor of known shape");
  }
  return true;
}

std::vector<Segment> find_segments(const plan::Plan& plan, const std::vector<ValueType>& types) {
  std::vector<Segment> out;
  Segment cur;
  bool open = false;
  std::unordered_map<int, int> ir_value;  // ir::Value::index() -> IR value number (inputs, then results)
  std::vector<int> results;                // ir::Value::index() of each instruction's result
  auto close = [&] {
    if (!open) return;
    open = false;
    if (cur.ir.instrs.size() < 2) return;
    // IR value numbers of results shift by the final input count.
    const int ni = static_cast<int>(cur.ir.inputs.size());
    for (SegmentInstr& s : cur.ir.instrs)
      for (int& a : s.args)
        if (a >= 0 && a >= 1'000'000) a = a - 1'000'000 + ni;
    // Outputs: results read after the segment (or requested, or read by a subgraph).
    for (size_t j = 0; j < results.size(); ++j) {
      const plan::Slot& slot = plan.slots()[static_cast<size_t>(plan.slot_of(plan.graph().values()[static_cast<size_t>(results[j])].get()))];
      if (slot.requested_output || slot.last > cur.last_step) {
        cur.ir.outputs.push_back(ni + static_cast<int>(j));
        cur.output_values.push_back(results[j]);
      }
    }
    if (cur.ir.outputs.empty() || !cur.ir.validate().is_ok()) return;
    out.push_back(std::move(cur));
  };
  for (size_t s = 0; s < plan.steps().size(); ++s) {
    const int step = static_cast<int>(s);
    if (!step_is_fusible(plan, step, types, nullptr)) {
      close();
      continue;
    }
    const ir::Node& node = *plan.steps()[s].node;
    const Shape& shape = type_of(plan, node.output(0), types)->shape;
    if (open && (shape != cur.ir.domain || cur.ir.instrs.size() >= kMaxInstrs)) close();
    // Inputs from outside the segment must broadcast to the domain as one block.
    auto fits = [&](const Shape& domain, std::vector<SegmentInput>* ext) {
      for (int i = 0; i < node.num_inputs(); ++i) {
        const ir::Value* v = node.input(i);
        if (open && ir_value.count(v->index())) continue;
        auto in = SegmentInput::broadcast(type_of(plan, v, types)->shape, domain);
        if (!in.is_ok()) return false;
        ext->push_back(std::move(in).value());
      }
      return true;
    };
    std::vector<SegmentInput> ext;
    if (open && !fits(cur.ir.domain, &ext)) close();
    if (!open) {
      ext.clear();
      if (!fits(shape, &ext)) continue;  // cannot even start a segment here (e.g. a strided broadcast)
      cur = Segment();
      cur.first_step = step;
      cur.ir.domain = shape;
      ir_value.clear();
      results.clear();
      open = true;
    }
    SegmentInstr instr;
    instr.op = find_jit_op(node.op_type())->op;
    if (instr.op == JitOp::kLeakyRelu) instr.param = leaky_relu_alpha(node);
    for (int i = 0; i < node.num_inputs(); ++i) {
      const ir::Value* v = node.input(i);
      auto it = ir_value.find(v->index());
      if (it == ir_value.end()) {
        // Input numbers are final; results are numbered from 1'000'000 until the segment closes.
        const int k = static_cast<int>(cur.ir.inputs.size());
        cur.ir.inputs.push_back(SegmentInput::broadcast(type_of(plan, v, types)->shape, cur.ir.domain).value());
        cur.input_values.push_back(v->index());
        it = ir_value.emplace(v->index(), k).first;
      }
      instr.args[i] = it->second;
    }
    ir_value[node.output(0)->index()] = 1'000'000 + static_cast<int>(cur.ir.instrs.size());
    results.push_back(node.output(0)->index());
    cur.ir.instrs.push_back(instr);
    cur.last_step = step;
  }
  close();
  return out;
}

}  // namespace sdx::jit
