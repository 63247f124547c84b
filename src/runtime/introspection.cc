#include "runtime/introspection.h"

#include <cstdio>

#include "plan/plan.h"
#include "runtime/context.h"

namespace sdx::runtime {

Result<PlanIntrospection> introspect(const Session& session, const std::vector<std::pair<std::string, Datum>>& feeds) {
  const ir::Graph& g = *session.model().graph;
  const plan::Plan& p = session.plan();
  PlanIntrospection info;
  info.num_steps = static_cast<int>(p.steps().size());
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
    if (s.producer_step >= 0) {
      const plan::Step& st = p.steps()[static_cast<size_t>(s.producer_step)];
      row.producer = st.node->op_type();
      row.gap = st.gap;
    } else if (s.value->is_initializer()) {
      row.type = s.value->initializer().type_string();
      row.bytes = static_cast<int64_t>(s.value->initializer().nbytes());
    }
  }
  for (const auto& [name, d] : feeds) {
    const ir::Value* v = g.find_value(name);
    const int s = p.slot_of(v);
    if (s >= 0 && d.is_tensor()) {
      info.slots[static_cast<size_t>(s)].type = d.as_tensor().type_string();
      info.slots[static_cast<size_t>(s)].bytes = static_cast<int64_t>(d.as_tensor().nbytes());
    }
  }
  ShapeRecorder recorder(p);
  SDX_RETURN_IF_ERROR(session.run(feeds, {}, &recorder).status(), "warmup run");
  for (size_t i = 0; i < p.slots().size(); ++i) {
    const RecordedSlot& r = recorder.slots()[i];
    SlotReport& row = info.slots[i];
    row.view = r.shared;
    if (!r.seen) continue;
    row.type = std::string(dtype_name(r.dtype)) + r.shape.to_string();
    row.bytes = static_cast<int64_t>(dtype_storage_bytes(r.dtype, r.shape.numel()));
  }
  // The same selection the executor freezes with: requested outputs, shared memory and gaps are excluded.
  std::vector<int> request_slot;
  std::vector<plan::BufferRequest> requests = planning_requests(p, recorder.slots(), &request_slot);
  SDX_ASSIGN_OR_RETURN(info.memory, plan::plan_memory(requests), "memory planning");
  for (size_t r = 0; r < requests.size(); ++r) {
    SlotReport& row = info.slots[static_cast<size_t>(request_slot[r])];
    row.color = info.memory.color[r];
    row.offset = info.memory.offset[r];
  }
  return info;
}

std::string format_introspection(const PlanIntrospection& info) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "plan: %d steps (%d gap, %d dead nodes filtered), %zu slots\n", info.num_steps,
                info.num_gap_steps, info.num_dead_nodes, info.slots.size());
  out += line;
  std::snprintf(line, sizeof line, "%5s  %-28s %-12s %-14s %-11s %-22s %10s %6s %10s  %s\n", "slot", "name", "kind",
                "producer", "liveness", "type", "bytes", "color", "offset", "notes");
  out += line;
  for (const SlotReport& r : info.slots) {
    std::string notes;
    if (r.requested_output) notes += "output ";
    if (r.view) notes += "view ";
    if (r.gap) notes += "gap ";
    std::string live = "[" + std::to_string(r.first) + ", " + std::to_string(r.last) + "]";
    std::string name = r.name.size() > 28 ? r.name.substr(0, 25) + "..." : r.name;
    std::snprintf(line, sizeof line, "%5d  %-28s %-12s %-14s %-11s %-22s %10lld %6s %10s  %s\n", r.index, name.c_str(),
                  r.kind.c_str(), r.producer.c_str(), live.c_str(), r.type.c_str(), static_cast<long long>(r.bytes),
                  r.color >= 0 ? std::to_string(r.color).c_str() : "-",
                  r.offset >= 0 ? std::to_string(r.offset).c_str() : "-", notes.c_str());
    out += line;
  }
  out += plan::describe(info.memory) + "\n";
  out += "intermediates: one buffer per slot " + plan::format_bytes(info.memory.naive_bytes) + ", coloring " +
         plan::format_bytes(info.memory.coloring_bytes) + ", arena " + plan::format_bytes(info.memory.arena_bytes) + "\n";
  return out;
}

}  // namespace sdx::runtime
