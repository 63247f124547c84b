// Internals shared by the oneDNN-backed kernels (onednn_conv.cc, onednn_pool.cc, onednn_matmul.cc); only compiled
// with SDX_WITH_ONEDNN and only included by those .cc files (dnnl.hpp is a heavy header).
//
//   OneDnnSingleThread one;                        // see onednn.h
//   dnnl::convolution_forward::primitive_desc pd(desc, attr, onednn_engine());
//   execute(prim, {{DNNL_ARG_SRC, src.get()}, {DNNL_ARG_DST, dst.get()}});
#pragma once

#if !SDX_WITH_ONEDNN
#error "onednn_util.h needs SDX_WITH_ONEDNN"
#endif

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <type_traits>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/packed_weights.h"
#include "core/fnv1a.h"

namespace sdx::cpu {

// The key of one packed-weight buffer (backend/packed_weights.h): the step's prefix, what packed it, the
// piece, and a hash of the packed layout's descriptor (a POD struct in oneDNN 2.x: dims, blocking,
// padding), so that bytes packed for another layout (another ISA, another thread count) are never used.
// A hash of a memory descriptor (a POD struct in oneDNN 2.x): two descriptors with one hash lay out the
// same bytes.
inline uint64_t layout_hash(const dnnl::memory::desc& md) {
  return fnv1a64(std::string_view(reinterpret_cast<const char*>(&md.data), sizeof md.data));
}

inline std::string packed_weights_key(const std::string& prefix, const char* what, int64_t piece,
                                      const dnnl::memory::desc& md) {
  return prefix + "|" + what + "|" + std::to_string(piece) + "|" + hex64(layout_hash(md));
}

// The CPU engine (one per process; oneDNN engines are thread-safe).
inline dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A stream per thread: primitives of one slice run on the thread that claimed the slice, and
// oneDNN does not promise that one stream may be used from several threads at once.
inline dnnl::stream& onednn_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

// Runs a primitive on this thread's stream through the C API (an argument array, so the C++
// wrapper's std::unordered_map is not built on every call). CPU streams execute synchronously.
inline bool execute(const dnnl::primitive& p, std::initializer_list<dnnl_exec_arg_t> args) {
  return dnnl_primitive_execute(p.get(), onednn_stream().get(), static_cast<int>(args.size()), args.begin()) ==
         dnnl_success;
}

// A zero-filled, 64-byte aligned byte buffer owned by a primitive (packed weights, blocked
// activations, scratchpads). Zero-filled so the channel padding of blocked layouts reads as 0.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // zero: touch every page now (a later first call does not fault them in).
  explicit AlignedBuffer(size_t bytes, bool zero = true) {
    if (bytes == 0) return;
    const size_t size = (bytes + 63) / 64 * 64;
    data_.reset(std::aligned_alloc(64, size));
    if (data_ && zero) std::memset(data_.get(), 0, size);
  }
  bool ok_for(size_t bytes) const { return bytes == 0 || data_ != nullptr; }
  void* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
};

// Points `packed` at the bytes the store holds under `key` (no reorder, no copy; read-only from then
// on); or runs `pack` into `buf` (allocated on first use, so that adopted weights cost no memory of
// their own) and records what it wrote when the store records. False when allocation or `pack` fails.
template <typename PackFn>
bool pack_or_adopt(backend::PackedWeights* store, const std::string& key, dnnl::memory& packed, AlignedBuffer& buf,
                   PackFn&& pack) {
  const size_t bytes = packed.get_desc().get_size();
  if (store) {
    if (const void* found = store->find(key, bytes)) {
      packed.set_data_handle(const_cast<void*>(found));
      return true;
    }
  }
  if (!buf.data()) {
    buf = AlignedBuffer(bytes, /*zero=*/false);  // the reorder writes every byte
    if (!buf.ok_for(bytes)) return false;
  }
  packed.set_data_handle(buf.data());
  if (!pack()) return false;
  if (store && store->is_recording()) store->keep(key, buf.data(), bytes);
  return true;
}

// Appends act as an eltwise post-op when oneDNN computes it with the bits of sdx's functor (returns
// true; also for no activation); false for activations the caller applies itself after the
// primitive. Only LeakyRelu with alpha > 0 qualifies: oneDNN's relu with alpha != 0 is
// `x > 0 ? x : alpha * x`, which differs from LeakyReluOp only in which branch returns a zero, not in
// the result, and keeps NaN (alpha * NaN). Relu stays with ReluOp, which keeps NaN: every oneDNN
// form of it turns NaN into 0 (measured on oneDNN 2.6, brgemm matmul and jit eltwise: eltwise_relu
// with alpha 0 or -0, eltwise_clip / clip_v2 (0, inf), a binary_max post-op with 0), and so does
// LeakyRelu with alpha 0 (the same relu). Clip stays with ClipOp for the same reason (oneDNN's clip
// maps NaN to the lower bound); oneDNN's Gelu, Sigmoid, Tanh, ... are other approximations than
// sdx's vector kernels.
inline bool append_exact_post_op(const FusedActivation& act, dnnl::post_ops& ops) {
  return act.visit([&](auto f) {
    using F = decltype(f);
    if constexpr (std::is_same_v<F, IdentityActivation>) {
      return true;
    } else if constexpr (std::is_same_v<F, LeakyReluOp>) {
      if (!(f.alpha > 0.f)) return false;
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, f.alpha, 0.f);
      return true;
    } else {
      return false;
    }
  });
}

}  // namespace sdx::cpu
