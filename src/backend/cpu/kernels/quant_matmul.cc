// MatMulInteger and QLinearMatMul: int8/uint8 matrix products accumulated in int32
// (numpy matmul broadcasting), with per-tensor, per-row (A) or per-column (B) zero
// points; QLinearMatMul requantizes like onnx's reference.
//
// Paths (the same exact sums): one B for every batch (a 2-D B, the usual weight) and A's batches
// contiguous run as one product of all A rows on integer_gemm (column blocks split over the pool; a
// constant B packed once by the bound form, per call by run()); anything else on the portable loop.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/quant/integer_gemm.h"
#include "backend/cpu/quant/quant_util.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/frozen_step_context.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

struct MatMulPlan {
  Shape out;
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> a_offset, b_offset;  // per output batch, in elements
};

// Offsets of each broadcast batch into a tensor with batch dims `dims` (right-aligned).
std::vector<int64_t> batch_offsets(const std::vector<int64_t>& out_batch, const std::vector<int64_t>& dims,
                                   int64_t matrix) {
  const size_t r = out_batch.size(), pad = r - dims.size();
  int64_t count = 1;
  for (int64_t d : out_batch) count *= d;
  std::vector<int64_t> offs(static_cast<size_t>(count));
  std::vector<int64_t> stride(r, 0);
  int64_t s = matrix;
  for (size_t i = r; i-- > pad;) {
    stride[i] = dims[i - pad] == 1 ? 0 : s;
    s *= dims[i - pad];
  }
  std::vector<int64_t> idx(r, 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t o = 0;
    for (size_t i = 0; i < r; ++i) o += idx[i] * stride[i];
    offs[static_cast<size_t>(b)] = o;
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < out_batch[i]) break;
      idx[i] = 0;
    }
  }
  return offs;
}

Result<MatMulPlan> plan_matmul(const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0) return invalid_argument("matmul inputs must have rank >= 1");
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  MatMulPlan p;
  p.M = ad[ad.size() - 2];
  p.K = ad.back();
  p.N = bd.back();
  if (bd[bd.size() - 2] != p.K)
    return invalid_argument("matmul inner dimensions differ: A " + a.to_string() + ", B " + b.to_string());
  const std::vector<int64_t> abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
  SDX_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(Shape(abatch), Shape(bbatch)), "matmul batch dims");
  std::vector<int64_t> out = batch.dims();
  p.a_offset = batch_offsets(out, abatch, p.M * p.K);
  p.b_offset = batch_offsets(out, bbatch, p.K * p.N);
  if (!a_vec) out.push_back(p.M);
  if (!b_vec) out.push_back(p.N);
  SDX_ASSIGN_OR_RETURN(p.out, Shape::make(out), "matmul output");
  return p;
}

bool is_8bit_int(DType t) { return t == DType::kInt8 || t == DType::kUint8; }

// Zero point (or scale) values expanded to `n` entries: one value, or one per row/column.
template <typename T>
Result<std::vector<T>> per_line(const Tensor* t, int64_t n, const char* what, const char* line) {
  if (!t) return std::vector<T>(static_cast<size_t>(n), T(0));
  std::vector<T> v = load_all_as<T>(*t);
  if (v.size() == 1) return std::vector<T>(static_cast<size_t>(n), v[0]);
  if (t->rank() == 1 && t->numel() == n) return v;
  return invalid_argument(std::string(what) + " of shape " + t->shape().to_string() + " must be a scalar or have one value per " +
                          line + " (" + std::to_string(n) + ")");
}

// The integer-GEMM form of a product whose every batch reads one B and whose A batches follow each other
// (row batch * M + m): B packed, scratch for A's rows. Made per call by run(), once by prepare().
struct PackedMatMul {
  std::unique_ptr<IntegerGemmWeights> w;
  int64_t rows = 0, M = 0, K = 0, N = 0;
  std::vector<char> scratch;

