// Session's automatic buckets (issue 21: padding on by default where it is safe). With no shape_buckets option,
// the executor calls switch_to_buckets when callers have brought ShapeVariety::kManySignatures input-shape
// signatures whose dims differ (it says for which dims padding is exact), and, with
// SessionOptions::auto_shape_buckets on (the default), again at the first new signature after that which finds
// the plan cache evicting or passivating plans (Varied::act): the sizes outnumber the plans it keeps. Then the
// dims that varied and that analysis/row_padding.h proved independent rows (a batch dim of a model that never
// mixes rows) become automatic buckets, NAME=auto:K with K half the cache's count (runtime/shape_buckets.h:
// seeded with the sizes seen, a new size its own bucket while fewer than K are, left padding, outputs sliced
// back, the first padded call checked against the exact shapes). The rest keep their exact shapes; the
// SHAPES_VARY diagnostic says why for each. Why not sooner: on a CPU a plan per size costs less than padded
// rows while the cache holds them all (bench/varlen.py --exact: orientation_cnn with 12 batch sizes, minilm
// with 31, both slower padded); past that, exact shapes re-warm evicted plans on every return of a size.
#include "runtime/session.h"

#include <algorithm>

namespace sdx::runtime {

int Session::auto_bucket_count() const {
  return std::clamp(options_.plan_cache_max_count / 2, ShapeVariety::kManySignatures, 32);
}

std::string Session::switch_to_buckets(const ShapeVariety::Varied& varied) const {
  // At most half the plan cache's plans per dim: on a CPU, padding costs the padded rows' arithmetic, while a
  // plan per size costs a warm-up once (the weights' packings are shared: backend/cpu/onednn/kept_packs.h), so
  // buckets fall on the sizes seen (no padding) until there are more of them than plans to keep.
  const int k = auto_bucket_count();
  std::vector<std::string> spec;
  std::string kept;
  for (const std::string& name : varied.dims) {
    auto it = rows_.dims.find(name);
    const std::string why = it == rows_.dims.end() ? "not an input dim of its own" : it->second;
    if (why.empty()) spec.push_back(name + "=auto:" + std::to_string(k));
    else kept += (kept.empty() ? "" : "; ") + ("'" + name + "' keeps exact shapes: " + why);
  }
  std::string said;
  if (!spec.empty() && !varied.act) {
    said = "padding proven exact (independent rows) for";
    for (const std::string& s : spec) said += " '" + s.substr(0, s.find('=')) + "'";
    said += options_.auto_shape_buckets
                ? "; they switch to automatic buckets once the plan cache has to evict or passivate plans"
                : "; SessionOptions.auto_shape_buckets pads them in automatic buckets";
  } else if (!spec.empty()) {
    // Outputs whose declared shape has a placeholder where the proof found the dim: named by it, so that
    // ShapeBuckets slices them there.
    std::vector<ValueInfo> outputs = outputs_;
    for (const std::string& s : spec) {
      const std::string name = s.substr(0, s.find('='));
      auto it = rows_.output_axes.find(name);
      if (it == rows_.output_axes.end()) continue;
      for (const auto& [output, axis] : it->second)
        for (ValueInfo& o : outputs)
          if (o.name == output && o.type.shape && axis < static_cast<int>(o.type.shape->size()))
            (*o.type.shape)[static_cast<size_t>(axis)] = ir::Dim::symbolic(name);
    }
    Result<std::unique_ptr<ShapeBuckets>> made = ShapeBuckets::create(spec, inputs_, outputs);
    std::lock_guard<std::mutex> lock(auto_mu_);
    if (!made.is_ok()) {
      said = "automatic buckets not made: " + made.status().message();
    } else if (!active_buckets_.load(std::memory_order_acquire)) {
      auto_buckets_ = std::move(made).value();
      for (const auto& [name, sizes] : varied.sizes) auto_buckets_->seed(name, sizes);  // buckets from the start
      // Release: publishes the ShapeBuckets just made to every later call (shape_buckets()).
      active_buckets_.store(auto_buckets_.get(), std::memory_order_release);
      said = "switched to automatic buckets (padding proven exact: independent rows):";
      for (const std::string& s : spec) said += " " + s;
    }
  }
  if (!kept.empty()) said += (said.empty() ? "" : "; ") + kept;
  return said;
}

}  // namespace sdx::runtime
