#include "runtime/replay.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "backend/cpu/threading/parallel_copy.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/cpu/jit/fused_kernel.h"
#include "obs/events.h"
#include "obs/observers.h"
#include "obs/op_timing_tracker.h"
#include "obs/test_slowdown.h"
#include "runtime/jit_plan.h"
#include "runtime/run_control.h"

namespace sdx::runtime {

// The op timing tracker's name for a fused JIT segment (interned on first use).
static const char* jit_segment_op_name() {
  static const char* const name = obs::intern_name("sdx.JitSegment");
  return name;
}

namespace {

// prepare()'s view of one step: frame tensors for inputs, frozen buffers for outputs.
class CapturePrepareContext final : public backend::PrepareContext {
 public:
  CapturePrepareContext(const ir::Node& node, const Frame& frame, const std::vector<Tensor>& planned,
                        const std::vector<bool>& constant, backend::PackedWeights* packed)
      : node_(node), frame_(frame), planned_(planned), constant_(constant), packed_(packed) {}

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
  backend::PackedWeights* packed_weights() const override { return packed_; }

 private:
  const ir::Node& node_;
  const Frame& frame_;
  const std::vector<Tensor>& planned_;
  const std::vector<bool>& constant_;
  backend::PackedWeights* packed_;
};

}  // namespace

// Capture's working state: what is pinned (at a fixed address for every replay), what is constant, and
// the handle being built. One step at a time: bound (CAPTURED with a BoundKernel) or run eagerly and,
// where its outputs stay put, checked after each replay.
struct ReplayCapturer {
  const GraphExecutor& exec;
  PlanEntry& entry;
  const plan::Plan& plan;
  const ir::Graph& g;
  std::unique_ptr<ReplayHandle> h;
  Frame& f;
  std::vector<bool> pinned, constant;
  std::unordered_set<const Buffer*> pinned_buffers;
  const bool bind_only;       // execute nothing (see ReplayHandle::capture)
  const ir::Node* needs_run = nullptr;  // bind_only met this step, which must execute to be captured

  ReplayCapturer(const GraphExecutor& x, PlanEntry& e, bool bind_only_)
      : exec(x), entry(e), plan(*e.plan), g(plan.graph()), h(new ReplayHandle(x, plan)), f(h->frame_),
        pinned(g.values().size(), false), constant(g.values().size(), false), bind_only(bind_only_) {
    f.planned = &entry.planned_;
  }

  void pin(int v, const Tensor& t) {
    pinned[static_cast<size_t>(v)] = true;
    if (t.buffer()) pinned_buffers.insert(t.buffer().get());
  }

  // Initializers (constant) and the caller's variables (pinned, not constant).
  void seed(const std::vector<std::pair<int, Tensor>>& variables) {
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
  }

  // Inputs: copied into static buffers on every call. False (with the entry's reason) when one has none.
  bool bind_inputs(const std::vector<const ir::Value*>& input_values, const TensorArg* args) {
    for (size_t i = 0; i < input_values.size(); ++i) {
      const int v = input_values[i]->index();
      if (i < entry.borrowed_.size() && entry.borrowed_[i]) {  // read where the caller keeps it
        const auto& [dtype, shape] = entry.signature[i];
        Tensor t = Tensor::borrow(dtype, shape, const_cast<void*>(args[i].data));
        ReplayHandle::InputCopy copy{nullptr, 0, 0};
        copy.borrowed = args[i].data;
        h->inputs_.push_back(copy);
        h->borrowed_buffers_.push_back(t.buffer().get());
        f.slots[static_cast<size_t>(v)] = Datum::tensor(t);
        pin(v, t);
        continue;
      }
      const Tensor& st = entry.planned_[static_cast<size_t>(v)];
      if (!st.defined()) {
        entry.no_replay_reason_ = "an input has no static buffer (its element type is not byte-addressable)";
        return false;
      }
      ReplayHandle::InputCopy copy{st.raw_data(), st.dtype() == DType::kString ? 0 : st.nbytes(),
                                   st.dtype() == DType::kString ? st.numel() : 0};
      h->inputs_.push_back(copy);
      h->input_bytes_ += copy.bytes;
      if (args) ReplayHandle::copy_input(copy, args[i].data);  // null: bound at load, replay copies them
      f.slots[static_cast<size_t>(v)] = Datum::tensor(st);
      pin(v, st);
    }
    return true;
  }

