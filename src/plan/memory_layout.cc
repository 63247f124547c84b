#include "plan/memory_layout.h"

#include <algorithm>

namespace sdx::plan {

std::vector<bool> tainted_slots(const Plan& plan) {
  // Values computed from a data-dependent step's output have data-dependent shapes too.
  std::vector<bool> tainted(plan.slots().size(), false);
  for (const Step& st : plan.steps()) {
    bool t = st.gap;
    for (int in : st.inputs) t = t || (in >= 0 && tainted[static_cast<size_t>(in)]);
    if (t)
      for (int out : st.outputs)
        if (out >= 0) tainted[static_cast<size_t>(out)] = true;
  }
  return tainted;
}

std::vector<BufferRequest> planning_requests(const Plan& plan, const std::vector<RecordedSlot>& rec,
                                             std::vector<int>* request_slot) {
  const std::vector<bool> tainted = tainted_slots(plan);
  // A root slot lives until the last reader of any view of it (a requested output lives to the
  // end); a view that is shared with a sequence or data-dependent keeps its root out.
  std::vector<int> last(plan.slots().size());
  std::vector<bool> blocked(plan.slots().size(), false);
  for (size_t s = 0; s < plan.slots().size(); ++s) last[s] = plan.slots()[s].last;
  for (size_t s = 0; s < plan.slots().size(); ++s) {
    int r = rec[s].view_of;
    if (r < 0) continue;
    while (rec[static_cast<size_t>(r)].view_of >= 0) r = rec[static_cast<size_t>(r)].view_of;
    last[static_cast<size_t>(r)] = std::max(last[static_cast<size_t>(r)], plan.slots()[s].last);
    if (rec[s].shared || tainted[s]) blocked[static_cast<size_t>(r)] = true;
  }
  std::vector<BufferRequest> requests;
  for (size_t s = 0; s < plan.slots().size(); ++s) {
    const Slot& slot = plan.slots()[s];
    const RecordedSlot& r = rec[s];
    if (slot.kind != SlotKind::kIntermediate || !r.seen || !r.stable || r.shared || slot.requested_output) continue;
    if (r.view_of >= 0 || blocked[s]) continue;        // views live in their root's memory
    if (tainted[s]) continue;                          // data-dependent shape
    if (!dtype_is_byte_addressable(r.dtype)) continue;  // strings, packed types
    requests.push_back({static_cast<int64_t>(dtype_storage_bytes(r.dtype, r.shape.numel())), slot.first, last[s], false});
    request_slot->push_back(static_cast<int>(s));
  }
  return requests;
}

int64_t MemoryLayout::total_bytes() const {
  int64_t n = 0;
  for (int64_t b : block_bytes) n += b;
  return n;
}

namespace {

int add_block(MemoryLayout& l, int64_t bytes, DType dt) {
  l.block_bytes.push_back(bytes);
  l.block_dtype.push_back(dt);
  return static_cast<int>(l.block_bytes.size()) - 1;
}

// A requested output gets a block of its own when its shape is known before the run and no other
// memory holds it.
bool static_output(const Slot& slot, const RecordedSlot& rs, bool tainted) {
  return slot.kind == SlotKind::kIntermediate && rs.seen && rs.stable && !rs.shared && rs.view_of < 0 && !tainted &&
         dtype_is_byte_addressable(rs.dtype);
}

}  // namespace

Result<MemoryLayout> layout_memory(const Plan& plan, const std::vector<RecordedSlot>& rec,
                                   const std::vector<const ir::Value*>& requested_outputs,
                                   const std::vector<StaticInput>& inputs) {
  if (rec.size() != plan.slots().size())
    return invalid_argument("layout_memory: the warmup record has " + std::to_string(rec.size()) +
                            " slots, the plan " + std::to_string(plan.slots().size()));
  MemoryLayout l;
  std::vector<int> request_slot;
  const std::vector<BufferRequest> requests = planning_requests(plan, rec, &request_slot);
  SDX_ASSIGN_OR_RETURN(l.memory, plan_memory(requests), "memory planning");
  auto place = [&](int slot, int block, int64_t offset) {
    const RecordedSlot& rs = rec[static_cast<size_t>(slot)];
    l.placements.push_back({plan.slots()[static_cast<size_t>(slot)].value->index(), rs.dtype, rs.shape, block, offset});
  };
  if (l.memory.chosen == MemoryPlan::Strategy::kArena) {
    const int arena = add_block(l, l.memory.arena_bytes, DType::kUint8);
    for (size_t r = 0; r < requests.size(); ++r) place(request_slot[r], arena, l.memory.offset[r]);
  } else {
    const int first = static_cast<int>(l.block_bytes.size());
    for (int64_t bytes : l.memory.color_bytes) add_block(l, bytes, DType::kUint8);
    for (size_t r = 0; r < requests.size(); ++r) place(request_slot[r], first + l.memory.color[r], 0);
  }
  std::vector<bool> placed(plan.slots().size(), false);
  for (int s : request_slot) placed[static_cast<size_t>(s)] = true;
  const std::vector<bool> tainted = tainted_slots(plan);
  for (const ir::Value* v : requested_outputs) {
    const int s = plan.slot_of(v);
    if (s < 0 || placed[static_cast<size_t>(s)]) continue;
    const RecordedSlot& rs = rec[static_cast<size_t>(s)];
    if (!static_output(plan.slots()[static_cast<size_t>(s)], rs, tainted[static_cast<size_t>(s)])) continue;
    placed[static_cast<size_t>(s)] = true;
    place(s, add_block(l, static_cast<int64_t>(dtype_storage_bytes(rs.dtype, rs.shape.numel())), rs.dtype), 0);
  }
  for (const StaticInput& in : inputs) {
    if (in.dtype == DType::kString) {  // string objects: a tensor of its own, assigned element-wise on each call
      l.placements.push_back({in.value->index(), in.dtype, in.shape, -1, 0});
      continue;
    }
    const int b = add_block(l, static_cast<int64_t>(dtype_storage_bytes(in.dtype, in.shape.numel())), in.dtype);
    l.placements.push_back({in.value->index(), in.dtype, in.shape, b, 0});
  }
  return l;
}

}  // namespace sdx::plan
