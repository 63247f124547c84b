#include "runtime/shape_recorder.h"

namespace sdx::runtime {

void ShapeRecorder::record(int slot, const Tensor& t) {
  RecordedSlot& r = slots_[static_cast<size_t>(slot)];
  if (r.seen && (r.dtype != t.dtype() || r.shape != t.shape())) r.stable = false;
  r.seen = true;
  r.dtype = t.dtype();
  r.shape = t.shape();
}

void ShapeRecorder::on_step(int step, const ir::Node& node, const Frame& frame) {
  const plan::Step& st = plan_.steps()[static_cast<size_t>(step)];
  std::vector<std::pair<const Buffer*, int>> views;     // tensor outputs: buffer, producing slot
  std::vector<std::pair<const Buffer*, int>> sequence;  // buffers kept inside sequence outputs
  for (size_t o = 0; o < st.outputs.size(); ++o) {
    const int slot = st.outputs[o];
    if (slot < 0) continue;
    const Datum& d = frame.lookup(node.output(static_cast<int>(o)));
    if (d.is_tensor()) {
      record(slot, d.as_tensor());
      if (d.as_tensor().buffer()) views.emplace_back(d.as_tensor().buffer().get(), slot);
    } else if (d.is_sequence()) {
      for (const Tensor& t : d.as_sequence())
        if (t.buffer()) sequence.emplace_back(t.buffer().get(), slot);
    }
  }
  if (views.empty() && sequence.empty()) return;
  auto root = [&](int s) {
    while (slots_[static_cast<size_t>(s)].view_of >= 0) s = slots_[static_cast<size_t>(s)].view_of;
    return s;
  };
  // Another live slot holding one of those buffers: a tensor output is a view of it; a sequence
  // output keeps it (both then stay out of planned memory).
  for (size_t s = 0; s < plan_.slots().size(); ++s) {
    const Datum& d = frame.lookup(plan_.slots()[s].value);
    if (!d.is_tensor() || !d.as_tensor().buffer()) continue;
    const Buffer* b = d.as_tensor().buffer().get();
    for (const auto& [pb, ps] : sequence) {
      if (pb != b || ps == static_cast<int>(s)) continue;
      slots_[s].shared = true;
      slots_[static_cast<size_t>(ps)].shared = true;
    }
    for (const auto& [pb, ps] : views) {
      if (pb != b || ps == static_cast<int>(s)) continue;
      // Two outputs of this step on one buffer: the first is the root.
      if (plan_.slots()[s].producer_step == step && static_cast<int>(s) > ps) continue;
      const int r = root(static_cast<int>(s));
      if (r != ps) slots_[static_cast<size_t>(ps)].view_of = r;
    }
  }
}

}  // namespace sdx::runtime
