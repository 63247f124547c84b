#include "runtime/replay.h"

#include <cstring>
#include <unordered_set>

namespace sdx::runtime {
namespace {

// prepare()'s view of one step: frame tensors for inputs, frozen buffers for outputs.
class CapturePrepareContext final : public backend::PrepareContext {
 public:
  CapturePrepareContext(const ir::Node& node, const Frame& frame, const std::vector<Tensor>& planned,
                        const std::vector<bool>& constant)
      : node_(node), frame_(frame), planned_(planned), constant_(constant) {}

  const ir::Node& node() const override { return node_; }
  int num_inputs() const override { return node_.num_inputs(); }
  bool has_input(int i) const override {
    const ir::Value* v = node_.input(i);
    return v && frame_.lookup(v).is_tensor();
  }
  const Tensor& input(int i) const override { return frame_.lookup(node_.input(i)).as_tensor(); }
  bool input_is_constant(int i) const override {
    const ir::Value* v = node_.input(i);
    return v && v->owner() == frame_.graph && constant_[static_cast<size_t>(v->index())];
  }
  int num_outputs() const override { return node_.num_outputs(); }
  bool wants_output(int i) const override { return node_.output(i) != nullptr; }
  const Tensor& output(int i) const override { return planned_[static_cast<size_t>(node_.output(i)->index())]; }

 private:
  const ir::Node& node_;
  const Frame& frame_;
  const std::vector<Tensor>& planned_;
  const std::vector<bool>& constant_;
};

}  // namespace

Result<std::unique_ptr<ReplayHandle>> ReplayHandle::capture(const GraphExecutor& exec, PlanEntry& entry,
                                                            const std::vector<const ir::Value*>& input_values,
                                                            const TensorArg* args,
                                                            const std::vector<const ir::Value*>& output_values,
                                                            const std::vector<std::pair<int, Tensor>>& variables) {
  const plan::Plan& plan = *entry.plan;
  const ir::Graph& g = plan.graph();
  std::unique_ptr<ReplayHandle> h(new ReplayHandle(exec, plan));
  Frame& f = h->frame_;
  f.planned = &entry.planned;
  const size_t nv = g.values().size();
  std::vector<bool> pinned(nv, false), constant(nv, false);
  std::unordered_set<const Buffer*> pinned_buffers;
  auto pin = [&](int v, const Tensor& t) {
    pinned[static_cast<size_t>(v)] = true;
    if (t.buffer()) pinned_buffers.insert(t.buffer().get());
  };
  for (const auto& v : g.values()) {
    if (!v->is_initializer()) continue;
    f.slots[static_cast<size_t>(v->index())] = Datum::tensor(v->initializer());
    pin(v->index(), v->initializer());
    constant[static_cast<size_t>(v->index())] = true;
  }
  for (const auto& [idx, t] : variables) {
    f.slots[static_cast<size_t>(idx)] = Datum::tensor(t);
    pin(idx, t);
    constant[static_cast<size_t>(idx)] = false;
  }
  // Inputs: copied into static buffers on every call.
  for (size_t i = 0; i < input_values.size(); ++i) {
    const int v = input_values[i]->index();
    const Tensor& st = entry.planned[static_cast<size_t>(v)];
    if (!st.defined()) {
      entry.no_replay_reason = "an input has no static buffer (its element type is not byte-addressable)";
      return std::unique_ptr<ReplayHandle>();
    }
    InputCopy copy{st.raw_data(), st.dtype() == DType::kString ? 0 : st.nbytes(),
                   st.dtype() == DType::kString ? st.numel() : 0};
    h->inputs_.push_back(copy);
    h->copy_input(copy, args[i].data);
    f.slots[static_cast<size_t>(v)] = Datum::tensor(st);
    pin(v, st);
  }
  // Steps, executing this call while binding them.
  for (size_t s = 0; s < plan.steps().size(); ++s) {
    const plan::Step& st = plan.steps()[s];
    const ir::Node& node = *st.node;
    Op op;
    op.step = static_cast<int>(s);
    bool inputs_pinned = true;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const ir::Value* v = node.input(i);
      if (!v) continue;
      if (v->owner() != &g || !pinned[static_cast<size_t>(v->index())]) inputs_pinned = false;
    }
    bool outputs_frozen = true;
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::Value* v = node.output(o);
      if (v && !entry.planned[static_cast<size_t>(v->index())].defined()) outputs_frozen = false;
    }
    NodePhase phase = st.gap ? NodePhase::kGap : inputs_pinned ? NodePhase::kCaptured : NodePhase::kSlotBySlot;
    const backend::Kernel* k = exec.kernel(&node);
    if (!k) return unimplemented(node.describe() + " has no kernel");
    std::unique_ptr<backend::BoundKernel> bound;
    if (phase == NodePhase::kCaptured && outputs_frozen) {
      CapturePrepareContext pctx(node, f, entry.planned, constant);
      auto r = k->prepare(pctx);
      if (!r.is_ok()) return r.status().with_context("capturing " + node.describe());
      bound = std::move(r).value();
    }
    if (bound) {
      SDX_RETURN_IF_ERROR(bound->run(), node.describe());
      for (int o = 0; o < node.num_outputs(); ++o) {
        const ir::Value* v = node.output(o);
        if (!v) continue;
        const Tensor& t = entry.planned[static_cast<size_t>(v->index())];
        f.slots[static_cast<size_t>(v->index())] = Datum::tensor(t);
        pin(v->index(), t);
      }
      op.bound = bound.get();
      h->owned_.push_back(std::move(bound));
      ++h->num_bound_;
    } else {
      SDX_RETURN_IF_ERROR(exec.run_step(plan, static_cast<int>(s), f), "");
      op.verify_begin = static_cast<uint32_t>(h->verify_.size());
      bool all_pinned = true;
      for (int o = 0; o < node.num_outputs(); ++o) {
        const ir::Value* v = node.output(o);
        if (!v) continue;
        const Datum& d = f.slots[static_cast<size_t>(v->index())];
        // A frozen buffer or a view into pinned memory keeps its address from call to call
        // (checked after every replayed call); anything else is rebuilt each call.
        const bool stays = phase != NodePhase::kGap && d.is_tensor() && d.as_tensor().buffer() &&
                           pinned_buffers.count(d.as_tensor().buffer().get()) != 0;
        const Tensor& frozen = entry.planned[static_cast<size_t>(v->index())];
        const bool is_frozen = phase != NodePhase::kGap && d.is_tensor() && frozen.defined() &&
                               d.as_tensor().raw_data() == frozen.raw_data() && d.as_tensor().shape() == frozen.shape();
        if (stays || is_frozen) {
          pin(v->index(), d.as_tensor());
          h->verify_.push_back({v->index(), d.as_tensor().raw_data(), d.as_tensor().dtype(), d.as_tensor().shape()});
        } else {
          all_pinned = false;
        }
      }
      op.verify_end = static_cast<uint32_t>(h->verify_.size());
      if (phase == NodePhase::kCaptured && !all_pinned) phase = NodePhase::kSlotBySlot;
    }
    // Eager slots are freed after their last reader; pinned ones stay in the frame for good.
    op.release_begin = static_cast<uint32_t>(h->release_.size());
    for (int slot : plan.release_at_step()[s]) {
      const int v = plan.slots()[static_cast<size_t>(slot)].value->index();
      if (pinned[static_cast<size_t>(v)]) continue;
      h->release_.push_back(v);
      f.slots[static_cast<size_t>(v)] = Datum();
    }
    op.release_end = static_cast<uint32_t>(h->release_.size());
    h->ops_.push_back(op);
    h->node_phases_.push_back(phase);
  }
  for (const ir::Value* v : output_values) {
    h->output_values_.push_back(v->index());
    h->output_static_.push_back(v->owner() == &g && pinned[static_cast<size_t>(v->index())]);
  }
  return h;
}

