// sdx.Linear against the unfused MatMul -> Add -> activation: bitwise for every activation and
// float type (float32 up to the BLAS's summation order, which depends on the GEMM's shape: sdx.Linear
// multiplies [B*S, K] at once where MatMul does B products); its bound form; and a timing print (not
// an assertion) against the unfused ops.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "fused_test_util.h"

namespace sdx::test {
namespace {

NodeSpec linear(std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs) {
  return NodeSpec{.op = "Linear", .domain = "sdx", .opset = 1, .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

TEST(FusedLinear, MatchesMatMulAddActivationBitwise) {
  for (DType dt : float_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 3, 37}, 1), w = random_tensor(dt, {37, 19}, 2, -0.5f, 0.5f);
    const Tensor b = random_tensor(dt, {19}, 3);
    const Tensor mm = must_run("MatMul", {x, w});
    const Tensor with_bias = must_run("Add", {mm, b});
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + a.name);
      auto fused = run_single(linear({x, w, b}, a.fused_attrs()));
      ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
      EXPECT_TRUE(same_up_to_gemm_order(*fused, apply_activation(a, with_bias)));
      if (a.name == "none") continue;
      auto no_bias = run_single(linear({x, w}, a.fused_attrs()));
      ASSERT_TRUE(no_bias.is_ok()) << no_bias.status().to_string();
      EXPECT_TRUE(same_up_to_gemm_order(*no_bias, apply_activation(a, mm)));
    }
  }
}

TEST(FusedLinear, RankOneAndLargeShapes) {
  // Rank-1 X ([K] -> [N]) and a product past the gemm's panel sizes (K > 256, N > 512).
  const Tensor x1 = random_tensor(DType::kFloat32, {7}, 4), w1 = random_tensor(DType::kFloat32, {7, 5}, 5);
  const Tensor b1 = random_tensor(DType::kFloat32, {5}, 6);
  auto y1 = run_single(linear({x1, w1, b1}, {attr_s("activation", "relu")}));
  ASSERT_TRUE(y1.is_ok()) << y1.status().to_string();
  EXPECT_TRUE(same_up_to_gemm_order(*y1, must_run("Relu", {must_run("Add", {must_run("MatMul", {x1, w1}), b1})})));

  const Tensor x = random_tensor(DType::kFloat32, {3, 5, 300}, 7), w = random_tensor(DType::kFloat32, {300, 530}, 8);
  const Tensor b = random_tensor(DType::kFloat32, {530}, 9);
  auto y = run_single(linear({x, w, b}, {attr_s("activation", "gelu")}));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // K = 300 sums of terms of size ~1 (sums of size ~17): a different summation order (the fused and
  // unfused products may take different GEMM kernels) moves a sum by ~1e-5, whatever the sum's value.
  EXPECT_TRUE(same_up_to_gemm_order(*y, must_run("Gelu", {must_run("Add", {must_run("MatMul", {x, w}), b})}, {}, 20),
                                    1e-5, 3e-5));
}

TEST(FusedLinear, BoundFormReplaysBitwise) {
  for (DType dt : float_dtypes()) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = random_tensor(dt, {4, 9}, 10), w = random_tensor(dt, {9, 6}, 11), b = random_tensor(dt, {6}, 12);
    expect_bound_matches(linear({x, w, b}, {attr_s("activation", "silu")}), {1, 2});
    expect_bound_matches(linear({x, w}, {attr_s("activation", "tanh")}), {1});
    expect_bound_matches(linear({x, w, b}, {}), {1, 2});
  }
}

TEST(FusedLinear, BadInputsAndAttributesAreErrors) {
  const Tensor x = random_tensor(DType::kFloat32, {2, 4}, 13), w = random_tensor(DType::kFloat32, {4, 3}, 14);
  EXPECT_FALSE(run_single(linear({x, random_tensor(DType::kFloat32, {5, 3}, 15)}, {})).is_ok());     // K differs
  EXPECT_FALSE(run_single(linear({x, random_tensor(DType::kFloat32, {1, 4, 3}, 15)}, {})).is_ok());  // W not 2-D
  EXPECT_FALSE(run_single(linear({x, w, random_tensor(DType::kFloat32, {1, 3}, 16)}, {})).is_ok());  // B not [N]
  EXPECT_FALSE(run_single(linear({x, w}, {attr_s("activation", "swoosh")})).is_ok());
  EXPECT_FALSE(run_single(linear({x, w}, {attr_s("activation", "clip")})).is_ok());  // needs [min, max]
}

