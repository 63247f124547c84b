// com.microsoft.MatMulIntegerToFloat (ONNX Runtime's contrib op):
//   Y[..., M, N] = float(sum_k (A[m, k] - a_zp) * (B[k, n] - b_zp[n])) * fl(a_scale * b_scale[n]) + bias[n]
// A uint8/int8 [..., K] (its leading dims are rows: B is 2-D [K, N]; a batched B is refused by name),
// B uint8/int8, a_scale and a_zero_point one value each, b_scale and b_zero_point one value or one per
// column, bias [N]. The sum is exact (int32 while K * 255 * 255 fits, else int64), rounded once to float,
// multiplied by the scale product, then the bias is added: the same bits on every path.
//
// Paths:
// - oneDNN (A uint8, B int8 with zero points 0, products of at least OneDnnMatMul::kMinMacs, a CPU with
//   VNNI): its u8 x s8 brgemm kernel on B packed once (the bound call; per call for run()), rows split over
//   the pool (backend/cpu/onednn/onednn_matmul.h); bias added after, per row piece.
// - Otherwise a portable loop: B - b_zp widened to int16 once (per call for run()), each row of A
//   accumulated in int32 (or int64) over blocks of 64 columns by vectorizable multiply-adds, rows split
//   over the pool.
// Both give exactly float(acc) * scale[n] (+ bias[n]): tests compare them bit for bit.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/onednn/onednn_matmul.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"
#include "core/tensor_values.h"

namespace sdx::cpu {
namespace {

bool is_8bit(DType t) { return t == DType::kUint8 || t == DType::kInt8; }

int32_t value_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kUint8 ? t.data<uint8_t>()[i] : t.data<int8_t>()[i];
}

// Everything a call needs besides the data pointers of A, Y: the geometry, per-column scale products and
// zero points, and B - b_zp as int16 [K, N] (the portable path) or packed by oneDNN.
struct Plan {
  int64_t M = 0, K = 0, N = 0;
  Shape out;
  int32_t a_zp = 0;
  std::vector<float> scale;   // fl(a_scale * b_scale[n])
  std::vector<int32_t> b_zp;  // N values
  bool a_u8 = true;
  std::vector<int16_t> b16;   // portable path
  std::unique_ptr<OneDnnMatMul> mm;
};

// Ctx: backend::KernelContext (run) or backend::PrepareContext (the bound call, whose packed B a bundle
// keeps: `packed`).
template <typename Ctx>
Result<Plan> make_plan(const Ctx& ctx, const backend::PackedWeightsRef& packed = {}) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& as = ctx.input(2);
  const Tensor& bs = ctx.input(3);
  if (!is_8bit(a.dtype()) || !is_8bit(b.dtype()))
    return invalid_argument(std::string("A and B must be uint8 or int8, got ") + dtype_name(a.dtype()) + " and " +
                            dtype_name(b.dtype()));
  if (a.rank() < 1) return invalid_argument("A must have rank >= 1");
  if (b.rank() != 2)
    return unimplemented("B of shape " + b.shape().to_string() + ": sdx takes a 2-D B [K, N] (no batched B)");
  if (as.dtype() != DType::kFloat32 || bs.dtype() != DType::kFloat32)
    return invalid_argument("a_scale and b_scale must be float32");
  Plan p;
  p.K = a.shape()[a.rank() - 1];
  p.N = b.shape()[1];
  if (b.shape()[0] != p.K)
    return invalid_argument("inner dimensions differ: A " + a.shape().to_string() + ", B " + b.shape().to_string());
  p.M = a.shape().size_between(0, a.rank() - 1);
  std::vector<int64_t> out = a.shape().dims();
  out.back() = p.N;
  p.out = Shape(out);
  if (as.numel() != 1) return invalid_argument("a_scale must hold one value, has shape " + as.shape().to_string());
  if (bs.numel() != 1 && bs.numel() != p.N)
    return invalid_argument("b_scale must hold one value or one per column (" + std::to_string(p.N) + "), has shape " +
                            bs.shape().to_string());
  const Tensor* az = ctx.num_inputs() > 4 && ctx.has_input(4) ? &ctx.input(4) : nullptr;
  const Tensor* bz = ctx.num_inputs() > 5 && ctx.has_input(5) ? &ctx.input(5) : nullptr;
  const Tensor* bias = ctx.num_inputs() > 6 && ctx.has_input(6) ? &ctx.input(6) : nullptr;
  if (az && (az->numel() != 1 || az->dtype() != a.dtype()))
    return invalid_argument("a_zero_point must be one value of A's type, got " + std::string(dtype_name(az->dtype())) +
                            " " + az->shape().to_string());
  if (bz && ((bz->numel() != 1 && bz->numel() != p.N) || bz->dtype() != b.dtype()))
    return invalid_argument("b_zero_point must be one value or one per column of B's type, got " +
                            std::string(dtype_name(bz->dtype())) + " " + bz->shape().to_string());
  if (bias && (bias->dtype() != DType::kFloat32 || bias->rank() != 1 || bias->shape()[0] != p.N))
    return invalid_argument("bias must be float32 [" + std::to_string(p.N) + "], got " + bias->shape().to_string());
  p.a_u8 = a.dtype() == DType::kUint8;
  p.a_zp = az ? value_at(*az, 0) : 0;
  p.scale.resize(static_cast<size_t>(p.N));
  p.b_zp.resize(static_cast<size_t>(p.N));
  bool b_zp_zero = true;
  for (int64_t n = 0; n < p.N; ++n) {
    p.scale[static_cast<size_t>(n)] = as.data<float>()[0] * bs.data<float>()[bs.numel() == 1 ? 0 : n];
    p.b_zp[static_cast<size_t>(n)] = bz ? value_at(*bz, bz->numel() == 1 ? 0 : n) : 0;
    b_zp_zero = b_zp_zero && p.b_zp[static_cast<size_t>(n)] == 0;
  }
  // oneDNN's u8 x s8 sums are exact in int32 while K * 255 * 128 < 2^31.
  if (p.a_u8 && b.dtype() == DType::kInt8 && b_zp_zero && p.K <= (int64_t{1} << 16)) {
    p.mm = OneDnnMatMul::make_u8s8(p.M, p.K, p.N, p.a_zp, p.scale.data());
    if (p.mm) {
      SDX_RETURN_IF_ERROR(p.mm->pack_weights(b.data<int8_t>(), packed), "MatMulIntegerToFloat");
      return p;
    }
  }
  p.b16.resize(static_cast<size_t>(p.K * p.N));
  for (int64_t k = 0; k < p.K; ++k)
    for (int64_t n = 0; n < p.N; ++n)
      p.b16[static_cast<size_t>(k * p.N + n)] = static_cast<int16_t>(value_at(b, k * p.N + n) - p.b_zp[static_cast<size_t>(n)]);
  return p;
}