  // c [rows, N] from a; azp: M zero points (row m of every batch).
  void run(const Tensor& a, const std::vector<int32_t>& azp, int32_t* c) {
    const IntegerGemmRows r = integer_gemm_rows(scratch.data(), rows, K);
    const auto* ab = static_cast<const uint8_t*>(a.raw_data());
    for (int64_t i = 0; i < rows; ++i) integer_gemm_load_row(r, i, a.dtype(), ab + i * K, azp[static_cast<size_t>(i % M)]);
    // Column blocks split over the pool (a few rows, many columns: a classifier's weight).
    const IntegerGemmWeights& wr = *w;
    parallel_for(wr.blocks(), 1, [&](int64_t b0, int64_t b1) { integer_gemm(r, 0, rows, wr, c, N, b0, b1); });
  }
};

// Null when the plan does not fit the integer-GEMM form (the portable loop serves it).
std::unique_ptr<PackedMatMul> pack_matmul(const Tensor& b, const std::vector<int32_t>& bzp, const MatMulPlan& p) {
  const int64_t batches = static_cast<int64_t>(p.a_offset.size());
  if (!integer_gemm_applies(p.K) || p.M * p.N == 0) return nullptr;
  for (int64_t bi = 0; bi < batches; ++bi)
    if (p.b_offset[static_cast<size_t>(bi)] != p.b_offset[0] || p.a_offset[static_cast<size_t>(bi)] != bi * p.M * p.K) return nullptr;
  auto pm = std::make_unique<PackedMatMul>();
  pm->w = std::make_unique<IntegerGemmWeights>(b.dtype(), static_cast<const uint8_t*>(b.raw_data()) + p.b_offset[0], p.N, p.K,
                                               p.N, bzp.data());
  pm->rows = batches * p.M;
  pm->M = p.M;
  pm->K = p.K;
  pm->N = p.N;
  pm->scratch.resize(integer_gemm_scratch_bytes(pm->rows, p.K));
  return pm;
}

// C[batch, M, N] = sum_k (A - a_zp[m]) * (B - b_zp[n]) in int32.
std::vector<int32_t> matmul_int32(const Tensor& a, const Tensor& b, const std::vector<int32_t>& azp,
                                  const std::vector<int32_t>& bzp, const MatMulPlan& p) {
  const size_t batches = p.a_offset.size();
  std::vector<int32_t> c(batches * static_cast<size_t>(p.M * p.N), 0);
  if (std::unique_ptr<PackedMatMul> pm = pack_matmul(b, bzp, p)) {
    pm->run(a, azp, c.data());
    return c;
  }
  const std::vector<int32_t> av = load_all_as<int32_t>(a), bv = load_all_as<int32_t>(b);
  for (size_t bi = 0; bi < batches; ++bi) {
    const int32_t* A = av.data() + p.a_offset[bi];
    const int32_t* B = bv.data() + p.b_offset[bi];
    int32_t* C = c.data() + bi * static_cast<size_t>(p.M * p.N);
    for (int64_t m = 0; m < p.M; ++m) {
      int32_t* row = C + m * p.N;
      for (int64_t k = 0; k < p.K; ++k) {
        const int32_t x = A[m * p.K + k] - azp[static_cast<size_t>(m)];
        if (x == 0) continue;
        const int32_t* brow = B + k * p.N;
        for (int64_t n = 0; n < p.N; ++n) row[n] += x * (brow[n] - bzp[static_cast<size_t>(n)]);
      }
    }
  }
  return c;
}

Status check_zero_point(const backend::KernelContext& ctx, int i, const Tensor& data, const char* name) {
  if (!ctx.has_input(i)) return Status::ok();
  if (ctx.input(i).dtype() != data.dtype())
    return invalid_argument(std::string(name) + " type " + dtype_name(ctx.input(i).dtype()) + " differs from its data type " +
                            dtype_name(data.dtype()));
  return Status::ok();
}