  // The phase a step starts in: GAP, CAPTURED when every input is pinned, else SLOT_BY_SLOT.
  NodePhase initial_phase(const plan::Step& st) const {
    if (st.gap) return NodePhase::kGap;
    for (int i = 0; i < st.node->num_inputs(); ++i) {
      const ir::Value* v = st.node->input(i);
      if (v && (v->owner() != &g || !pinned[static_cast<size_t>(v->index())])) return NodePhase::kSlotBySlot;
    }
    return NodePhase::kCaptured;
  }

  bool outputs_frozen(const ir::Node& node) const {
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::Value* v = node.output(o);
      if (v && !entry.planned_[static_cast<size_t>(v->index())].defined()) return false;
    }
    return true;
  }

  // Runs the bound call now (this call's results) and pins its frozen outputs.
  Status run_bound(const plan::Step& st, std::unique_ptr<backend::BoundKernel> bound, ReplayHandle::Op& op,
                   const std::vector<const ir::Value*>& input_values, const std::vector<const ir::Value*>& output_values) {
    const ir::Node& node = *st.node;
    if (!bind_only) SDX_RETURN_IF_ERROR(bound->run(), node.describe());
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::Value* v = node.output(o);
      if (!v) continue;
      const Tensor& t = entry.planned_[static_cast<size_t>(v->index())];
      f.slots[static_cast<size_t>(v->index())] = Datum::tensor(t);
      pin(v->index(), t);
    }
    // Only into outputs with memory of their own: an arena buffer may hold other values before this step.
    bool own_memory = true;
    for (int slot : st.outputs)
      if (slot >= 0 && !plan.slots()[static_cast<size_t>(slot)].requested_output) own_memory = false;
    if (own_memory) h->place_inputs(node, bound.get(), input_values, output_values);
    op.bound = bound.get();
    h->owned_.push_back(std::move(bound));
    ++h->num_bound_;
    return Status::ok();
  }

  // Runs the step through Kernel::run(); outputs that keep their address are checked after each replay.
  Status run_eager(int s, const backend::Kernel& k, ReplayHandle::Op& op, NodePhase* phase) {
    const ir::Node& node = *plan.steps()[static_cast<size_t>(s)].node;
    SDX_RETURN_IF_ERROR(exec.run_step(plan, s, f), "");
    op.verify_begin = static_cast<uint32_t>(h->verify_.size());
    bool all_pinned = true;
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::Value* v = node.output(o);
      if (!v) continue;
      const Datum& d = f.slots[static_cast<size_t>(v->index())];
      // A frozen buffer or a view into pinned memory keeps its address from call to call
      // (checked after every replayed call); anything else is rebuilt each call.
      const bool stays = *phase != NodePhase::kGap && d.is_tensor() && d.as_tensor().buffer() &&
                         pinned_buffers.count(d.as_tensor().buffer().get()) != 0;
      const Tensor& frozen = entry.planned_[static_cast<size_t>(v->index())];
      const bool is_frozen = *phase != NodePhase::kGap && d.is_tensor() && frozen.defined() &&
                             d.as_tensor().raw_data() == frozen.raw_data() && d.as_tensor().shape() == frozen.shape();
      if (stays || is_frozen) {
        pin(v->index(), d.as_tensor());
        h->verify_.push_back({v->index(), d.as_tensor().raw_data(), d.as_tensor().dtype(), d.as_tensor().shape()});
      } else {
        all_pinned = false;
      }
    }
    op.verify_end = static_cast<uint32_t>(h->verify_.size());
    if (*phase == NodePhase::kCaptured && !all_pinned) *phase = NodePhase::kSlotBySlot;
    // A view of pinned memory shaped by constants only: the value it left in the frame stays right.
    op.elided = *phase == NodePhase::kCaptured && k.is_view() && node.num_inputs() >= 1 && node.input(0);
    for (int i = 1; i < node.num_inputs() && op.elided; ++i)
      if (node.input(i) && !constant[static_cast<size_t>(node.input(i)->index())]) op.elided = false;
    return Status::ok();
  }

  // Eager slots are freed after their last reader; pinned ones stay in the frame for good.
  void release_after(int s, ReplayHandle::Op& op) {
    op.release_begin = static_cast<uint32_t>(h->release_.size());
    for (int slot : plan.release_at_step()[static_cast<size_t>(s)]) {
      const int v = plan.slots()[static_cast<size_t>(slot)].value->index();
      if (pinned[static_cast<size_t>(v)]) continue;
      h->release_.push_back(v);
      f.slots[static_cast<size_t>(v)] = Datum();
    }
    op.release_end = static_cast<uint32_t>(h->release_.size());
    if (op.release_begin != op.release_end) op.elided = false;
  }

  // A view of pinned memory whose other inputs are constants: running it reads no element data, so
  // bind_only may run it (it becomes an elided step).
  bool constant_view(const plan::Step& st, const backend::Kernel& k, NodePhase phase) const {
    if (phase != NodePhase::kCaptured || !k.is_view() || st.node->num_inputs() < 1 || !st.node->input(0)) return false;
    for (int i = 1; i < st.node->num_inputs(); ++i) {
      const ir::Value* v = st.node->input(i);
      if (v && (v->owner() != &g || !constant[static_cast<size_t>(v->index())])) return false;
    }
    return true;
  }

  // One step, executing this call while binding it.
  Status step(int s, const std::vector<const ir::Value*>& input_values, const std::vector<const ir::Value*>& output_values) {
    const plan::Step& st = plan.steps()[static_cast<size_t>(s)];
    const ir::Node& node = *st.node;
    ReplayHandle::Op op;
    op.step = op.last_step = s;
    op.op_name = exec.names(&node).op;
    op.node_name = exec.names(&node).node;
    NodePhase phase = initial_phase(st);
    const backend::Kernel* k = exec.kernel(&node);
    if (!k) return unimplemented(node.describe() + " has no kernel");
    std::unique_ptr<backend::BoundKernel> bound;
    if (phase == NodePhase::kCaptured && outputs_frozen(node)) {
      CapturePrepareContext pctx(node, f, entry.planned_, constant, exec.packed_weights());
      auto r = k->prepare(pctx);
      if (!r.is_ok()) return r.status().with_context("capturing " + node.describe());
      bound = std::move(r).value();
    }
    if (bound) {
      SDX_RETURN_IF_ERROR(run_bound(st, std::move(bound), op, input_values, output_values), "");
    } else {
      if (bind_only && !constant_view(st, *k, phase)) {
        needs_run = &node;
        return Status::ok();
      }
      SDX_RETURN_IF_ERROR(run_eager(s, *k, op, &phase), "");
    }
    op.profile = profile_step(node, f);
    release_after(s, op);
    h->ops_.push_back(op);
    h->node_phases_.push_back(phase);
    return Status::ok();
  }
};