// Rows [m0, m1) on the portable path: exact sums over blocks of 64 columns kept on the stack (no
// allocation per call), then float(acc) * scale (+ bias).
template <typename Acc, typename A>
void portable_rows(const Plan& p, const A* a, const float* bias, float* y, int64_t m0, int64_t m1) {
  constexpr int64_t kCols = 64;
  Acc acc[kCols];
  for (int64_t m = m0; m < m1; ++m) {
    for (int64_t n0 = 0; n0 < p.N; n0 += kCols) {
      const int64_t cols = std::min(kCols, p.N - n0);
      std::fill(acc, acc + cols, Acc(0));
      for (int64_t k = 0; k < p.K; ++k) {
        const Acc av = static_cast<Acc>(a[m * p.K + k]) - p.a_zp;
        const int16_t* br = p.b16.data() + k * p.N + n0;
        for (int64_t j = 0; j < cols; ++j) acc[j] += av * static_cast<Acc>(br[j]);
      }
      float* yr = y + m * p.N + n0;
      for (int64_t j = 0; j < cols; ++j) {
        yr[j] = static_cast<float>(acc[j]) * p.scale[static_cast<size_t>(n0 + j)];
        if (bias) yr[j] += bias[n0 + j];
      }
    }
  }
}

Status run_plan(const Plan& p, const void* a, const float* bias, float* y) {
  if (p.M * p.N == 0) return Status::ok();
  if (p.mm) {
    SDX_RETURN_IF_ERROR(p.mm->run(static_cast<const uint8_t*>(a), y), "MatMulIntegerToFloat");
    if (bias)
      parallel_for(p.M, std::max<int64_t>(1, 4096 / p.N), [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m)
          for (int64_t n = 0; n < p.N; ++n) y[m * p.N + n] += bias[n];
      });
    return Status::ok();
  }
  // |acc| <= K * 255 * 255 fits int32 up to K = 33025.
  const bool wide = p.K > 33025;
  parallel_for(p.M, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, p.K * p.N)), [&](int64_t m0, int64_t m1) {
    if (p.a_u8)
      wide ? portable_rows<int64_t>(p, static_cast<const uint8_t*>(a), bias, y, m0, m1)
           : portable_rows<int32_t>(p, static_cast<const uint8_t*>(a), bias, y, m0, m1);
    else
      wide ? portable_rows<int64_t>(p, static_cast<const int8_t*>(a), bias, y, m0, m1)
           : portable_rows<int32_t>(p, static_cast<const int8_t*>(a), bias, y, m0, m1);
  });
  return Status::ok();
}

class MatMulIntegerToFloatKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    SDX_ASSIGN_OR_RETURN(Plan p, make_plan(ctx), "MatMulIntegerToFloat");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kFloat32, p.out), "MatMulIntegerToFloat");
    const float* bias = ctx.num_inputs() > 6 && ctx.has_input(6) ? ctx.input(6).data<float>() : nullptr;
    return run_plan(p, ctx.input(0).raw_data(), bias, y.data<float>());
  }

  // Bound when everything but A is constant: B packed (or widened) and the scales fixed now.
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 4 || !ctx.has_input(0)) return no_bound_form();
    for (int i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && !ctx.input_is_constant(i)) return no_bound_form();
    Result<Plan> p = make_plan(ctx, {ctx.packed_weights(), ctx.packed_key_prefix()});
    if (!p.is_ok() || !output_matches(ctx, 0, DType::kFloat32, p.value().out)) return no_bound_form();
    auto plan = std::make_shared<Plan>(std::move(p).value());
    return backend::bind_call([plan, a = ctx.input(0).raw_data(),
                               bias = ctx.num_inputs() > 6 && ctx.has_input(6) ? ctx.input(6).data<float>() : nullptr,
                               y = ctx.output(0).data<float>()] { return run_plan(*plan, a, bias, y); });
  }
};

const backend::KernelRegistrar kMatMulIntegerToFloat({"MatMulIntegerToFloat", "com.microsoft", 1, backend::kAnyOpset,
                                                      backend::kernel_factory<MatMulIntegerToFloatKernel>()});

}  // namespace
}  // namespace sdx::cpu
