#if SDX_WITH_ONEDNN

#include "backend/cpu/onednn/kept_packs.h"

#include <iterator>
#include <map>
#include <mutex>
#include <tuple>

namespace sdx::cpu {
namespace {

struct KeptPacks {
  std::mutex mu;  // guards packs; publishes each entry's bytes (written before it is inserted) to other threads
  std::map<std::tuple<const void*, int64_t, uint64_t>, std::weak_ptr<const AlignedBuffer>> packs;
};

KeptPacks& kept_packs() {
  static KeptPacks* k = new KeptPacks;  // never destroyed: packings may be released during static teardown
  return *k;
}

}  // namespace

std::shared_ptr<const AlignedBuffer> kept_pack(const void* kept_as, int64_t variant, const dnnl::memory::desc& md,
                                               const std::function<bool(void*)>& pack) {
  const std::tuple<const void*, int64_t, uint64_t> key{kept_as, variant, layout_hash(md)};
  KeptPacks& kept = kept_packs();
  {
    std::lock_guard<std::mutex> lock(kept.mu);
    auto it = kept.packs.find(key);
    if (it != kept.packs.end())
      if (std::shared_ptr<const AlignedBuffer> p = it->second.lock()) return p;
  }
  const size_t bytes = md.get_size();
  auto mine = std::make_shared<AlignedBuffer>(bytes, /*zero=*/false);  // the reorder writes every byte
  if (!mine->ok_for(bytes) || !pack(mine->data())) return nullptr;
  std::lock_guard<std::mutex> lock(kept.mu);
  std::weak_ptr<const AlignedBuffer>& slot = kept.packs[key];
  if (std::shared_ptr<const AlignedBuffer> p = slot.lock()) return p;  // packed meanwhile by another thread
  std::shared_ptr<const AlignedBuffer> p = std::move(mine);
  slot = p;
  if (kept.packs.size() > 4096)
    for (auto it = kept.packs.begin(); it != kept.packs.end();)
      it = it->second.expired() ? kept.packs.erase(it) : std::next(it);
  return p;
}

bool adopt_or_kept_pack(backend::PackedWeights* store, const std::string& key, const void* kept_as, int64_t variant,
                        dnnl::memory& packed, std::shared_ptr<const AlignedBuffer>& hold,
                        const std::function<bool()>& pack) {
  const dnnl::memory::desc md = packed.get_desc();
  const size_t bytes = md.get_size();
  const void* at = store ? store->find(key, bytes) : nullptr;
  if (!at) {
    hold = kept_pack(kept_as, variant, md, [&](void* dst) {
      packed.set_data_handle(dst);
      return pack();
    });
    if (!hold) return false;
    at = hold->data();
    if (store && store->is_recording()) store->keep(key, at, bytes);
  }
  packed.set_data_handle(const_cast<void*>(at));
  return true;
}

}  // namespace sdx::cpu

#endif  // SDX_WITH_ONEDNN
