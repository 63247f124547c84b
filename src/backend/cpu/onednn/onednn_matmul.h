// Float32 Y[M, N] = act(X[M, K] · W[K, N] + b) on oneDNN's matmul primitive, with W reordered once
// into the primitive's preferred blocked layout (format_tag::any): the products of sdx.Linear
// (kernels/fused_linear.cc) and MatMul (kernels/nn_matmul.cc) whose weight is a graph initializer.
// Everything else (other types, weights computed by the graph, M <= 8, products too small to gain)
// stays on cpu::gemm (OpenBLAS).
//
//   std::unique_ptr<OneDnnMatMul> mm = OneDnnMatMul::make(M, K, N, act, has_bias);  // null: use gemm
//   mm->pack_weights(w);         // once for a constant weight (prepare), else before every run
//   mm->run(x, bias, y);         // row-major X [M, K] in, Y [M, N] out
//
// Why: OpenBLAS packs W into its panel layout and zeroes C on every call (about 17% of the BERT
// suite's CPU time); here the packing happens once, at capture (the CPU analog of baking pointers
// into a CUDA graph). On the suite's shapes the prepacked brgemm kernel takes 12-31% less thread
// time than OpenBLAS (bench/matmul_prepacked.cc, bench/README.md "Pre-packed GEMM").
//
// Threading (see onednn.h): the rows of X and Y are cut into pieces of whole rows, one or more per
// thread of the calling thread's pool (fixed at make()), and the pieces run as one
// cpu::parallel_for, each a single-threaded primitive call on the weights packed once for all of
// them (oneDNN picks the same weight layout for any M; make() checks it). Cutting by rows keeps
// every output element's reduction over K on one thread, and X and Y dense (oneDNN 2.6's brgemm
// matmul declines a strided Y, which cutting by columns would need, and falls back to its
// gemm-based kernel that repacks W). oneDNN's brgemm kernel sums each element over K in an order
// that depends on neither M nor the cut (tests check it bit for bit), so the results do not
// depend on the thread count either.
//
// Epilogue: bias is oneDNN's bias argument (the bits of MatMul then Add); LeakyRelu (alpha > 0) is an
// eltwise post-op chosen to give the bits of sdx's functor (see append_exact_post_op in
// onednn_util.h); every other activation (Relu included: oneDNN's turns NaN into 0) runs sdx's own functor
// (epilogue_row, activation.h) on each piece right after its product, while it is in cache.
//
// Scratch: the packed weights and each piece's scratchpad (scratchpad_mode::user) are allocated in
// make(); oneDNN's execute still makes small heap allocations of its own per call (see onednn_conv.h).
// One OneDnnMatMul must not run on two threads at once (it owns its buffers), like any bound call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "backend/kernel.h"
#include "backend/packed_weights.h"

namespace sdx::cpu {

class FusedActivation;  // backend/cpu/kernels/util/activation.h

class OneDnnMatMul {
 public:
  // Null when oneDNN is not built in or switched off, when the product is too small to gain from it
  // (fewer than kMinMacs multiply-adds, measured), or when oneDNN has no brgemm kernel for it.
  // The pool size of the calling thread decides the pieces.
  static std::unique_ptr<OneDnnMatMul> make(int64_t M, int64_t K, int64_t N, const FusedActivation& act, bool has_bias);
  ~OneDnnMatMul();
  OneDnnMatMul(const OneDnnMatMul&) = delete;
  OneDnnMatMul& operator=(const OneDnnMatMul&) = delete;