Result<std::unique_ptr<ReplayHandle>> ReplayHandle::capture(const GraphExecutor& exec, PlanEntry& entry,
                                                            const std::vector<const ir::Value*>& input_values,
                                                            const TensorArg* args,
                                                            const std::vector<const ir::Value*>& output_values,
                                                            const std::vector<std::pair<int, Tensor>>& variables,
                                                            bool bind_only, const ir::Node** must_run) {
  ReplayCapturer c(exec, entry, bind_only);
  c.seed(variables);
  if (!c.bind_inputs(input_values, args)) return std::unique_ptr<ReplayHandle>();
  for (size_t s = 0; s < c.plan.steps().size() && !c.needs_run; ++s)
    SDX_RETURN_IF_ERROR(c.step(static_cast<int>(s), input_values, output_values), "");
  if (c.needs_run) {
    if (must_run) *must_run = c.needs_run;
    return std::unique_ptr<ReplayHandle>();
  }
  std::unique_ptr<ReplayHandle> h = std::move(c.h);
  for (const ir::Value* v : output_values) {
    h->output_values_.push_back(v->index());
    h->output_static_.push_back(v->owner() == &c.g && c.pinned[static_cast<size_t>(v->index())]);
  }
  h->arm_segments(entry);
  h->drop_elided();
  h->build_groups();
  return h;
}

