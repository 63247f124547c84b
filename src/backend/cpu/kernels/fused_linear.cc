// sdx.Linear(X [..., K], W [K, N], B [N]?, W_scale [N]?) -> act(X W' + B), the op LinearFusion makes of
// MatMul + Add(bias) [+ activation], and QuantizationOptimizations of a MatMul/Gemm whose weight it
// stores in lower precision (schema: src/ir/schemas/fused.cc). W' is W, or for the lower-precision
// forms (X float32 only) W float16 widened to float, or W int8 times the per-column W_scale.
//
// X is read as one [M, K] matrix (M = the product of its leading dims).
// - Small M (<= kSmallMMaxRows, a decoder step): the small-M kernel (backend/cpu/gemm/small_m_gemm.h)
//   streams W once in its stored precision, split over the pool by blocks of columns; each chunk's bias
//   and activation run right after its product, on the same thread, while it is in cache. The bound
//   call repacks a constant W once into contiguous column blocks (same bits, sequential reads).
// - Larger M, float32 X and W with W a graph initializer: oneDNN's matmul primitive on W packed into
//   its blocked layout (backend/cpu/onednn/onednn_matmul.h): once, at prepare(), for the bound call; on every
//   call for run(). Bias and LeakyRelu (alpha > 0) are oneDNN post-ops, other activations sdx's epilogue
//   (Relu included: oneDNN's turns NaN into 0). An int8 W with x_quant "none" (a weight the model stores
//   in int8 and dequantizes itself, QuantizationOptimizations) takes this path too, on W' = fl(float(w) *
//   scale[n]) per weight, the graph's own dequantization: made and packed once by the bound call (then
//   freed: the int8 W and the packed copy stay), per call by run().
//   Products too small to gain and builds without oneDNN take the gemm path below.
// - Otherwise at larger M: blocks of rows, each a gemm followed by the epilogue over the block while it
//   is in cache (rows split over the pool). float16/int8 (x_quant "int16") weights are first widened into a float32 copy
//   (per call, into scratch of the bound call), the int8 scales applied in the epilogue:
//   y = scale[n] * acc + b.
// - x_quant "dynamic" (int8 W, float32 X, K within int8_dynamic_applies): every M goes through
//   int8_dynamic_gemm (X quantized per row, integer products; W packed once per bound call, per call by
//   run()); its result does not depend on M or the thread count, so run() and replay agree bit for bit.
// - x_quant "int16" (int8 W, float32 X, M <= kSmallMMaxRows, K within int8_w16_applies): int8_w16_gemm,
//   X rounded per row to 16-bit integers and the products taken exactly in integers (W packed the same
//   way); at larger M the widened-weight path above (X in float).
// Epilogue: bias add then activation (Relu, LeakyRelu and Clip on vectors, see epilogue_row in
// activation.h).
//
// Same-type W: each element goes through the operations of the unfused MatMul -> Add -> activation
// (16-bit floats are rounded to the storage type after each step as the separate kernels do), and the
// float32 product is computed per element independently of the thread count and, on the small-M kernel,
// of M. So the result equals the unfused one bit for bit whenever both make the same kind of gemm call
// (always when M <= kSmallMMaxRows for both); a float32 MatMul over B batch matrices of S rows may differ
// from the [B*S, K] product in the last bits (the BLAS's summation order depends on the shape; tests
// compare with same_up_to_gemm_order). run() and the bound call share the code, so they agree bit for
// bit, at any thread count (a dot product is never split across threads). Whether the oneDNN path runs
// is decided from init()'s node (W is an initializer) and the shapes, the same for both; oneDNN's
// products do not depend on M, so sdx.Linear on oneDNN equals MatMul on oneDNN + Add + activation.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/quant/int8_dynamic_gemm.h"
#include "backend/cpu/quant/int8_w16_gemm.h"
#include "backend/cpu/gemm/small_m_gemm.h"
#include "backend/cpu/onednn/onednn_matmul.h"
#include "core/tensor_values.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

