#include "runtime/introspection.h"

#include <cstdio>

#include "plan/memory_layout.h"
#include "plan/plan.h"
#include "runtime/context.h"
#include "runtime/jit_plan.h"
#include "runtime/replay.h"

namespace sdx::runtime {

namespace {

// What the plan fixes before any run: steps, waves and one row per slot.
PlanIntrospection plan_rows(const plan::Plan& p) {
  PlanIntrospection info;
  info.num_steps = static_cast<int>(p.steps().size());
  info.num_waves = p.wave_begin().empty() ? 0 : static_cast<int>(p.wave_begin().size()) - 1;
  info.num_dead_nodes = p.num_dead_nodes();
  for (const plan::Step& st : p.steps()) info.num_gap_steps += st.gap ? 1 : 0;
  info.slots.resize(p.slots().size());
  for (size_t i = 0; i < p.slots().size(); ++i) {
    const plan::Slot& s = p.slots()[i];
    SlotReport& row = info.slots[i];
    row.index = static_cast<int>(i);
    row.name = s.value->name();
    row.kind = plan::slot_kind_name(s.kind);
    row.first = s.first;
    row.last = s.last;
    row.requested_output = s.requested_output;
    row.producer_step = s.producer_step;
    if (s.producer_step >= 0) {
      const plan::Step& st = p.steps()[static_cast<size_t>(s.producer_step)];
      row.producer = st.node->op_type();
      row.gap = st.gap;
      row.wiring = st.inputs;
    } else if (s.value->is_initializer()) {
      row.type = s.value->initializer().type_string();
      row.bytes = static_cast<int64_t>(s.value->initializer().nbytes());
    }
  }
  return info;
}

// Warmup runs, the capture run and one replay on a fresh context; reads the entry's phase, replay
// handle, JIT segments and slot states into info. Returns the warmup record.
Result<std::vector<RecordedSlot>> run_captured(const Session& session, const std::vector<TensorArg>& args,
                                               PlanIntrospection& info) {
  std::unique_ptr<Context> ctx = session.create_context();
  ExecutionReport rep;
  for (int i = 0; i < session.options().warmup_runs + 2; ++i)
    SDX_RETURN_IF_ERROR(session.run(*ctx, args.data(), args.size(), {}, &rep), "introspection run " + std::to_string(i + 1));
  // Compiles in flight finish, then one more replay swaps their kernels in.
  if (ctx->current()->jit() && (ctx->current()->jit()->count(jit::SegmentState::kCompiling) > 0 ||
                              ctx->current()->jit()->count(jit::SegmentState::kReady) > 0)) {
    session.wait_for_jit(120.0);
    SDX_RETURN_IF_ERROR(session.run(*ctx, args.data(), args.size(), {}, &rep), "introspection run after the JIT compiled");
  }
  const PlanEntry& e = *ctx->current();
  if (e.jit()) {
    info.jit_threshold = e.jit()->threshold;
    for (const PlannedSegment& s : e.jit()->segments)
      info.jit_segments.push_back({s.segment.first_step, s.segment.last_step, s.segment.ir.describe(), s.score.score,
                                   jit::segment_state_name(s.state()), s.status(), s.fused_us, s.unfused_us});
  }
  info.phase = plan_phase_name(e.phase());
  info.fallback = rep.fallback_reason ? rep.fallback_reason : "";
  info.frozen_bytes = e.bytes();
  if (e.replay()) {
    info.captured_steps = e.replay()->count(NodePhase::kCaptured);
    info.slot_by_slot_steps = e.replay()->count(NodePhase::kSlotBySlot);
    info.bound_steps = e.replay()->num_bound();
    info.elided_steps = e.replay()->num_elided();
    info.placed_inputs = e.replay()->num_placed_inputs();
    info.concurrent_groups = e.replay()->num_concurrent_groups();
    info.concurrent_steps = e.replay()->num_concurrent_steps();
  }
  for (size_t i = 0; i < info.slots.size(); ++i) {
    SlotReport& row = info.slots[i];
    row.state = slot_state_name(e.slot_state(i));
    if (e.replay() && row.producer_step >= 0)
      row.node_phase = node_phase_name(e.replay()->node_phases()[static_cast<size_t>(row.producer_step)]);
  }
  return e.shapes();
}

// Types, bytes and memory colors from the warmup record: the same selection the executor freezes with.
Status add_memory(const plan::Plan& p, const std::vector<RecordedSlot>& shapes, PlanIntrospection& info) {
  for (size_t i = 0; i < p.slots().size(); ++i) {
    const RecordedSlot& r = shapes[i];
    SlotReport& row = info.slots[i];
    row.view = r.shared || r.view_of >= 0;
    if (!r.seen) continue;
    row.type = std::string(dtype_name(r.dtype)) + r.shape.to_string();
    row.bytes = static_cast<int64_t>(dtype_storage_bytes(r.dtype, r.shape.numel()));
    if (p.slots()[i].kind == plan::SlotKind::kIntermediate && r.view_of < 0) info.intermediate_bytes += row.bytes;
  }
  std::vector<int> request_slot;
  std::vector<plan::BufferRequest> requests = plan::planning_requests(p, shapes, &request_slot);
  SDX_ASSIGN_OR_RETURN(info.memory, plan::plan_memory(requests), "memory planning");
  for (size_t r = 0; r < requests.size(); ++r) {
    SlotReport& row = info.slots[static_cast<size_t>(request_slot[r])];
    row.color = info.memory.color[r];
    row.offset = info.memory.offset[r];
    row.last = requests[r].last;
  }
  return Status::ok();
}

}  // namespace

Result<PlanIntrospection> introspect(const Session& session, const std::vector<std::pair<std::string, Datum>>& feeds) {
  const ir::Graph& g = *session.model().graph;
  const plan::Plan& p = session.plan();
  PlanIntrospection info = plan_rows(p);
  for (const auto& [name, d] : feeds) {
    const int s = p.slot_of(g.find_value(name));
    if (s >= 0 && d.is_tensor()) {
      info.slots[static_cast<size_t>(s)].type = d.as_tensor().type_string();
      info.slots[static_cast<size_t>(s)].bytes = static_cast<int64_t>(d.as_tensor().nbytes());
    }
  }
  // Positional feeds in input order when every input is a plain tensor.
  std::vector<TensorArg> args;
  for (const ValueInfo& in : session.inputs()) {
    const Datum* d = nullptr;
    for (const auto& [name, datum] : feeds)
      if (name == in.name) d = &datum;
    if (!d || !d->is_tensor() || in.type.kind != ir::TypeInfo::Kind::kTensor) break;
    const Tensor& t = d->as_tensor();
    args.push_back({t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()});
  }
  const bool slot_by_slot = session.execution_mode().used == ExecutionMode::kSlotBySlot;
  info.jit = !session.options().jit.enabled ? "off (SDX_JIT_ENABLED=0)"
             : slot_by_slot                 ? "off (execution mode SLOT_BY_SLOT)"
                                            : "on";
  std::vector<RecordedSlot> shapes;
  if (args.size() == session.inputs().size() && feeds.size() == args.size() && !slot_by_slot) {
    SDX_ASSIGN_OR_RETURN(shapes, run_captured(session, args, info), "");
  } else {
    ShapeRecorder recorder(p);
    SDX_RETURN_IF_ERROR(session.run(feeds, {}, &recorder).status(), "warmup run");
    shapes = recorder.slots();
    info.phase = plan_phase_name(PlanPhase::kWarmup);
    info.fallback = "inputs other than plain tensors run slot by slot";
    for (SlotReport& row : info.slots) row.state = slot_state_name(SlotState::kWarmup);
  }
  SDX_RETURN_IF_ERROR(add_memory(p, shapes, info), "");
  return info;
}

std::string format_introspection(const PlanIntrospection& info) {
  std::string out;
  char line[640];
  std::snprintf(line, sizeof line, "plan: %d steps (%d gap, %d dead nodes filtered), %zu slots; phase %s%s%s\n",
                info.num_steps, info.num_gap_steps, info.num_dead_nodes, info.slots.size(), info.phase.c_str(),
                info.fallback.empty() ? "" : " (", info.fallback.empty() ? "" : (info.fallback + ")").c_str());
  out += line;
  if (info.phase == "REPLAYING" || info.phase == "CAPTURED") {
    std::snprintf(line, sizeof line, "replay: %d captured steps (%d bound calls, %d through run(), %d views skipped), %d gap, %d slot by slot\n",
                  info.captured_steps, info.bound_steps, info.captured_steps - info.bound_steps - info.elided_steps,
                  info.elided_steps, info.num_steps - info.captured_steps - info.slot_by_slot_steps, info.slot_by_slot_steps);
    out += line;
    if (info.placed_inputs > 0) {
      std::snprintf(line, sizeof line, "replay: %d inputs copied straight into the output of the call that reads them\n",
                    info.placed_inputs);
      out += line;
    }
  }
  if (info.num_waves > 0) {
    std::snprintf(line, sizeof line, "inter-op: %d waves; %d groups of bound calls run concurrently (%d steps)\n",
                  info.num_waves, info.concurrent_groups, info.concurrent_steps);
    out += line;
  }
  std::snprintf(line, sizeof line, "%5s  %-24s %-12s %-14s %-12s %-11s %-10s %-12s %-20s %10s %5s %9s  %s\n", "slot", "name",
                "kind", "producer", "wiring", "liveness", "state", "node", "type", "bytes", "color", "offset", "notes");
  out += line;
  for (const SlotReport& r : info.slots) {
    std::string notes;
    if (r.requested_output) notes += "output ";
    if (r.view) notes += "view ";
    if (r.gap) notes += "gap ";
    std::string live = "[" + std::to_string(r.first) + ", " + std::to_string(r.last) + "]";
    std::string wiring;
    for (int w : r.wiring) wiring += (wiring.empty() ? "" : ",") + (w >= 0 ? std::to_string(w) : std::string("-"));
    if (wiring.size() > 12) wiring = wiring.substr(0, 9) + "...";
    std::string name = r.name.size() > 24 ? r.name.substr(0, 21) + "..." : r.name;
    std::snprintf(line, sizeof line, "%5d  %-24s %-12s %-14s %-12s %-11s %-10s %-12s %-20s %10lld %5s %9s  %s\n", r.index,
                  name.c_str(), r.kind.c_str(), r.producer.c_str(), wiring.c_str(), live.c_str(), r.state.c_str(),
                  r.node_phase.c_str(), r.type.c_str(), static_cast<long long>(r.bytes),
                  r.color >= 0 ? std::to_string(r.color).c_str() : "-",
                  r.offset >= 0 ? std::to_string(r.offset).c_str() : "-", notes.c_str());
    out += line;
  }
  out += plan::describe(info.memory) + "\n";
  out += "intermediates: one buffer per slot " + plan::format_bytes(info.memory.naive_bytes) + ", coloring " +
         plan::format_bytes(info.memory.coloring_bytes) + ", arena " + plan::format_bytes(info.memory.arena_bytes) + "\n";
  char ratio[192] = "";
  if (info.intermediate_bytes > 0)
    std::snprintf(ratio, sizeof ratio, " (%.1f%% of %s, every intermediate with its own memory, outputs included)",
                  100.0 * static_cast<double>(info.memory.planned_bytes()) / static_cast<double>(info.intermediate_bytes),
                  plan::format_bytes(info.intermediate_bytes).c_str());
  out += "planned " + plan::format_bytes(info.memory.planned_bytes()) + ratio + "\n";
  if (info.frozen_bytes > 0)
    out += "frozen memory held by the plan (intermediates + static inputs and outputs): " + plan::format_bytes(info.frozen_bytes) + "\n";
  out += format_jit(info);
  return out;
}

std::string format_jit(const PlanIntrospection& info) {
  if (info.jit.empty()) return "";
  if (info.jit != "on") return "jit: " + info.jit + "\n";
  int fused = 0, steps = 0;
  for (const JitSegmentReport& s : info.jit_segments)
    if (s.state == jit::segment_state_name(jit::SegmentState::kFused)) {
      ++fused;
      steps += s.last_step - s.first_step + 1;
    }
  char line[256];
  std::snprintf(line, sizeof line, "jit: %zu segment%s (fusion score threshold %.2f), %d fused replacing %d steps\n",
                info.jit_segments.size(), info.jit_segments.size() == 1 ? "" : "s", info.jit_threshold, fused, steps);
  std::string out = line;
  for (size_t i = 0; i < info.jit_segments.size(); ++i) {
    const JitSegmentReport& s = info.jit_segments[i];
    std::snprintf(line, sizeof line, "  segment %zu: steps %d-%d, score %.2f, ", i, s.first_step, s.last_step, s.score);
    out += line + s.description + "\n    " + s.status + "\n";
  }
  return out;
}

}  // namespace sdx::runtime