void ReplayHandle::place_inputs(const ir::Node& node, backend::BoundKernel* bound,
                                const std::vector<const ir::Value*>& input_values,
                                const std::vector<const ir::Value*>& output_values) {
  for (int i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    if (!v || v->users().size() != 1 || v->users()[0] != &node) continue;
    bool once = true, is_output = false;
    for (int j = 0; j < node.num_inputs(); ++j) once = once && (j == i || node.input(j) != v);
    for (const ir::Value* o : output_values) is_output = is_output || o == v;
    const auto in = std::find(input_values.begin(), input_values.end(), v);
    if (!once || is_output || in == input_values.end()) continue;
    InputCopy& c = inputs_[static_cast<size_t>(in - input_values.begin())];
    backend::BoundKernel::InputPlacement where;
    if (c.strings != 0 || c.rows != 0 || c.bytes == 0 || !bound->input_placement(i, &where)) continue;
    if (where.rows == 0 || where.row_bytes * where.rows != c.bytes) continue;
    // From now on the caller's array goes straight into the output; the input's own buffer (still in
    // the frame, read by nothing else) goes stale.
    c.dst = where.dst;
    c.rows = where.rows;
    c.stride = where.stride;
    bound->adopt_placed_input(i);
    ++num_placed_inputs_;
  }
}

void ReplayHandle::drop_elided() {
  // After arm_segments (which indexes ops_ by step): a JIT segment is made of bound calls only, so
  // no elided step lies inside one.
  size_t kept = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].elided) {
      ++num_elided_;
      continue;
    }
    ops_[kept++] = ops_[i];
  }
  ops_.resize(kept);
}

void ReplayHandle::build_groups() {
  groups_.clear();
  const std::vector<int>& wb = plan_.wave_begin();
  if (wb.size() < 2) return;
  if (wave_of_step_.empty()) {
    wave_of_step_.resize(plan_.steps().size());
    for (size_t w = 0; w + 1 < wb.size(); ++w)
      for (int s = wb[w]; s < wb[w + 1]; ++s) wave_of_step_[static_cast<size_t>(s)] = static_cast<int>(w);
  }
  auto wave = [&](int step) { return wave_of_step_[static_cast<size_t>(step)]; };
  // A call may join a concurrent group when it is bound, lies in one wave and frees no eager slot.
  auto joinable = [&](const Op& op) {
    return op.bound && wave(op.step) == wave(op.last_step) && op.release_begin == op.release_end;
  };
  size_t largest = 0;
  for (size_t i = 0; i < ops_.size();) {
    size_t j = i + 1;
    if (joinable(ops_[i]))
      while (j < ops_.size() && joinable(ops_[j]) && wave(ops_[j].step) == wave(ops_[i].step)) ++j;
    const bool concurrent = j - i > 1;
    if (concurrent) largest = std::max(largest, j - i);
    // Merge runs of one-at-a-time ops into one group.
    if (!concurrent && !groups_.empty() && !groups_.back().concurrent)
      groups_.back().end = static_cast<uint32_t>(j);
    else
      groups_.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j), concurrent});
    i = j;
  }
  if (num_concurrent_groups() == 0) groups_.clear();
  group_status_.assign(largest, Status::ok());
}

int ReplayHandle::num_concurrent_groups() const {
  int n = 0;
  for (const Group& g : groups_) n += g.concurrent ? 1 : 0;
  return n;
}

int ReplayHandle::num_concurrent_steps() const {
  int n = 0;
  for (const Group& g : groups_)
    if (g.concurrent)
      for (uint32_t i = g.begin; i < g.end; ++i) n += ops_[i].last_step - ops_[i].step + 1;
  return n;
}

