// sdx.GatedLinearUnit, the op GatedDeltaNetFusionOptimizations makes of a gated linear unit
// (SwiGLU, GEGLU, ReGLU, GLU; schema: src/ir/schemas/fused.cc):
//   two inputs  (A, B):  Y = act(A) * B, A and B broadcast as Mul broadcasts them;
//   one input   (X):     Y = act(X[.., :H, ..]) * X[.., H:, ..] along `axis` (X's dim 2H there),
//                        what Split(X, 2 halves) -> Mul(act(half 0), half 1) computes.
// Each element goes through the unfused ops' arithmetic: the activation computes in the compute
// type and stores T, the product computes in the compute type and stores T (16-bit floats round
// in between as the separate kernels do), so the result equals the unfused one bit for bit while
// the gate tensor act(A) is never written to memory.
#include <cstdint>
#include <memory>
#include <string>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// act(a) * b over storage types, with the unfused roundings.
template <typename T, typename F>
inline T gate(const F& f, T a, T b) {
  const T s = narrow<T>(f(widen(a)));
  return narrow<T>(widen(s) * widen(b));
}

// The one-input form: x viewed as [outer, 2H, inner].
struct SplitGeometry {
  int64_t outer = 1, half = 0, inner = 1;
  Shape out_shape;
};

Result<SplitGeometry> split_geometry(const Shape& x, int64_t axis_attr) {
  if (x.rank() < 1) return invalid_argument("sdx.GatedLinearUnit input must have rank >= 1");
  const int64_t axis = axis_attr < 0 ? axis_attr + x.rank() : axis_attr;
  if (axis < 0 || axis >= x.rank())
    return invalid_argument("sdx.GatedLinearUnit axis " + std::to_string(axis_attr) + " out of range for " +
                            x.to_string());
  const int a = static_cast<int>(axis);
  if (x[a] % 2 != 0)
    return invalid_argument("sdx.GatedLinearUnit: dim " + std::to_string(axis) + " of " + x.to_string() + " is odd");
  SplitGeometry g;
  g.outer = x.size_between(0, a);
  g.half = x[a] / 2;
  g.inner = x.size_between(a + 1, x.rank());
  std::vector<int64_t> out = x.dims();
  out[static_cast<size_t>(a)] = g.half;
  g.out_shape = Shape(out);
  return g;
}

template <typename T, typename F>
void split_gate(const SplitGeometry& g, const F& f, const T* x, T* y) {
  const int64_t block = g.half * g.inner;  // elements of one half of one outer slice
  for (int64_t o = 0; o < g.outer; ++o) {
    const T* a = x + o * 2 * block;
    const T* b = a + block;
    T* out = y + o * block;
    for (int64_t k = 0; k < block; ++k) out[k] = gate<T>(f, a[k], b[k]);
  }
}

class GatedLinearUnitKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(
        act_, FusedActivation::make(node.attr_string("activation", "silu"), node.attr_floats("activation_params")),
        "sdx.GatedLinearUnit");
    axis_ = node.attr_int("axis", -1);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const bool two = ctx.num_inputs() > 1 && ctx.has_input(1);
    if (two) SDX_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1), "sdx.GatedLinearUnit");
    SplitGeometry g;
    if (!two) {
      SDX_ASSIGN_OR_RETURN(g, split_geometry(x.shape(), axis_), "");
    }
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          return act_.visit([&](auto f) -> Status {
            if (two) return run_binary_broadcast<T, T, T>(ctx, x.dtype(), [f](T a, T b) { return gate<T>(f, a, b); });
            SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), g.out_shape), "");
            split_gate<T>(g, f, x.data<T>(), y.data<T>());
            return Status::ok();
          });
        },
        "sdx.GatedLinearUnit");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const bool two = ctx.num_inputs() > 1 && ctx.has_input(1);
    if (two && ctx.input(1).dtype() != x.dtype()) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          act_.visit([&](auto f) {
            if (two) {
              bound = prepare_binary_broadcast<T, T, T>(ctx, x.dtype(), [f](T a, T b) { return gate<T>(f, a, b); });
              return;
            }
            Result<SplitGeometry> g = split_geometry(x.shape(), axis_);
            if (!g.is_ok() || !output_matches(ctx, 0, x.dtype(), g.value().out_shape)) return;
            bound = backend::bind_call([g = g.value(), f, px = x.data<T>(), py = ctx.output(0).template data<T>()] {
              split_gate<T>(g, f, px, py);
              return Status::ok();
            });
          });
          return Status::ok();
        },
        "sdx.GatedLinearUnit");
    return bound;
  }

 private:
  FusedActivation act_;
  int64_t axis_ = -1;
};

const backend::KernelRegistrar kGatedLinearUnit({"GatedLinearUnit", "sdx", 1, backend::kAnyOpset,
                                                 backend::kernel_factory<GatedLinearUnitKernel>()});

}  // namespace
}  // namespace sdx::cpu
