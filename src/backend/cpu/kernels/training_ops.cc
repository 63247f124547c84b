// Optimizers of the ai.onnx.preview.training domain: Adagrad, Adam, Momentum
// (standard and Nesterov). Inputs are R (scalar learning rate), T (scalar int64
// update count), then n tensors X, n gradients G and the per-tensor states
// (Adagrad: H; Adam: V, H; Momentum: V), each group laid out contiguously.
// Outputs are the n updated X followed by the updated states, group by group.
// Arithmetic runs in double; results are stored in the tensors' element type.
#include <cmath>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

Result<double> read_real_scalar(const Tensor& t, const char* what) {
  if (t.numel() != 1) return invalid_argument(std::string(what) + " must hold exactly one value, got shape " + t.type_string());
  if (t.dtype() == DType::kFloat32) return static_cast<double>(t.data<float>()[0]);
  if (t.dtype() == DType::kFloat64) return t.data<double>()[0];
  return invalid_argument(std::string(what) + " must be float or double, got " + t.type_string());
}

Result<int64_t> read_count_scalar(const Tensor& t) {
  if (t.numel() != 1) return invalid_argument("T must hold exactly one value, got " + t.type_string());
  if (t.dtype() != DType::kInt64) return invalid_argument("T must be int64, got " + t.type_string());
  return t.data<int64_t>()[0];
}

// One element's update: reads x, g and the old states, writes new x and states.
// Rule::prepare(r, t) returns per-run coefficients; Rule::update applies them.
struct AdagradRule {
  static constexpr int kStates = 1;
  static constexpr const char* kName = "Adagrad";
  double norm = 0, decay = 0, eps = 1e-6;
  Status init(const ir::Node& node) {
    norm = node.attr_float("norm_coefficient", 0.f);
    decay = node.attr_float("decay_factor", 0.f);
    eps = node.attr_float("epsilon", 1e-6f);
    return Status::ok();
  }
  struct Coeffs { double r; };
  Coeffs prepare(double r, int64_t t) const { return {r / (1.0 + static_cast<double>(t) * decay)}; }
  void update(const Coeffs& c, double x, double g, const double* s, double& x_new, double* s_new) const {
    const double gr = norm * x + g;
    const double h = s[0] + gr * gr;
    s_new[0] = h;
    x_new = x - c.r * gr / (std::sqrt(h) + eps);
  }
};

struct AdamRule {
  static constexpr int kStates = 2;
  static constexpr const char* kName = "Adam";
  double alpha = 0.9, beta = 0.999, eps = 1e-6, norm = 0, norm_post = 0;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", 0.9f);
    beta = node.attr_float("beta", 0.999f);
    eps = node.attr_float("epsilon", 1e-6f);
    norm = node.attr_float("norm_coefficient", 0.f);
    norm_post = node.attr_float("norm_coefficient_post", 0.f);
    return Status::ok();
  }
  struct Coeffs { double r; };
  Coeffs prepare(double r, int64_t t) const {
    if (t <= 0) return {r};  // no bias correction before the first update
    const double td = static_cast<double>(t);
    return {r * std::sqrt(1.0 - std::pow(beta, td)) / (1.0 - std::pow(alpha, td))};
  }
  void update(const Coeffs& c, double x, double g, const double* s, double& x_new, double* s_new) const {
    const double gr = norm * x + g;
    const double v = alpha * s[0] + (1.0 - alpha) * gr;
    const double h = beta * s[1] + (1.0 - beta) * gr * gr;
    s_new[0] = v;
    s_new[1] = h;
    x_new = (1.0 - norm_post) * (x - c.r * (v / (std::sqrt(h) + eps)));
  }
};

struct MomentumRule {
  static constexpr int kStates = 1;
  static constexpr const char* kName = "Momentum";
  double alpha = 0, beta = 0, norm = 0;
  bool nesterov = false;
  Status init(const ir::Node& node) {
    for (const char* name : {"alpha", "beta", "norm_coefficient", "mode"})
      if (!node.attr(name)) return invalid_argument(std::string("Momentum requires attribute '") + name + "'");
    alpha = node.attr_float("alpha", 0.f);
    beta = node.attr_float("beta", 0.f);
    norm = node.attr_float("norm_coefficient", 0.f);
    const std::string mode = node.attr_string("mode", "standard");
    if (mode != "standard" && mode != "nesterov")
      return invalid_argument("Momentum mode must be 'standard' or 'nesterov', got '" + mode + "'");
    nesterov = mode == "nesterov";
    return Status::ok();
  }
  struct Coeffs { double r, beta; };
  // The gradient's coefficient is 1 at the first iteration.
  Coeffs prepare(double r, int64_t t) const { return {r, t > 0 ? beta : 1.0}; }
  void update(const Coeffs& c, double x, double g, const double* s, double& x_new, double* s_new) const {
    const double gr = norm * x + g;
    const double v = alpha * s[0] + c.beta * gr;
    s_new[0] = v;
    x_new = nesterov ? x - c.r * (gr + alpha * v) : x - c.r * v;
  }
};