Status ReplayHandle::run_concurrent(uint32_t begin, uint32_t end) {
  // Each chunk runs whole calls; the statuses are written by distinct chunks and read after
  // parallel_for returns (its completion count is released by each chunk, acquired by the caller).
  cpu::parallel_for(static_cast<int64_t>(end - begin), 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) group_status_[static_cast<size_t>(k)] = run_bound(ops_[begin + k]);
  });
  for (uint32_t k = 0; k < end - begin; ++k) {
    Status& s = group_status_[k];
    if (s.is_ok()) continue;
    Status failed = std::move(s);
    s = Status::ok();
    return failed.with_context(plan_.steps()[static_cast<size_t>(ops_[begin + k].step)].node->describe());
  }
  return Status::ok();
}

void ReplayHandle::arm_segments(PlanEntry& entry) {
  jit_ = entry.jit_.get();
  if (!jit_) return;
  (void)jit_segment_op_name();  // interned now (it allocates once), so the swapping replay does not
  for (size_t i = 0; i < jit_->segments.size(); ++i) {
    PlannedSegment& ps = jit_->segments[i];
    ps.fused = false;
    ps.not_fused_why.clear();
    if (!ps.compiled || ps.compiled->state() == jit::JitState::kFailed) continue;
    const jit::Segment& seg = ps.segment;
    const jit::SegmentIR& ir = seg.ir;
    std::string why;
    for (int s = seg.first_step; s <= seg.last_step && why.empty(); ++s)
      if (!ops_[static_cast<size_t>(s)].bound)
        why = plan_.steps()[static_cast<size_t>(s)].node->describe() + " was not captured as a bound call";
    ArmedSegment a;
    a.segment = i;
    a.compiled = ps.compiled;
    // The kernel serves exactly the shapes it was generated for: check every buffer against the IR.
    for (size_t k = 0; k < seg.input_values.size() && why.empty(); ++k) {
      const Datum& d = frame_.slots[static_cast<size_t>(seg.input_values[k])];
      if (!d.is_tensor() || d.as_tensor().dtype() != DType::kFloat32 || d.as_tensor().shape() != ir.inputs[k].shape ||
          !d.as_tensor().raw_data())
        why = "an input is not the float32" + ir.inputs[k].shape.to_string() + " the kernel was generated for";
      else
        a.in.push_back(d.as_tensor().data<float>());
    }
    for (size_t k = 0; k < seg.output_values.size() && why.empty(); ++k) {
      const Tensor& t = entry.planned_[static_cast<size_t>(seg.output_values[k])];
      if (!t.defined() || t.dtype() != DType::kFloat32 || t.shape() != ir.domain || !t.raw_data())
        why = "an output has no frozen float32" + ir.domain.to_string() + " buffer";
      else
        a.out.push_back(t.data<float>());
    }
    // Frozen memory is reused across liveness ranges, so an output may share memory with an input
    // the unfused steps had finished reading. Reading element i before storing element i is safe
    // only for the very same range read at the same index; other overlapping inputs are snapshot
    // (copied aside) at the start of each fused run.
    const int64_t n = ir.domain.numel();
    std::vector<bool> snapshot(a.in.size(), false);
    for (size_t k = 0; k < a.out.size() && why.empty(); ++k) {
      const float* ob = a.out[k];
      for (size_t j = 0; j < a.in.size(); ++j) {
        const float* ib = a.in[j];
        const int64_t in_n = ir.inputs[j].count;
        const bool overlap = ib < ob + n && ob < ib + in_n;
        if (overlap && !(ib == ob && in_n == n)) snapshot[j] = true;
      }
      for (size_t j = 0; j < k; ++j)
        if (a.out[j] < ob + n && ob < a.out[j] + n) why = "two output buffers overlap";
    }
    if (!why.empty()) {
      ps.not_fused_why = why;
      continue;
    }
    a.scratch.assign(a.out.size(), std::vector<float>(static_cast<size_t>(n)));
    for (auto& v : a.scratch) a.scratch_out.push_back(v.data());
    a.kernel = jit::bind_segment(a.compiled, a.in, a.out, snapshot);
    a.probe = jit::bind_segment(a.compiled, a.in, a.scratch_out, std::vector<bool>(a.in.size(), false));
    armed_.push_back(std::move(a));
  }
  // The swapping replay then allocates nothing (zero-allocation tests may hit it at any call).
  owned_.reserve(owned_.size() + armed_.size());
  spare_ops_.reserve(ops_.size());
}

