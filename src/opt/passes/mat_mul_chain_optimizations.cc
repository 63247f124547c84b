// MatMulChainOptimizations (pass 17): two projections by constant matrices in a row become one.
//   MatMul(MatMul(x, W1[K, N1]), W2[N1, N2])  -> MatMul(x, W[K, N2]),  W = W1 · W2 computed here
// when W1 and W2 are 2-D float32/float64 constants, the inner product is read only by the outer
// MatMul (and is not a graph output), and the fold pays:
//     K·N2 < K·N1 + N1·N2
// Both sides count multiply-adds per row of x (and equally the weight elements stored), so the rule
// folds exactly when the single product is cheaper than the chain and keeps low-rank factorizations
// (N1 much smaller than K and N2, as in LoRA adapters) as they are. W1 · W2 is accumulated in double
// and rounded once; the result differs from the chain by reassociation only (a few ulps relative to
// the row sums), so tests compare with a tolerance. Products of more than kMaxFoldMacs multiply-adds
// are not computed at load time; weights holding NaN or Inf are left alone.
// Order: before QuantizationOptimizations (2300), whose fp16 pre-cast hides the constant weights.
#include <cmath>

#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr int64_t kMaxFoldMacs = int64_t{1} << 28;

// NaN or Inf in a weight makes the result depend on the association order beyond rounding
// (0 * Inf in one order, none in the other).
template <typename T>
bool all_finite(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

template <typename T>
Tensor multiply(const Tensor& a, const Tensor& b, int64_t k, int64_t n1, int64_t n2) {
  std::vector<double> acc(static_cast<size_t>(k * n2), 0.0);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  for (int64_t i = 0; i < k; ++i) {
    double* row = acc.data() + i * n2;
    for (int64_t j = 0; j < n1; ++j) {
      const double aij = static_cast<double>(pa[i * n1 + j]);
      const T* brow = pb + j * n2;
      for (int64_t c = 0; c < n2; ++c) row[c] += aij * static_cast<double>(brow[c]);
    }
  }
  Tensor out = Tensor::allocate(a.dtype(), Shape({k, n2})).value();
  for (size_t i = 0; i < acc.size(); ++i) out.data<T>()[i] = static_cast<T>(acc[i]);
  return out;
}

bool fold_chain(ir::Graph& g, ir::Node& outer, PassContext& ctx) {
  ir::Node* inner = producer_of(outer.input(0), "MatMul");
  if (!inner || !has_single_use(g, inner->output(0))) return false;
  const Tensor* w1 = constant_value(inner->input(1));
  const Tensor* w2 = constant_value(outer.input(1));
  if (!w1 || !w2 || w1->rank() != 2 || w2->rank() != 2 || w1->dtype() != w2->dtype()) return false;
  if (w1->dtype() != DType::kFloat32 && w1->dtype() != DType::kFloat64) return false;
  const int64_t k = w1->shape()[0], n1 = w1->shape()[1], n2 = w2->shape()[1];
  if (w2->shape()[0] != n1 || k == 0 || n1 == 0 || n2 == 0) return false;
  // Integer overflow is impossible for dims of real tensors below 2^20; larger ones are never folded.
  if (k > (1 << 20) || n1 > (1 << 20) || n2 > (1 << 20)) return false;
  if (!(k * n2 < k * n1 + n1 * n2)) return false;
  if (k * n1 > kMaxFoldMacs / n2) return false;
  const bool f32 = w1->dtype() == DType::kFloat32;
  if (f32 ? !all_finite<float>(*w1) || !all_finite<float>(*w2) : !all_finite<double>(*w1) || !all_finite<double>(*w2))
    return false;
  Tensor w = f32 ? multiply<float>(*w1, *w2, k, n1, n2) : multiply<double>(*w1, *w2, k, n1, n2);
  if (f32 ? !all_finite<float>(w) : !all_finite<double>(w)) return false;  // overflowed
  ir::Value* folded = g.add_constant(outer.name().empty() ? "matmul_chain_w" : outer.name() + "_w", std::move(w));
  ir::Value* x = inner->input(0);
  ctx.applied(outer, "MatMul(MatMul(x, W1[" + std::to_string(k) + "x" + std::to_string(n1) + "]), W2[" +
                         std::to_string(n1) + "x" + std::to_string(n2) + "]) -> MatMul(x, W1*W2)");
  fuse(g, {inner, &outer}, &outer, "MatMul", "", 0, {x, folded}, {});
  return true;
}

class MatMulChainOptimizations final : public PatternPass {
 public:
  MatMulChainOptimizations() { add_rule({"MatMul(MatMul(x, W1), W2) -> MatMul(x, W1*W2)", {"MatMul"}, fold_chain}); }
  const char* name() const override { return "MatMulChainOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fold_matmul_chains", [] { return std::make_unique<MatMulChainOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