struct LinearGeometry {
  int64_t M = 0, N = 0, K = 0;
  Shape out_shape;
  bool lowp = false;                          // W float16 or int8 while X is float32
  WeightType wtype = WeightType::kFloat32;    // when lowp
};

// bias: input B or null; scale: input W_scale or null.
Result<LinearGeometry> linear_geometry(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor* scale) {
  if (x.rank() < 1) return invalid_argument("sdx.Linear input X must have rank >= 1");
  if (w.rank() != 2) return invalid_argument("sdx.Linear weight W must be 2-D, got " + w.shape().to_string());
  LinearGeometry g;
  g.K = x.shape()[x.rank() - 1];
  g.N = w.shape()[1];
  if (w.dtype() != x.dtype()) {
    if (x.dtype() != DType::kFloat32 || (w.dtype() != DType::kFloat16 && w.dtype() != DType::kInt8))
      return invalid_argument("sdx.Linear weight W must have the element type of X, or be float16/int8 with X float32");
    g.lowp = true;
    g.wtype = w.dtype() == DType::kFloat16 ? WeightType::kFloat16 : WeightType::kInt8;
  }
  if ((g.wtype == WeightType::kInt8) != (scale != nullptr))
    return invalid_argument("sdx.Linear takes W_scale exactly when W is int8");
  if (scale && (scale->dtype() != DType::kFloat32 || scale->rank() != 1 || scale->shape()[0] != g.N))
    return invalid_argument("sdx.Linear W_scale must be float32 [" + std::to_string(g.N) + "], got " +
                            scale->shape().to_string());
  if (w.shape()[0] != g.K)
    return invalid_argument("sdx.Linear inner dimensions differ: X " + x.shape().to_string() + ", W " +
                            w.shape().to_string());
  if (bias) {
    if (bias->dtype() != x.dtype()) return invalid_argument("sdx.Linear bias B must have the element type of X");
    if (bias->rank() != 1 || bias->shape()[0] != g.N)
      return invalid_argument("sdx.Linear bias B must have shape [" + std::to_string(g.N) + "], got " +
                              bias->shape().to_string());
  }
  std::vector<int64_t> out = x.shape().dims();
  out.back() = g.N;
  g.out_shape = Shape(out);
  g.M = x.shape().size_between(0, x.rank() - 1);
  return g;
}

// Scratch of one product: float copies of 16-bit inputs and output, the float32 copy of a float16/int8
// W (only when M is too large for the small-M kernel), and the gemm workspace.
template <typename T>
struct LinearScratch {
  using C = compute_t<T>;
  static constexpr bool kHalf = !std::is_same_v<T, C>;
  LinearScratch(const LinearGeometry& g, int64_t x_numel, int64_t w_numel)
      : x(kHalf ? static_cast<size_t>(x_numel) : 0),
        w(kHalf || (g.lowp && g.M > kSmallMMaxRows) ? static_cast<size_t>(w_numel) : 0),
        y(kHalf ? static_cast<size_t>(g.M * g.N) : 0),
        ws(static_cast<size_t>(gemm_workspace_size(g.N, g.K))) {}
  ScratchBuffer<C> x, w, y, ws;
};


// Output elements per row block: the epilogue runs on each block right after its gemm, while
// the block is still in cache (256 KB of floats).
constexpr int64_t kBlockElements = int64_t{1} << 16;
// Output elements per parallel chunk of the epilogue.
constexpr int64_t kEpilogueGrain = 4096;

// Bias and activation of columns [n0, n1) of rows [0, rows) of y (row stride N); scale (int8 W): y = scale * y
// first. Elementwise, so any split of the rows or columns gives the same bits.
template <typename F>
void float_epilogue(const F& f, float* y, int64_t rows, int64_t N, int64_t n0, int64_t n1, const float* scale,
                    const float* pb) {
  constexpr bool kIdentity = std::is_same_v<F, IdentityActivation>;
  for (int64_t i = 0; i < rows; ++i) {
    float* yr = y + i * N;
    if (scale)
      for (int64_t j = n0; j < n1; ++j) yr[j] = yr[j] * scale[j];
    if (pb || !kIdentity) epilogue_row(f, yr + n0, pb ? pb + n0 : nullptr, n1 - n0);
  }
}