bool ReplayHandle::segment_resolved() const {
  for (const ArmedSegment& a : armed_)
    if (a.compiled->state() != jit::JitState::kPending) return true;
  return false;
}

Status ReplayHandle::probe_segment(ArmedSegment& a) {
  // Every input of the segment is final here, and no output is written yet. The best of 3 runs:
  // the first may fault in the library's pages and the scratch.
  a.fused_ns = INT64_MAX;
  for (int r = 0; r < 3; ++r) {
    const uint64_t t0 = obs::now_ns();
    SDX_RETURN_IF_ERROR(a.probe->run(), "JIT segment");
    if constexpr (obs::kTestHooks)  // the fused kernel is slowed wherever it runs
      if (obs::observers() & obs::kObserveSlowdown) obs::apply_test_slowdown(jit_segment_op_name(), obs::now_ns() - t0);
    a.fused_ns = std::min(a.fused_ns, static_cast<int64_t>(obs::now_ns() - t0));
  }
  a.unfused_from_ns = static_cast<int64_t>(obs::now_ns());
  return Status::ok();
}

Status ReplayHandle::replay_swapping(bool* diverged) {
  // The states are read once: a kernel that becomes READY during this call waits for the next.
  for (ArmedSegment& a : armed_) {
    a.probing = a.compiled->state() == jit::JitState::kReady;
    a.matched = false;
  }
  for (const Op& op : ops_) {
    for (ArmedSegment& a : armed_)
      if (a.probing && jit_->segments[a.segment].segment.first_step == op.step) SDX_RETURN_IF_ERROR(probe_segment(a), "");
    SDX_RETURN_IF_ERROR(run_op(op, diverged), "");
    if (*diverged) return Status::ok();
    for (ArmedSegment& a : armed_) {
      if (!a.probing || jit_->segments[a.segment].segment.last_step != op.last_step) continue;
      a.unfused_ns = static_cast<int64_t>(obs::now_ns()) - a.unfused_from_ns;
      a.matched = true;
      for (size_t k = 0; k < a.out.size(); ++k)
        a.matched = a.matched && std::memcmp(a.out[k], a.scratch[k].data(), a.scratch[k].size() * sizeof(float)) == 0;
    }
  }
  if (resolve_segments()) swap_in_fused();
  size_t keep = 0;
  for (size_t i = 0; i < armed_.size(); ++i) {
    ArmedSegment& a = armed_[i];
    if (a.probing || a.compiled->state() == jit::JitState::kFailed) continue;  // resolved
    if (keep != i) armed_[keep] = std::move(a);
    ++keep;
  }
  while (armed_.size() > keep) armed_.pop_back();
  return Status::ok();
}

bool ReplayHandle::resolve_segments() {
  // The probed kernels that matched bit for bit and ran no slower stay matched (swapped in next);
  // the others are dropped with their reason.
  bool any = false;
  for (ArmedSegment& a : armed_) {
    PlannedSegment& ps = jit_->segments[a.segment];
    if (!a.probing) continue;
    ps.fused_us = static_cast<double>(a.fused_ns) / 1e3;
    ps.unfused_us = static_cast<double>(a.unfused_ns) / 1e3;
    if (a.matched && jit_->keep_only_faster && a.fused_ns > a.unfused_ns) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "it ran slower fused (%.1f us, best of 3) than unfused (%.1f us)", ps.fused_us,
                    ps.unfused_us);
      ps.not_fused_why = buf;
      a.matched = false;
    } else if (!a.matched) {
      ps.not_fused_why = "its outputs differ from the unfused kernels' in a bitwise check";
    }
    if (!a.matched) {
      a.kernel.reset();
      continue;
    }
    ps.fused = true;
    any = true;
    ++num_fused_;
  }
  return any;
}