Status ReplayHandle::replay(const TensorArg* args, bool* diverged) {
  *diverged = false;
  for (size_t i = 0; i < inputs_.size(); ++i) copy_input(inputs_[i], args[i].data);
  for (const Op& op : ops_) {
    if (op.bound) {
      Status s = op.bound->run();
      if (!s.is_ok()) return s.with_context(plan_.steps()[static_cast<size_t>(op.step)].node->describe());
    } else {
      SDX_RETURN_IF_ERROR(exec_.run_step(plan_, op.step, frame_), "");
      for (uint32_t j = op.verify_begin; j < op.verify_end; ++j) {
        const Expect& e = verify_[j];
        const Datum& d = frame_.slots[static_cast<size_t>(e.value)];
        if (!d.is_tensor() || d.as_tensor().raw_data() != e.data || d.as_tensor().dtype() != e.dtype ||
            d.as_tensor().shape() != e.shape) {
          *diverged = true;
          return Status::ok();
        }
      }
    }
    for (uint32_t j = op.release_begin; j < op.release_end; ++j) frame_.slots[static_cast<size_t>(release_[j])] = Datum();
  }
  return Status::ok();
}

void ReplayHandle::copy_input(const InputCopy& c, const void* src) {
  if (c.strings > 0) {  // assigning strings may allocate: string inputs are outside the zero-allocation path
    auto* dst = static_cast<std::string*>(c.dst);
    const auto* in = static_cast<const std::string*>(src);
    for (int64_t k = 0; k < c.strings; ++k) dst[k] = in[k];
  } else if (c.bytes) {
    std::memcpy(c.dst, src, c.bytes);
  }
}

const Datum& ReplayHandle::output(size_t i) const { return frame_.slots[static_cast<size_t>(output_values_[i])]; }

int ReplayHandle::count(NodePhase p) const {
  int n = 0;
  for (NodePhase q : node_phases_) n += q == p ? 1 : 0;
  return n;
}

}  // namespace sdx::runtime