// y = act(x w + b), block of rows by block of rows. The epilogue replays the unfused kernels'
// roundings: MatMul stores its result as T, Add computes in C and stores T, the activation
// computes in C and stores T. `scale` (int8 weights widened into w, float32 only): per-column factor
// applied to the product before the bias.
template <typename T>
void linear_blocked(const LinearGeometry& g, const FusedActivation& act, const T* px, int64_t x_numel,
                    const compute_t<T>* w, const float* scale, const T* pb, T* py, LinearScratch<T>& s) {
  using C = compute_t<T>;
  constexpr bool kHalf = LinearScratch<T>::kHalf;
  const int64_t M = g.M, N = g.N, K = g.K;
  const C* x = as_compute(px, x_numel, s.x.data());
  C* acc;
  if constexpr (kHalf)
    acc = s.y.data();
  else
    acc = py;
  // A multiple of 4 rows (the gemm's micro-tile height), at least 4.
  const int64_t block = std::max<int64_t>(4, kBlockElements / N / 4 * 4);
  act.visit([&](auto f) {
    constexpr bool kIdentity = std::is_same_v<decltype(f), IdentityActivation>;
    for (int64_t r0 = 0; r0 < M; r0 += block) {
      const int64_t rows = std::min(block, M - r0);
      gemm(false, false, rows, N, K, C(1), x + r0 * K, K, w, N, C(0), acc + r0 * N, N, s.ws.data());
      if constexpr (std::is_same_v<T, float>) {
        if (pb || scale || !kIdentity)
          parallel_for(rows, std::max<int64_t>(1, kEpilogueGrain / N), [&](int64_t i0, int64_t i1) {
            float_epilogue(f, py + (r0 + i0) * N, i1 - i0, N, 0, N, scale, pb);
          });
      } else if constexpr (!kHalf) {
        T* y = py + r0 * N;
        parallel_for(rows, std::max<int64_t>(1, kEpilogueGrain / N), [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i)
            if (pb || !kIdentity) epilogue_row(f, y + i * N, pb, N);
        });
      } else {
        for (int64_t i = r0; i < r0 + rows; ++i) {
          for (int64_t j = 0; j < N; ++j) {
            C v = load_as<C>(from_f32<T>(acc[i * N + j]));
            if (pb) v = load_as<C>(from_f32<T>(v + load_as<C>(pb[j])));
            py[i * N + j] = from_f32<T>(f(v));
          }
        }
      }
    }
  });
}

bool uses_small_m(const LinearGeometry& g) {
  return g.lowp ? g.M <= kSmallMMaxRows : small_m_gemm_applies(g.M, g.N, g.K);
}

SmallMWeights small_m_weights(const LinearGeometry& g, const void* w, const float* scale) {
  return SmallMWeights{g.lowp ? g.wtype : WeightType::kFloat32, w, g.N, scale};
}

// float32 X with W float32 (lowp false), float16 or int8 at small M: the small-M kernel, epilogue per
// column chunk. packed: W repacked by the bound call (same bits), or null.
void linear_small_m(const LinearGeometry& g, const FusedActivation& act, const float* x, const void* w,
                    const float* scale, const float* pb, float* y, const SmallMPackedWeights* packed) {
  act.visit([&](auto f) {
    // The scale is applied inside the kernel (y = scale * acc), so the epilogue gets none.
    auto epilogue = [&](int64_t n0, int64_t n1) { float_epilogue(f, y, g.M, g.N, n0, n1, nullptr, pb); };
    if (packed)
      small_m_gemm_packed(g.M, g.N, g.K, x, g.K, *packed, 1.f, 0.f, y, g.N, epilogue);
    else
      small_m_gemm(g.M, g.N, g.K, x, g.K, small_m_weights(g, w, scale), 1.f, 0.f, y, g.N, epilogue);
  });
}