void ReplayHandle::swap_in_fused() {
  // No allocation: kernels were bound when armed and owned_/spare_ops_ have room.
  spare_ops_.clear();
  for (size_t i = 0; i < ops_.size(); ++i) {
    const ArmedSegment* sw = nullptr;
    for (const ArmedSegment& a : armed_)
      if (a.probing && a.matched && jit_->segments[a.segment].segment.first_step == ops_[i].step) sw = &a;
    if (!sw) {
      spare_ops_.push_back(ops_[i]);
      continue;
    }
    const int last = jit_->segments[sw->segment].segment.last_step;
    Op fused = ops_[i];
    fused.bound = sw->kernel.get();
    fused.last_step = last;
    fused.op_name = jit_segment_op_name();
    size_t j = i;
    while (ops_[j].last_step < last) ++j;
    fused.release_end = ops_[j].release_end;  // the segment's steps' releases are contiguous
    fused.profile = StepProfile{};
    for (size_t k = i; k <= j; ++k) fused.profile.bytes += ops_[k].profile.bytes;
    spare_ops_.push_back(fused);
    i = j;
  }
  ops_.swap(spare_ops_);
  build_groups();
  for (ArmedSegment& a : armed_)
    if (a.probing && a.matched) owned_.push_back(std::move(a.kernel));
}

Status ReplayHandle::run_bound_observed(const Op& op) {
  const uint32_t observers = obs::observers();
  const uint64_t t0 = obs::now_ns();
  Status s = op.bound->run();
  if constexpr (obs::kTestHooks)
    if (observers & obs::kObserveSlowdown) obs::apply_test_slowdown(op.op_name, obs::now_ns() - t0);
  const uint64_t ns = obs::now_ns() - t0;
  if (observers & obs::kObserveTiming) {
    obs::OpTiming rec;
    rec.op = op.op_name;
    rec.node = op.node_name;
    rec.start_ns = t0;
    // A bound call is all kernel: validation, shapes, memory and kernel choice were settled at capture.
    rec.phase_ns[static_cast<int>(obs::TimingPhase::kKernelExec)] = obs::clamp_ns(ns);
    rec.phase_ns[static_cast<int>(obs::TimingPhase::kTotal)] = obs::clamp_ns(ns);
    obs::OpTimingTracker::global().record(rec);
  }
  if (observers & obs::kObserveEvents) emit_kernel_event(op.op_name, op.node_name, op.profile, t0, ns);
  return s;
}

inline Status ReplayHandle::run_bound(const Op& op) {
  if (obs::observers()) [[unlikely]]
    return run_bound_observed(op);
  return op.bound->run();
}

