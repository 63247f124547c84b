#include "runtime/shape_variety.h"

#include <algorithm>

namespace sdx::runtime {

ShapeVariety::Varied ShapeVariety::add(const std::vector<ValueInfo>& inputs, const TensorArg* args, bool pressure) {
  std::lock_guard<std::mutex> lock(mu_);
  if (acted_) return {};  // sizes are counted up to the switch: they seed its buckets
  for (size_t i = 0; i < inputs.size(); ++i)
    for (int a = 0; a < args[i].rank; ++a) sizes_[{i, a}].insert(args[i].dims[a]);
  ++signatures_;
  const bool say = !said_ && signatures_ >= kManySignatures, act = !acted_ && pressure && signatures_ >= kManySignatures;
  if (!say && !act) return {};
  Varied out;
  std::string dims;
  for (const auto& [at, seen] : sizes_) {
    if (seen.size() < 2) continue;
    const ValueInfo& in = inputs[at.first];
    const bool named = in.type.shape && at.second < static_cast<int>(in.type.shape->size()) &&
                       !(*in.type.shape)[static_cast<size_t>(at.second)].param.empty();
    if (named) {
      const std::string& name = (*in.type.shape)[static_cast<size_t>(at.second)].param;
      if (std::find(out.dims.begin(), out.dims.end(), name) == out.dims.end()) out.dims.push_back(name);
      out.sizes[name].insert(out.sizes[name].end(), seen.begin(), seen.end());
    }
    dims += (dims.empty() ? "" : "; ") +
            (named ? "'" + (*in.type.shape)[static_cast<size_t>(at.second)].param + "' (" : std::string("(")) +
            in.name + " axis " + std::to_string(at.second) + "): " + std::to_string(seen.size()) + " sizes, " +
            std::to_string(*seen.begin()) + ".." + std::to_string(*seen.rbegin());
  }
  if (dims.empty()) return {};
  said_ = said_ || say;
  acted_ = acted_ || act;
  out.act = act;
  if (!say) return out;
  out.text = std::to_string(signatures_) + " input-shape signatures so far, each warmed up, frozen and captured as a "
         "plan of its own; the dims that differ: " + dims + ". sdx pads a dim by itself only where padding is "
         "proven exact: rows the model keeps independent (a batch dim; SessionOptions.auto_shape_buckets) and a "
         "with-past decoder's past length, masked by its attention_mask (the Python InferenceSession's KV streams); "
         "SessionOptions.shape_buckets (NAME=STEP or NAME=auto) pads a dim you know padding keeps exact (masked "
         "keys), checked against the exact shapes once";
  return out;
}

}  // namespace sdx::runtime