// A kernel's bound form over fixed buffers (what a captured plan replays), for timing.
struct BoundCall {
  KernelUnderTest k;
  std::vector<Tensor> inputs, outputs;
  std::vector<bool> constant;
  std::unique_ptr<backend::BoundKernel> bound;
};
std::unique_ptr<BoundCall> bind_kernel(const NodeSpec& spec, std::vector<Tensor> outputs) {
  auto c = std::make_unique<BoundCall>();
  c->k = make_kernel(spec);
  c->inputs = spec.inputs;
  c->outputs = std::move(outputs);
  c->constant.assign(c->inputs.size(), true);
  c->constant[0] = false;
  if (!c->k.kernel) return c;
  auto p = c->k.kernel->prepare(TestPrepareContext(*c->k.node, c->inputs, c->constant, c->outputs));
  EXPECT_TRUE(p.is_ok() && p.value()) << spec.op << " has no bound form";
  if (p.is_ok()) c->bound = std::move(p).value();
  return c;
}

// Best-of-n milliseconds of fn().
template <typename F>
double best_ms(F fn, int n = 15) {
  double best = 1e30;
  for (int r = 0; r < n; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

TEST(FusedLinear, TimingAgainstUnfusedOps) {
  // Transformer MLP projections X [batch, seq, K] x W [K, N] + b, then an activation: the bound
  // MatMul, Add and activation kernels (three passes over the output, W packed once per batch
  // matrix) against the bound sdx.Linear. A report, not an assertion: timings on a shared
  // machine vary.
  struct Case {
    std::vector<int64_t> x_dims;
    int64_t n;
    ActivationCase act;
  };
  const std::vector<ActivationCase> acts = all_activations();
  for (const Case& c :
       {Case{{8, 64, 256}, 1024, acts[5]}, Case{{16, 256, 32}, 256, acts[1]}, Case{{64, 128}, 512, acts[11]}}) {
    const int64_t k = c.x_dims.back();
    const Tensor x = random_tensor(DType::kFloat32, c.x_dims, 17), w = random_tensor(DType::kFloat32, {k, c.n}, 18);
    const Tensor b = random_tensor(DType::kFloat32, {c.n}, 19);
    std::vector<int64_t> y_dims = c.x_dims;
    y_dims.back() = c.n;
    auto buf = [&] { return fresh_tensor(DType::kFloat32, Shape(y_dims), 0); };
    const Tensor mm_out = buf(), add_out = buf(), act_out = buf(), fused_out = buf();
    auto mm = bind_kernel({.op = "MatMul", .inputs = {x, w}}, {mm_out});
    auto add = bind_kernel({.op = "Add", .inputs = {mm_out, b}}, {add_out});
    std::vector<Tensor> act_in = {add_out};
    if (c.act.clip_inputs) {
      act_in.push_back(scalar_of(DType::kFloat32, c.act.params[0]));
      act_in.push_back(scalar_of(DType::kFloat32, c.act.params[1]));
    }
    auto act = bind_kernel({.op = c.act.onnx_op, .opset = c.act.opset, .inputs = act_in, .attrs = c.act.onnx_attrs},
                           {act_out});
    auto fused = bind_kernel(linear({x, w, b}, c.act.fused_attrs()), {fused_out});
    ASSERT_TRUE(mm->bound && add->bound && act->bound && fused->bound);
    const double unfused_ms = best_ms([&] {
      (void)mm->bound->run();
      (void)add->bound->run();
      (void)act->bound->run();
    });
    const double fused_ms = best_ms([&] { (void)fused->bound->run(); });
    EXPECT_TRUE(same_bits(fused_out, act_out));
    std::printf("[ timing ] MatMul+Add+%s %s x [%lld,%lld]: unfused %.2f ms, sdx.Linear %.2f ms\n",
                c.act.onnx_op.c_str(), Shape(c.x_dims).to_string().c_str(), static_cast<long long>(k),
                static_cast<long long>(c.n), unfused_ms, fused_ms);
  }
}

}  // namespace
}  // namespace sdx::test