inline Status ReplayHandle::run_op(const Op& op, bool* diverged) {
  if (op.bound) {
    Status s = run_bound(op);
    if (!s.is_ok()) {
      std::string where = plan_.steps()[static_cast<size_t>(op.step)].node->describe();
      if (op.last_step != op.step) where = "fused JIT segment from " + where;
      return s.with_context(where);
    }
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
  return Status::ok();
}

Status ReplayHandle::replay(const TensorArg* args, bool* diverged) {
  *diverged = false;
  copy_inputs(args);
  if (!armed_.empty() && segment_resolved()) return replay_swapping(diverged);
  const std::atomic<bool>* stop = current_terminate_flag();
  if (!groups_.empty()) {
    for (const Group& g : groups_) {
      if (terminate_requested(stop)) [[unlikely]]
        return terminated_status();
      if (g.concurrent) {
        SDX_RETURN_IF_ERROR(run_concurrent(g.begin, g.end), "");
        continue;
      }
      for (uint32_t i = g.begin; i < g.end; ++i) {
        if (i != g.begin && terminate_requested(stop)) [[unlikely]]
          return terminated_status();
        SDX_RETURN_IF_ERROR(run_op(ops_[i], diverged), "");
        if (*diverged) return Status::ok();
      }
    }
    return Status::ok();
  }
  for (const Op& op : ops_) {
    if (terminate_requested(stop)) [[unlikely]]
      return terminated_status();
    SDX_RETURN_IF_ERROR(run_op(op, diverged), "");
    if (*diverged) return Status::ok();
  }
  return Status::ok();
}

Status ReplayHandle::replay_observed(const TensorArg* args, const OpObserver& observer, bool* diverged) {
  *diverged = false;
  if (!inputs_in_place(args))
    return failed_precondition("the observed replay needs the inputs the plan reads in place at the addresses it "
                               "was captured with");
  copy_inputs(args);
  for (const Op& op : ops_) {
    SDX_RETURN_IF_ERROR(run_op(op, diverged), "");
    if (*diverged) return Status::ok();
    observer(op.step, op.last_step, frame_);
  }
  return Status::ok();
}

void ReplayHandle::copy_inputs(const TensorArg* args) const {
  const bool events = (obs::observers() & obs::kObserveEvents) != 0;
  const uint64_t t0 = events ? obs::now_ns() : 0;
  // Large inputs (a KV cache) are copied by the pool: one input split in pieces, several spread
  // over the threads whole.
  if (inputs_.size() == 1 && inputs_[0].strings == 0 && inputs_[0].rows == 0 && inputs_[0].bytes) {
    cpu::parallel_copy(inputs_[0].dst, args[0].data, inputs_[0].bytes);
  } else if (input_bytes_ >= cpu::kParallelCopyMinBytes) {
    cpu::parallel_for(static_cast<int64_t>(inputs_.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) copy_input(inputs_[static_cast<size_t>(i)], args[i].data);
    });
  } else {
    for (size_t i = 0; i < inputs_.size(); ++i) copy_input(inputs_[i], args[i].data);
  }
  if (events) [[unlikely]] {
    obs::MemoryEvent e;
    e.what = "inputs";
    e.bytes = input_bytes_;
    e.start_ns = t0;
    const uint64_t ns = obs::now_ns() - t0;
    e.time_us = static_cast<double>(ns) / 1e3;
    e.gbps = ns ? static_cast<double>(input_bytes_) / static_cast<double>(ns) : 0.0;
    obs::EventBus::global().emit(e);
  }
}

void ReplayHandle::copy_input(const InputCopy& c, const void* src) {
  if (c.strings > 0) {  // assigning strings may allocate: string inputs are outside the zero-allocation path
    auto* dst = static_cast<std::string*>(c.dst);
    const auto* in = static_cast<const std::string*>(src);
    for (int64_t k = 0; k < c.strings; ++k) dst[k] = in[k];
  } else if (c.rows) {
    cpu::copy_rows(c.dst, c.stride, src, c.bytes / c.rows, c.bytes / c.rows, c.rows);
  } else if (c.bytes) {
    std::memcpy(c.dst, src, c.bytes);
  }
}

bool ReplayHandle::inputs_in_place(const TensorArg* args) const {
  if (borrowed_buffers_.empty()) return true;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].borrowed && inputs_[i].borrowed != args[i].data) return false;
  return true;
}

bool ReplayHandle::outputs_alias_borrowed() const {
  for (size_t i = 0; i < output_values_.size() && !borrowed_buffers_.empty(); ++i) {
    const Datum& d = output(i);
    if (d.is_tensor() && d.as_tensor().buffer() &&
        std::find(borrowed_buffers_.begin(), borrowed_buffers_.end(), d.as_tensor().buffer().get()) !=
            borrowed_buffers_.end())
      return true;
  }
  return false;
}

const Datum& ReplayHandle::output(size_t i) const { return frame_.slots[static_cast<size_t>(output_values_[i])]; }

int ReplayHandle::count(NodePhase p) const {
  int n = 0;
  for (NodePhase q : node_phases_) n += q == p ? 1 : 0;
  return n;
}

}  // namespace sdx::runtime
