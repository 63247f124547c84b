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
  // Every buffer this step's outputs hold (sequence items included).
  std::vector<std::pair<const Buffer*, int>> produced;  // buffer, producing slot
  for (size_t o = 0; o < st.outputs.size(); ++o) {
    const int slot = st.outputs[o];
    if (slot < 0) continue;
    const Datum& d = frame.lookup(node.output(static_cast<int>(o)));
    if (d.is_tensor()) {
      record(slot, d.as_tensor());
      if (d.as_tensor().buffer()) produced.emplace_back(d.as_tensor().buffer().get(), slot);
    } else if (d.is_sequence()) {
      for (const Tensor& t : d.as_sequence())
        if (t.buffer()) produced.emplace_back(t.buffer().get(), slot);
    }
  }
  if (produced.empty()) return;
  // Any other live slot of this graph holding one of those buffers shares memory with the producer
  // (for a sequence output: the slots of the tensors it keeps).
  for (size_t s = 0; s < plan_.slots().size(); ++s) {
    const Datum& d = frame.lookup(plan_.slots()[s].value);
    if (!d.is_tensor() || !d.as_tensor().buffer()) continue;
    const Buffer* b = d.as_tensor().buffer().get();
    for (const auto& [pb, ps] : produced) {
      if (pb != b || ps == static_cast<int>(s)) continue;
      slots_[s].shared = true;
      slots_[static_cast<size_t>(ps)].shared = true;
    }
  }
}

}  // namespace sdx::runtime