const Tensor* optional_input(const backend::KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

class MatMulIntegerKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (!is_8bit_int(a.dtype()) || !is_8bit_int(b.dtype()))
      return invalid_argument(std::string("MatMulInteger needs int8/uint8 inputs, got ") + dtype_name(a.dtype()) + " and " +
                              dtype_name(b.dtype()));
    SDX_RETURN_IF_ERROR(check_zero_point(ctx, 2, a, "a_zero_point"), "MatMulInteger");
    SDX_RETURN_IF_ERROR(check_zero_point(ctx, 3, b, "b_zero_point"), "MatMulInteger");
    SDX_ASSIGN_OR_RETURN(MatMulPlan p, plan_matmul(a.shape(), b.shape()), "MatMulInteger");
    SDX_ASSIGN_OR_RETURN(auto azp, per_line<int32_t>(optional_input(ctx, 2), p.M, "a_zero_point", "row of A"), "");
    SDX_ASSIGN_OR_RETURN(auto bzp, per_line<int32_t>(optional_input(ctx, 3), p.N, "b_zero_point", "column of B"), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt32, p.out), "MatMulInteger output");
    const std::vector<int32_t> c = matmul_int32(a, b, azp, bzp, p);
    std::copy(c.begin(), c.end(), y.data<int32_t>());
    return Status::ok();
  }

  // A constant B (and b_zero_point) in the integer-GEMM form: packed once; each call loads A's rows and
  // a_zero_point (read on every call, it may be computed: DynamicQuantizeLinear's) and runs the product
  // into the frozen output. Declines what run() would refuse or serve on the portable loop.
  Result<std::unique_ptr<backend::BoundKernel>> prepare(const backend::PrepareContext& p) const override {
    using Declined = std::unique_ptr<backend::BoundKernel>;
    if (!p.has_input(0) || !p.has_input(1) || !p.input_is_constant(1) || !p.wants_output(0)) return Declined();
    if (p.has_input(3) && !p.input_is_constant(3)) return Declined();
    const Tensor& a = p.input(0);
    const Tensor& b = p.input(1);
    if (!is_8bit_int(a.dtype()) || !is_8bit_int(b.dtype())) return Declined();
    if (p.has_input(2) && (p.input(2).dtype() != a.dtype() || p.input(2).rank() > 1)) return Declined();
    if (p.has_input(3) && p.input(3).dtype() != b.dtype()) return Declined();
    Result<MatMulPlan> plan = plan_matmul(a.shape(), b.shape());
    if (!plan.is_ok() || p.output(0).dtype() != DType::kInt32 || p.output(0).shape() != plan->out) return Declined();
    const MatMulPlan mp = std::move(plan).value();
    Result<std::vector<int32_t>> bzp = per_line<int32_t>(p.has_input(3) ? &p.input(3) : nullptr, mp.N, "b_zero_point", "column of B");
    if (!bzp.is_ok()) return Declined();
    std::shared_ptr<PackedMatMul> pm = pack_matmul(b, *bzp, mp);
    if (!pm) return Declined();
    struct Bound {
      backend::FrozenStepContext ctx;
      std::shared_ptr<PackedMatMul> pm;
      std::vector<int32_t> azp;
      Shape out;
      explicit Bound(const backend::PrepareContext& p) : ctx(p) {}
    };
    auto bd = std::make_shared<Bound>(p);
    bd->pm = std::move(pm);
    bd->azp.assign(static_cast<size_t>(mp.M), 0);
    bd->out = mp.out;
    return backend::bind_call([bd]() -> Status {
      const backend::FrozenStepContext& c = bd->ctx;
      if (c.has_input(2)) {  // one value or one per row of A, read into the kept vector
        const Tensor& z = c.input(2);
        if (z.numel() != 1 && z.numel() != bd->pm->M)
          return invalid_argument("a_zero_point of shape " + z.shape().to_string() + " must be a scalar or have one value per row of A (" +
                                  std::to_string(bd->pm->M) + ")");
        for (int64_t m = 0; m < bd->pm->M; ++m) {
          const int64_t i = z.numel() == 1 ? 0 : m;
          bd->azp[static_cast<size_t>(m)] = z.dtype() == DType::kUint8 ? int32_t{z.data<uint8_t>()[i]} : int32_t{z.data<int8_t>()[i]};
        }
      }
      SDX_ASSIGN_OR_RETURN(void* y, c.output_data(0, DType::kInt32, bd->out), "MatMulInteger output");
      bd->pm->run(c.input(0), bd->azp, static_cast<int32_t*>(y));
      return Status::ok();
    });
  }
};

bool is_scale_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// Rounds v to the precision of the scale type (numpy computes a_scale * b_scale / y_scale there).
double round_scale(DType t, double v) {
  if (t == DType::kFloat16) return small_float_to_double(float_to_small_float(v, SmallFloat::kF16, false), SmallFloat::kF16);
  if (t == DType::kBFloat16) return BFloat16::from_float(static_cast<float>(v)).to_float();
  return static_cast<float>(v);
}

class QLinearMatMulKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(3);
    if (!is_8bit_int(a.dtype()) || !is_8bit_int(b.dtype()))
      return invalid_argument(std::string("QLinearMatMul needs int8/uint8 inputs, got ") + dtype_name(a.dtype()) + " and " +
                              dtype_name(b.dtype()));
    for (int i : {1, 4, 6})
      if (!is_scale_type(ctx.input(i).dtype()) || ctx.input(i).dtype() != ctx.input(1).dtype())
        return invalid_argument("QLinearMatMul scales must share one floating type; input " + std::to_string(i) + " is " +
                                dtype_name(ctx.input(i).dtype()));
    SDX_RETURN_IF_ERROR(check_zero_point(ctx, 2, a, "a_zero_point"), "QLinearMatMul");
    SDX_RETURN_IF_ERROR(check_zero_point(ctx, 5, b, "b_zero_point"), "QLinearMatMul");
    const DType out_t = ctx.has_input(7) ? ctx.input(7).dtype() : a.dtype();
    if (!is_8bit_int(out_t)) return invalid_argument(std::string("y_zero_point must be int8 or uint8, got ") + dtype_name(out_t));
    SDX_ASSIGN_OR_RETURN(MatMulPlan p, plan_matmul(a.shape(), b.shape()), "QLinearMatMul");
    SDX_ASSIGN_OR_RETURN(auto azp, per_line<int32_t>(optional_input(ctx, 2), p.M, "a_zero_point", "row of A"), "");
    SDX_ASSIGN_OR_RETURN(auto bzp, per_line<int32_t>(optional_input(ctx, 5), p.N, "b_zero_point", "column of B"), "");
    SDX_ASSIGN_OR_RETURN(auto as, per_line<double>(&ctx.input(1), p.M, "a_scale", "row of A"), "");
    SDX_ASSIGN_OR_RETURN(auto bs, per_line<double>(&ctx.input(4), p.N, "b_scale", "column of B"), "");
    const std::vector<double> ys = load_all_as<double>(ctx.input(6));
    if (ys.size() != 1) return invalid_argument("y_scale must hold one value, has shape " + ctx.input(6).shape().to_string());
    if (!(std::isfinite(ys[0]) && ys[0] != 0)) return invalid_argument("y_scale must be finite and non-zero, got " + std::to_string(ys[0]));
    const double yzp = ctx.has_input(7) ? load_all_as<double>(ctx.input(7)).at(0) : 0.0;
    if (ctx.has_input(7) && ctx.input(7).numel() != 1) return invalid_argument("y_zero_point must hold one value");
    const DType st = ctx.input(1).dtype();
    std::vector<double> mult(static_cast<size_t>(p.M * p.N));
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n)
        mult[static_cast<size_t>(m * p.N + n)] =
            round_scale(st, round_scale(st, as[static_cast<size_t>(m)] * bs[static_cast<size_t>(n)]) / ys[0]);
    const std::vector<int32_t> c = matmul_int32(a, b, azp, bzp, p);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, out_t, p.out), "QLinearMatMul output");
    const double lo = out_t == DType::kInt8 ? -128 : 0, hi = out_t == DType::kInt8 ? 127 : 255;
    const size_t mn = static_cast<size_t>(p.M * p.N);
    for (size_t i = 0; i < c.size(); ++i) {
      const double v = std::clamp(std::nearbyint(static_cast<double>(c[i]) * mult[i % mn] + yzp), lo, hi);
      if (out_t == DType::kInt8) y.data<int8_t>()[i] = static_cast<int8_t>(v);
      else y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
    return Status::ok();
  }
};

const backend::KernelRegistrar kMatMulInteger({"MatMulInteger", "", 10, backend::kAnyOpset,
                                               backend::kernel_factory<MatMulIntegerKernel>()});
const backend::KernelRegistrar kQLinearMatMul({"QLinearMatMul", "", 10, backend::kAnyOpset,
                                               backend::kernel_factory<QLinearMatMulKernel>()});

}  // namespace
}  // namespace sdx::cpu
