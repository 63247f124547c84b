// sdx.Linear(X [..., K], W [K, N], B [N]?) -> act(X W + B), the op LinearFusionOptimizations makes
// of MatMul + Add(bias) [+ activation] (schema: src/ir/schemas/fused.cc).
//
// X is read as one [M, K] matrix (M = the product of its leading dims), computed in blocks of
// rows: each block's gemm is followed by the bias add and the activation in one pass over the
// block while it is still in cache (the epilogue; Relu, LeakyRelu and Clip on vectors, see
// epilogue_row in activation.h), instead of two more passes over the output. Each element goes
// through the operations of the unfused MatMul -> Add -> activation: the gemm computes every row
// independently of M, and 16-bit floats are rounded to the storage type after each step as the
// separate kernels do. So the result equals the unfused one bit for bit.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/cpu/activation.h"
#include "backend/cpu/bound_util.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

struct LinearGeometry {
  int64_t M = 0, N = 0, K = 0;
  Shape out_shape;
};

// bias: input B or null.
Result<LinearGeometry> linear_geometry(const Tensor& x, const Tensor& w, const Tensor* bias) {
  if (x.rank() < 1) return invalid_argument("sdx.Linear input X must have rank >= 1");
  if (w.rank() != 2) return invalid_argument("sdx.Linear weight W must be 2-D, got " + w.shape().to_string());
  if (w.dtype() != x.dtype()) return invalid_argument("sdx.Linear weight W must have the element type of X");
  LinearGeometry g;
  g.K = x.shape()[x.rank() - 1];
  g.N = w.shape()[1];
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

// Scratch of one product: float copies of 16-bit inputs and output, and the gemm workspace.
template <typename T>
struct LinearScratch {
  using C = compute_t<T>;
  static constexpr bool kHalf = !std::is_same_v<T, C>;
  LinearScratch(const LinearGeometry& g, int64_t x_numel, int64_t w_numel)
      : x(kHalf ? static_cast<size_t>(x_numel) : 0),
        w(kHalf ? static_cast<size_t>(w_numel) : 0),
        y(kHalf ? static_cast<size_t>(g.M * g.N) : 0),
        ws(static_cast<size_t>(gemm_workspace_size(g.N, g.K))) {}
  ScratchBuffer<C> x, w, y, ws;
};

template <typename T>
const compute_t<T>* widened(const T* p, int64_t n, compute_t<T>* copy) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    (void)n;
    (void)copy;
    return p;
  } else {
    for (int64_t i = 0; i < n; ++i) copy[i] = to_f32(p[i]);
    return copy;
  }
}

// Output elements per row block: the epilogue runs on each block right after its gemm, while
// the block is still in cache (256 KB of floats).
constexpr int64_t kBlockElements = int64_t{1} << 16;

// y = act(x w + b), block of rows by block of rows. The epilogue replays the unfused kernels'
// roundings: MatMul stores its result as T, Add computes in C and stores T, the activation
// computes in C and stores T.
template <typename T>
void linear(const LinearGeometry& g, const FusedActivation& act, const T* px, int64_t x_numel, const T* pw,
            int64_t w_numel, const T* pb, T* py, LinearScratch<T>& s) {
  using C = compute_t<T>;
  constexpr bool kHalf = LinearScratch<T>::kHalf;
  const int64_t M = g.M, N = g.N, K = g.K;
  if (M * N == 0) return;
  const C* x = widened(px, x_numel, s.x.data());
  const C* w = widened(pw, w_numel, s.w.data());
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
      if constexpr (!kHalf) {
        T* y = py + r0 * N;
        if (pb) {
          for (int64_t i = 0; i < rows; ++i) epilogue_row(f, y + i * N, pb, N);
        } else if (!kIdentity) {
          epilogue_row(f, y, static_cast<const T*>(nullptr), rows * N);
        }
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

class LinearKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(act_, FusedActivation::from_node(node), "sdx.Linear");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    SDX_ASSIGN_OR_RETURN(LinearGeometry g, linear_geometry(x, w, b), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), g.out_shape), "");
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          LinearScratch<T> s(g, x.numel(), w.numel());
          linear<T>(g, act_, x.data<T>(), x.numel(), w.data<T>(), w.numel(), b ? b->data<T>() : nullptr, y.data<T>(),
                    s);
          return Status::ok();
        },
        "sdx.Linear");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Result<LinearGeometry> g = linear_geometry(x, w, b);
    if (!g.is_ok() || !output_matches(ctx, 0, x.dtype(), g.value().out_shape)) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          auto s = std::make_unique<LinearScratch<T>>(g.value(), x.numel(), w.numel());
          bound = backend::bind_call([g = g.value(), act = act_, px = x.data<T>(), nx = x.numel(), pw = w.data<T>(),
                                      nw = w.numel(), pb = b ? b->data<T>() : nullptr,
                                      py = ctx.output(0).template data<T>(), s = std::move(s)] {
            linear<T>(g, act, px, nx, pw, nw, pb, py, *s);
            return Status::ok();
          });
          return Status::ok();
        },
        "sdx.Linear");
    return bound;
  }

 private:
  FusedActivation act_;
};

const backend::KernelRegistrar kLinear({"Linear", "sdx", 1, backend::kAnyOpset,
                                        backend::kernel_factory<LinearKernel>()});

}  // namespace
}  // namespace sdx::cpu