// Widens a float16/int8 W [K, N] into w32 (int8: the integers, the scales come in the epilogue).
void widen_weight(const LinearGeometry& g, const void* w, float* w32) {
  const int64_t n = g.K * g.N;
  parallel_for(n, int64_t{1} << 14, [&](int64_t i0, int64_t i1) {
    if (g.wtype == WeightType::kFloat16) {
      const uint16_t* p = static_cast<const uint16_t*>(w);
      for (int64_t i = i0; i < i1; ++i) w32[i] = Float16::from_bits(p[i]).to_float();
    } else {
      const int8_t* p = static_cast<const int8_t*>(w);
      for (int64_t i = i0; i < i1; ++i) w32[i] = static_cast<float>(p[i]);
    }
  });
}

// W' = fl(float(w[k, n]) * scale[n]) for an int8 W: what the graph's Mul(Cast(q), s) or DequantizeLinear
// computed before QuantizationOptimizations let sdx.Linear read q directly; the float matrix oneDNN packs
// (x_quant "none" at larger M).
std::vector<float> dequantized_weight(const LinearGeometry& g, const int8_t* w, const float* scale) {
  std::vector<float> out(static_cast<size_t>(g.K * g.N));
  parallel_for(g.K, std::max<int64_t>(1, (int64_t{1} << 14) / g.N), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      for (int64_t n = 0; n < g.N; ++n) out[static_cast<size_t>(k * g.N + n)] = static_cast<float>(w[k * g.N + n]) * scale[n];
  });
  return out;
}

// One call. pw: W's data in its own type; scale: W_scale or null; packed: see linear_small_m.
template <typename T>
void linear(const LinearGeometry& g, const FusedActivation& act, const T* px, int64_t x_numel, const void* pw,
            int64_t w_numel, const float* scale, const T* pb, T* py, LinearScratch<T>& s,
            const SmallMPackedWeights* packed = nullptr) {
  if (g.M * g.N == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (uses_small_m(g)) return linear_small_m(g, act, px, pw, scale, pb, py, packed);
    if (g.lowp) {
      widen_weight(g, pw, s.w.data());
      return linear_blocked<float>(g, act, px, x_numel, s.w.data(), scale, pb, py, s);
    }
  }
  const compute_t<T>* w = as_compute(static_cast<const T*>(pw), w_numel, s.w.data());
  linear_blocked<T>(g, act, px, x_numel, w, nullptr, pb, py, s);
}

// The integer paths of an int8 W: x_quant "dynamic" (Int8DynamicWeights, int8_dynamic_gemm) and "int16"
// (Int8W16Weights, int8_w16_gemm). y = act(product(x, w) + b); scratch of integer_scratch_bytes(w, M, K).
inline size_t integer_scratch_bytes(const Int8DynamicWeights&, int64_t M, int64_t K) {
  return int8_dynamic_scratch_bytes(M, K);
}
inline size_t integer_scratch_bytes(const Int8W16Weights&, int64_t M, int64_t K) { return int8_w16_scratch_bytes(M, K); }

template <typename Packed>
void linear_integer(const LinearGeometry& g, const FusedActivation& act, const float* x, const Packed& w,
                    const float* pb, float* y, void* scratch) {
  if (g.M * g.N == 0) return;
  act.visit([&](auto f) {
    auto epilogue = [&](int64_t n0, int64_t n1) { float_epilogue(f, y, g.M, g.N, n0, n1, nullptr, pb); };
    if constexpr (std::is_same_v<Packed, Int8DynamicWeights>)
      int8_dynamic_gemm(g.M, g.K, x, g.K, w, y, g.N, scratch, epilogue);
    else
      int8_w16_gemm(g.M, g.K, x, g.K, w, y, g.N, scratch, epilogue);
  });
}