  // Reorders W ([K, N], row-major) into the packed buffer, or uses the bytes `packed` holds for it in
  // place (recording what it packs when the store records). Single-threaded.
  Status pack_weights(const float* w, const backend::PackedWeightsRef& packed = {}) const;
  // pack_weights for a W the caller keeps at this address, unchanged, for as long as anything packed from
  // it may run (a session's initializer): the packed bytes are shared with every OneDnnMatMul that packs
  // the same W into the same layout (the plans of several shapes, run()'s per-call primitives), packed
  // once while any of them lives. With a store, as pack_weights.
  Status pack_kept_weights(const float* w, const backend::PackedWeightsRef& packed = {}) const;
  // The same for a W derived from weights the caller keeps at `kept_as` (`variant` names how: a transposed
  // copy, ...); w() gives the [K, N] floats, called only when nothing packed them yet.
  Status pack_kept_weights(const void* kept_as, int64_t variant, const std::function<const float*()>& w,
                           const backend::PackedWeightsRef& packed = {}) const;
  // y = act(x w + bias) with the weights of the last pack_weights(). bias: N floats or null (must be
  // given iff make() had has_bias). Fails only if a oneDNN primitive does.
  Status run(const float* x, const float* bias, float* y) const;

  // Y[M, N] = float(sum_k (x[m, k] - x_zero_point) * w[k, n]) * scales[n] with X uint8 and W int8 (the
  // products of com.microsoft.MatMulIntegerToFloat): exact int32 sums on oneDNN's VNNI/AMX brgemm kernel,
  // rounded once to float, then one multiply; bitwise what a portable loop computes (measured on every
  // shape the tests try). Null as make() is, and on CPUs without VNNI (oneDNN's int8 kernels there add
  // product pairs in 16 bits with saturation). No bias or activation: the caller's epilogue.
  static std::unique_ptr<OneDnnMatMul> make_u8s8(int64_t M, int64_t K, int64_t N, int32_t x_zero_point,
                                                 const float* scales);
  Status pack_weights(const int8_t* w, const backend::PackedWeightsRef& packed = {}) const;
  Status run(const uint8_t* x, float* y) const;

  // Row pieces (tests).
  int num_pieces() const;
  // Where the packed W lives (tests: shared packings).
  const void* packed_weights_data() const;

  struct Spec;  // what the primitives depend on (onednn_matmul.cc)

  // Below this many multiply-adds OpenBLAS is as fast or faster (per-call overhead, N padded to 64).
  static constexpr int64_t kMinMacs = int64_t{1} << 20;

 private:
  struct Impl;
  explicit OneDnnMatMul(std::unique_ptr<Impl> impl);
  static std::unique_ptr<OneDnnMatMul> make_from(Spec sp);     // checks sizes, catches oneDNN's errors
  static std::unique_ptr<OneDnnMatMul> make_checked(Spec sp);  // the primitives and pieces
  Status pack(const void* w, const backend::PackedWeightsRef& packed) const;
  Status run_on(const void* x, const float* bias, float* y) const;
  std::unique_ptr<Impl> impl_;
};

// Whether input i of node (the weight) is a graph initializer that no caller can feed (not also a graph
// input): the products the kernels send to oneDNN. Read once, in Kernel::init(), so that run() and
// prepare() choose the same path whatever prepare() is told about the input's constness.
bool onednn_matmul_weight(const ir::Node& node, int i);

// The shared run() of sdx.Linear and MatMul on oneDNN: y = act(x w + bias), packing w on this call (w_kept:
// w is a constant the model keeps, packed as pack_kept_weights: found packed when a plan holds it). nullopt,
// with nothing written, when OneDnnMatMul::make declines.
std::optional<Status> run_onednn_matmul(int64_t M, int64_t K, int64_t N, const FusedActivation& act, const float* x,
                                        const float* w, bool w_kept, const float* bias, float* y);
// Their prepare(): the bound call over these fixed buffers; nullopt when make() declines (the caller
// binds its gemm path, as its run() takes it), null when the weight reorder failed (no bound form: replay
// calls run()). A constant weight (w_constant) is packed here, once (w_kept: shared, as pack_kept_weights);
// any other before every call.
std::optional<std::unique_ptr<backend::BoundKernel>> bind_onednn_matmul(int64_t M, int64_t K, int64_t N,
                                                                        const FusedActivation& act, const float* x,
                                                                        const float* w, bool w_constant, bool w_kept,
                                                                        const float* bias, float* y,
                                                                        const backend::PackedWeightsRef& packed = {});

}  // namespace sdx::cpu
