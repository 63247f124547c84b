// Weights a kernel packed once into its primitive's layout, kept by key, so that a bundle carries them
// (api/bundle.h, the kPacked section) and a session loaded from it binds without packing again.
//
//   // in Kernel::prepare, for a constant weight:
//   if (const void* p = ctx.packed_weights() ? ctx.packed_weights()->find(key, bytes) : nullptr) use(p);
//   else { pack(buf); if (ctx.packed_weights()) ctx.packed_weights()->keep(key, buf, bytes); }
//
// A key names the node and everything the layout depends on (the primitive's weight descriptor, the
// slice, the ISA), so a machine or thread count that packs differently misses and packs again: an entry
// is used only where the kernel would have produced exactly these bytes. find() also checks the size.
// Found bytes are read-only and live as long as this store (it holds the bundle's mapping).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sdx::backend {

class PackedWeights {
 public:
  // A store that finds nothing and records what kernels pack (compile_bundle).
  static std::shared_ptr<PackedWeights> recording();
  // A store that finds `entries` (views kept alive by `owner`) and records nothing.
  static std::shared_ptr<PackedWeights> from(std::vector<std::pair<std::string, std::string_view>> entries,
                                             std::shared_ptr<void> owner);

  // The bytes packed under `key` when they are exactly `bytes` long; else null (pack them).
  const void* find(const std::string& key, size_t bytes) const;
  // Records a copy of `bytes` packed under `key` (when recording; thread-safe).
  void keep(const std::string& key, const void* data, size_t bytes);
  bool is_recording() const {
    std::lock_guard<std::mutex> lock(mu_);
    return recording_;
  }
  // What was recorded, by key.
  std::vector<std::pair<std::string, std::string_view>> recorded() const;
  // Everything it holds, found and recorded, by key. The views stay valid until stop_recording().
  std::vector<std::pair<std::string, std::string_view>> entries() const;
  // Records nothing more and frees the copies recorded so far (once they are written somewhere).
  void stop_recording();
  // Entries found and missed so far (diagnostics, tests).
  size_t hits() const;
  size_t misses() const;

 private:
  bool recording_ = false;
  std::map<std::string, std::string_view, std::less<>> found_;
  std::shared_ptr<void> owner_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> kept_;
  mutable size_t hits_ = 0, misses_ = 0;
};

// What a kernel's packing call needs: the store (null: just pack) and the step's key prefix
// (PrepareContext::packed_key_prefix()).
struct PackedWeightsRef {
  PackedWeights* store = nullptr;
  std::string prefix;
};

}  // namespace sdx::backend