// run(): W packed and scratch allocated for this one call.
template <typename Packed>
void run_integer(const LinearGeometry& g, const FusedActivation& act, const Tensor& x, const Tensor& w,
                 const Tensor& scale, const Tensor* b, Tensor& y) {
  const Packed packed(w.data<int8_t>(), g.N, g.K, g.N, scale.data<float>());
  std::vector<char> scratch(integer_scratch_bytes(packed, g.M, g.K));
  linear_integer(g, act, x.data<float>(), packed, b ? b->data<float>() : nullptr, y.data<float>(), scratch.data());
}

// The bound call: W and its scales packed now, so they must hold the same values on every call.
template <typename Packed>
BoundResult bind_integer(const backend::PrepareContext& ctx, const LinearGeometry& g,
                         const FusedActivation& act) {
  if (!ctx.input_is_constant(1) || !ctx.input_is_constant(3)) return no_bound_form();
  const Tensor* b = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  auto packed = std::make_shared<const Packed>(ctx.input(1).data<int8_t>(), g.N, g.K, g.N, ctx.input(3).data<float>());
  auto scratch = std::make_shared<std::vector<char>>(integer_scratch_bytes(*packed, g.M, g.K));
  return backend::bind_call([g, act, px = ctx.input(0).data<float>(), pb = b ? b->data<float>() : nullptr,
                             py = ctx.output(0).data<float>(), packed, scratch] {
    linear_integer(g, act, px, *packed, pb, py, scratch->data());
    return Status::ok();
  });
}

// sdx.Linear's x_quant: "none" (X float), "int16", "dynamic" (X rounded to 8 bits).
enum class XQuant { kNone, kInt16, kInt8 };

class LinearKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(act_, FusedActivation::from_node(node), "sdx.Linear");
    w_is_initializer_ = onednn_matmul_weight(node, 1) && (node.num_inputs() < 4 || !node.input(3) ||
                                                         onednn_matmul_weight(node, 3));
    const std::string xq = node.attr_string("x_quant", "none");
    if (xq != "none" && xq != "dynamic" && xq != "int16")
      return invalid_argument("sdx.Linear x_quant must be 'none', 'int16' or 'dynamic', got '" + xq + "'");
    x_quant_ = xq == "dynamic" ? XQuant::kInt8 : xq == "int16" ? XQuant::kInt16 : XQuant::kNone;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* sc = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    SDX_ASSIGN_OR_RETURN(LinearGeometry g, linear_geometry(x, w, b, sc), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), g.out_shape), "");
    switch (integer_path(g)) {
      case XQuant::kInt8:
        run_integer<Int8DynamicWeights>(g, act_, x, w, *sc, b, y);
        return Status::ok();
      case XQuant::kInt16:
        run_integer<Int8W16Weights>(g, act_, x, w, *sc, b, y);
        return Status::ok();
      case XQuant::kNone:
        break;
    }
    if (onednn_candidate(x, g)) {
      std::vector<float> dequantized;
      if (g.lowp) dequantized = dequantized_weight(g, w.data<int8_t>(), sc->data<float>());
      if (std::optional<Status> st = run_onednn_matmul(g.M, g.K, g.N, act_, x.data<float>(),
                                                       g.lowp ? dequantized.data() : w.data<float>(),
                                                       !g.lowp && w_is_initializer_, b ? b->data<float>() : nullptr,
                                                       y.data<float>()))
        return *st;
    }
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          LinearScratch<T> s(g, x.numel(), w.numel());
          linear<T>(g, act_, x.data<T>(), x.numel(), w.raw_data(), w.numel(), sc ? sc->data<float>() : nullptr,
                    b ? b->data<T>() : nullptr, y.data<T>(), s);
          return Status::ok();
        },
        "sdx.Linear");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* sc = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    Result<LinearGeometry> g = linear_geometry(x, w, b, sc);
    if (!g.is_ok() || !output_matches(ctx, 0, x.dtype(), g.value().out_shape)) return no_bound_form();
    switch (integer_path(g.value())) {
      case XQuant::kInt8:
        return bind_integer<Int8DynamicWeights>(ctx, g.value(), act_);
      case XQuant::kInt16:
        return bind_integer<Int8W16Weights>(ctx, g.value(), act_);
      case XQuant::kNone:
        break;
    }
    if (onednn_candidate(x, g.value())) {
      // An int8 W is dequantized here and packed from this copy, once: it must be a constant.
      std::vector<float> dequantized;
      if (g.value().lowp) {
        if (!ctx.input_is_constant(1) || !ctx.input_is_constant(3)) return no_bound_form();
        dequantized = dequantized_weight(g.value(), w.data<int8_t>(), sc->data<float>());
      }
      std::optional<std::unique_ptr<backend::BoundKernel>> onednn =
          bind_onednn_matmul(g.value().M, g.value().K, g.value().N, act_, x.data<float>(),
                             g.value().lowp ? dequantized.data() : w.data<float>(), ctx.input_is_constant(1),
                             !g.value().lowp && w_is_initializer_, b ? b->data<float>() : nullptr,
                             ctx.output(0).data<float>(),
                             {ctx.packed_weights(), ctx.packed_key_prefix()});
      if (onednn) return std::move(*onednn);
    }
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          auto s = std::make_unique<LinearScratch<T>>(g.value(), x.numel(), w.numel());
          // A constant weight on the small-M path is repacked once for sequential streaming (same bits),
          // one copy shared by every bound call reading it (shared_small_m_packed).
          std::shared_ptr<const SmallMPackedWeights> packed;
          const bool constant_w = ctx.input_is_constant(1) && (!sc || ctx.input_is_constant(3));
          if (std::is_same_v<T, float> && constant_w && uses_small_m(g.value()))
            packed = shared_small_m_packed(small_m_weights(g.value(), w.raw_data(), sc ? sc->data<float>() : nullptr),
                                   g.value().K, g.value().N);
          bound = backend::bind_call([g = g.value(), act = act_, px = x.data<T>(), nx = x.numel(), pw = w.raw_data(),
                                      nw = w.numel(), psc = sc ? sc->data<float>() : nullptr,
                                      pb = b ? b->data<T>() : nullptr, py = ctx.output(0).template data<T>(),
                                      s = std::move(s), packed = std::move(packed)] {
            linear<T>(g, act, px, nx, pw, nw, psc, pb, py, *s, packed.get());
            return Status::ok();
          });
          return Status::ok();
        },
        "sdx.Linear");
    return bound;
  }

 private:
  // The integer product this call takes (kNone: the float paths).
  XQuant integer_path(const LinearGeometry& g) const {
    if (!g.lowp || g.wtype != WeightType::kInt8) return XQuant::kNone;
    if (x_quant_ == XQuant::kInt8 && int8_dynamic_applies(g.K)) return XQuant::kInt8;
    if (x_quant_ == XQuant::kInt16 && g.M <= kSmallMMaxRows && int8_w16_applies(g.K)) return XQuant::kInt16;
    return XQuant::kNone;
  }
  // float32 X, W an initializer (float32, or int8 with its scales an initializer too and x_quant "none":
  // dequantized, then packed as float32), more rows than the small-M kernel takes: try oneDNN (which may
  // still decline, leaving the gemm path).
  bool onednn_candidate(const Tensor& x, const LinearGeometry& g) const {
    const bool int8_w = g.lowp && g.wtype == WeightType::kInt8 && x_quant_ == XQuant::kNone;
    return w_is_initializer_ && x.dtype() == DType::kFloat32 && (!g.lowp || int8_w) && g.M > kSmallMMaxRows;
  }

  FusedActivation act_;
  bool w_is_initializer_ = false;
  XQuant x_quant_ = XQuant::kNone;  // x_quant "none", "int16", "dynamic"
};

const backend::KernelRegistrar kLinear({"Linear", "sdx", 1, backend::kAnyOpset,
                                        backend::kernel_factory<LinearKernel>()});

}  // namespace
}  // namespace sdx::cpu
