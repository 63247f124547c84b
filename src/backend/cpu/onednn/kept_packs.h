// Packed copies of a model's constant weights, shared by every oneDNN primitive that packs them into the same
// layout (OneDnnMatMul::pack_kept_weights, OneDnnConv::pack_kept_weights): the plans of a model's input
// shapes (buckets, prompt lengths, image widths) and run()'s per-call primitives pack each weight once while
// any of them lives, instead of once per plan and on every slot-by-slot call. Only compiled with
// SDX_WITH_ONEDNN; included by the oneDNN kernels' .cc files.
//
//   // a kernel's pack_kept_weights, with its store key (empty without a store):
//   if (!adopt_or_kept_pack(store, key, w, /*variant=*/0, w_packed, w_shared, [&] {
//         return execute(reorder, {{DNNL_ARG_FROM, w_user.get()}, {DNNL_ARG_TO, w_packed.get()}});
//       }))
//     return internal_error("oneDNN weight reorder failed");
//
// Keyed by the weights' address (the model keeps them there, unchanged, as long as anything packed from them
// may run: a session's initializers; the address cannot come back with other contents before every user of
// the entry is gone), `variant` (what the caller derived from them: a slice's offset, a transposed copy) and
// a hash of the packed layout's descriptor (dims, blocking, data type). Measured on a GPT-2-small-geometry
// decoder at 1 thread: each new plan with more than 8 rows packed ~300 MB again (+300 MB resident, +100 ms),
// and every slot-by-slot call at a new shape packed every weight.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backend/cpu/onednn/onednn_util.h"
#include "backend/packed_weights.h"

namespace sdx::cpu {

// The packed bytes for (kept_as, variant, md): found, or packed now by pack(dst) into a new buffer of
// md.get_size() bytes (two threads packing the same at once both pack; one copy is kept). Null when pack
// fails or the buffer cannot be allocated. Thread-safe.
std::shared_ptr<const AlignedBuffer> kept_pack(const void* kept_as, int64_t variant, const dnnl::memory::desc& md,
                                               const std::function<bool(void*)>& pack);

// pack_or_adopt (onednn_util.h) for kept weights: points `packed` at the bytes `store` holds under `key` (a
// bundle's), else at kept_pack(kept_as, variant)'s, which `hold` keeps alive (recorded into the store when it
// records); pack() fills `packed` wherever it then points. False when packing fails.
bool adopt_or_kept_pack(backend::PackedWeights* store, const std::string& key, const void* kept_as, int64_t variant,
                        dnnl::memory& packed, std::shared_ptr<const AlignedBuffer>& hold,
                        const std::function<bool()>& pack);

}  // namespace sdx::cpu