template <typename Rule>
class OptimizerKernel final : public backend::Kernel {
 public:
  static constexpr int kGroup = 2 + Rule::kStates;  // X, G, states

  Status init(const ir::Node& node) override {
    const int n_in = node.num_inputs() - 2;
    if (n_in <= 0 || n_in % kGroup != 0)
      return invalid_argument(std::string(Rule::kName) + " expects R, T and " + std::to_string(kGroup) +
                              " inputs per optimized tensor, got " + std::to_string(node.num_inputs()) + " inputs");
    const int n = n_in / kGroup;
    if (node.num_outputs() != n * (1 + Rule::kStates))
      return invalid_argument(std::string(Rule::kName) + " with " + std::to_string(n) + " optimized tensor(s) expects " +
                              std::to_string(n * (1 + Rule::kStates)) + " outputs, got " +
                              std::to_string(node.num_outputs()));
    return rule_.init(node);
  }

  Status run(KernelContext& ctx) const override {
    const int n = (ctx.num_inputs() - 2) / kGroup;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (!ctx.has_input(i)) return invalid_argument("input " + std::to_string(i) + " is missing");
    SDX_ASSIGN_OR_RETURN(double r, read_real_scalar(ctx.input(0), "R"), "");
    SDX_ASSIGN_OR_RETURN(int64_t t, read_count_scalar(ctx.input(1)), "");
    const typename Rule::Coeffs coeffs = rule_.prepare(r, t);
    for (int k = 0; k < n; ++k) SDX_RETURN_IF_ERROR(update_one(ctx, n, k, coeffs), "");
    return Status::ok();
  }

 private:
  // Updates tensor k: inputs 2 + j*n + k (j = 0: X, 1: G, 2..: states);
  // outputs j*n + k (j = 0: X_new, 1..: states).
  Status update_one(KernelContext& ctx, int n, int k, const typename Rule::Coeffs& coeffs) const {
    const Tensor& x = ctx.input(2 + k);
    for (int j = 1; j < kGroup; ++j) {
      const Tensor& o = ctx.input(2 + j * n + k);
      if (o.dtype() != x.dtype() || o.shape() != x.shape())
        return invalid_argument("input " + std::to_string(2 + j * n + k) + " (" + o.type_string() +
                                ") must match X of tensor " + std::to_string(k) + " (" + x.type_string() + ")");
    }
    return dispatch<float, double>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* pg = ctx.input(2 + n + k).data<T>();
      const T* ps[Rule::kStates];
      T* out[1 + Rule::kStates];
      for (int j = 0; j < Rule::kStates; ++j) ps[j] = ctx.input(2 + (2 + j) * n + k).data<T>();
      for (int j = 0; j <= Rule::kStates; ++j) {
        SDX_ASSIGN_OR_RETURN(Tensor o, ctx.allocate_output(j * n + k, x.dtype(), x.shape()), "");
        out[j] = o.data<T>();
      }
      double s_in[Rule::kStates], s_out[Rule::kStates];
      for (int64_t e = 0; e < x.numel(); ++e) {
        for (int j = 0; j < Rule::kStates; ++j) s_in[j] = static_cast<double>(ps[j][e]);
        double x_new = 0;
        rule_.update(coeffs, static_cast<double>(px[e]), static_cast<double>(pg[e]), s_in, x_new, s_out);
        out[0][e] = static_cast<T>(x_new);
        for (int j = 0; j < Rule::kStates; ++j) out[1 + j][e] = static_cast<T>(s_out[j]);
      }
      return Status::ok();
    }, Rule::kName);
  }

  Rule rule_;
};

const backend::KernelRegistrar kAdagrad({"Adagrad", kTrainingDomain, 1, backend::kAnyOpset,
                                         backend::kernel_factory<OptimizerKernel<AdagradRule>>()});
const backend::KernelRegistrar kAdam({"Adam", kTrainingDomain, 1, backend::kAnyOpset,
                                      backend::kernel_factory<OptimizerKernel<AdamRule>>()});
const backend::KernelRegistrar kMomentum({"Momentum", kTrainingDomain, 1, backend::kAnyOpset,
                                          backend::kernel_factory<OptimizerKernel<MomentumRule>>()});

}  // namespace
}  // namespace sdx::cpu
