// sdx.Linear and MatMul with an initializer weight on oneDNN (onednn_matmul.h): OneDnnMatMul against
// cpu::gemm (OpenBLAS) with a tolerance, odd sizes (M = 9, 33, 130; K, N not multiples of 16), bias and
// every activation (post-ops and sdx's epilogue); the pieces over a 2-thread pool against one thread,
// bitwise; sdx.Linear against MatMul + Add + activation, bitwise (both on oneDNN); a 1-thread session
// against a 2-thread one, bitwise; the bound forms against run() at 1 and 2 threads, bitwise, with the
// weight constant (packed once) or not; and the cases that stay on gemm (weights fed by the caller,
// M <= 8, small products, batched B, double). Built without oneDNN (or with SDX_NO_ONEDNN=1) the
// kernel-level tests still run (both sides on gemm) and the oneDNN-only ones are skipped.
#include "backend/cpu/onednn/onednn_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/onednn/onednn.h"
#include "backend/cpu/threading/thread_pool.h"
#include "../kernels/fused_test_util.h"
#include "runtime/session.h"

namespace sdx::test {
namespace {

// Routes the kernels to oneDNN (or not) for the scope (never on when SDX_NO_ONEDNN=1); restores the switch after.
class ScopedOneDnn {
 public:
  explicit ScopedOneDnn(bool on) : before_(cpu::onednn_enabled()) { cpu::set_onednn_enabled(on && before_); }
  ~ScopedOneDnn() { cpu::set_onednn_enabled(before_); }

 private:
  bool before_;
};

// |got - want| <= tol * (1 + max |want|) elementwise: the two paths sum in different orders.
::testing::AssertionResult close(const float* got, const float* want, int64_t n, double tol = 2e-6) {
  double scale = 1;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, 1 + std::fabs(double(want[i])));
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tol * scale))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

struct Dims {
  int64_t M, K, N;
  std::string name() const { return std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N); }
};

// Odd sizes with at least OneDnnMatMul::kMinMacs multiply-adds, and the BERT suite's shapes.
std::vector<Dims> odd_dims() {
  return {{9, 300, 401},  {33, 100, 333},  {130, 77, 111},  {130, 256, 1000},
          {33, 1030, 47}, {128, 256, 768}, {128, 1024, 256}};
}

// The product on gemm (OpenBLAS) followed by bias and act: the reference.
std::vector<float> reference(const Dims& d, const float* x, const float* w, const float* b,
                             const cpu::FusedActivation& act) {
  std::vector<float> y(static_cast<size_t>(d.M * d.N));
  cpu::gemm(false, false, d.M, d.N, d.K, 1.f, x, d.K, w, d.N, 0.f, y.data(), d.N);
  act.visit([&](auto f) {
    for (int64_t i = 0; i < d.M; ++i) cpu::epilogue_row(f, y.data() + i * d.N, b, d.N);
  });
  return y;
}

TEST(OneDnnMatMul, MatchesGemmForOddSizesBiasAndActivations) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  for (const Dims& d : odd_dims()) {
    const Tensor x = random_tensor(DType::kFloat32, {d.M, d.K}, 1), w = random_tensor(DType::kFloat32, {d.K, d.N}, 2);
    const Tensor b = random_tensor(DType::kFloat32, {d.N}, 3);
    for (const char* act_name : {"none", "relu", "leaky_relu", "gelu"}) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(d.name() + " " + act_name + (bias ? " with bias" : ""));
        auto act = cpu::FusedActivation::make(act_name, {});
        ASSERT_TRUE(act.is_ok());
        auto mm = cpu::OneDnnMatMul::make(d.M, d.K, d.N, *act, bias);
        ASSERT_NE(mm, nullptr);
        ASSERT_TRUE(mm->pack_weights(w.data<float>()).is_ok());
        std::vector<float> y(static_cast<size_t>(d.M * d.N), NAN);
        const float* pb = bias ? b.data<float>() : nullptr;
        ASSERT_TRUE(mm->run(x.data<float>(), pb, y.data()).is_ok());
        const std::vector<float> want = reference(d, x.data<float>(), w.data<float>(), pb, *act);
        // Scaled by the magnitude of the sums (sqrt(K) * 3 * 3 here), not of the squashed outputs.
        EXPECT_TRUE(close(y.data(), want.data(), d.M * d.N, 1e-6 * std::sqrt(double(d.K)) * 9));
      }
    }
  }
}

TEST(OneDnnMatMul, KeptWeightsArePackedOnceWhileAnyPackingOfThemLives) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  const cpu::FusedActivation none = cpu::FusedActivation::make("none", {}).value();
  Tensor w = random_tensor(DType::kFloat32, {256, 768}, 4);
  const Tensor w2 = random_tensor(DType::kFloat32, {256, 768}, 5);
  auto check = [&](const cpu::OneDnnMatMul& mm, int64_t M, const Tensor& weights) {
    const Dims d{M, 256, 768};
    const Tensor x = random_tensor(DType::kFloat32, {M, 256}, 6);
    std::vector<float> y(static_cast<size_t>(M * 768), NAN);
    ASSERT_TRUE(mm.run(x.data<float>(), nullptr, y.data()).is_ok());
    const std::vector<float> want = reference(d, x.data<float>(), weights.data<float>(), nullptr, none);
    EXPECT_TRUE(close(y.data(), want.data(), M * 768, 1e-6 * 16 * 9));
  };
  {
    // Two plans of one shape, one of another, and run()'s per-call primitive: one packed copy.
    auto a = cpu::OneDnnMatMul::make(16, 256, 768, none, false), b = cpu::OneDnnMatMul::make(16, 256, 768, none, false);
    auto c = cpu::OneDnnMatMul::make(40, 256, 768, none, false);
    ASSERT_TRUE(a && b && c);
    ASSERT_TRUE(a->pack_kept_weights(w.data<float>()).is_ok());
    ASSERT_TRUE(b->pack_kept_weights(w.data<float>()).is_ok());
    ASSERT_TRUE(c->pack_kept_weights(w.data<float>()).is_ok());
    EXPECT_EQ(a->packed_weights_data(), b->packed_weights_data());
    check(*a, 16, w);
    check(*c, 40, w);
    // Weights packed for this call only, and other weights, have their own copies.
    auto own = cpu::OneDnnMatMul::make(16, 256, 768, none, false), other = cpu::OneDnnMatMul::make(16, 256, 768, none, false);
    ASSERT_TRUE(own->pack_weights(w.data<float>()).is_ok());
    ASSERT_TRUE(other->pack_kept_weights(w2.data<float>()).is_ok());
    EXPECT_NE(own->packed_weights_data(), a->packed_weights_data());
    EXPECT_NE(other->packed_weights_data(), a->packed_weights_data());
    check(*other, 16, w2);
  }
  // Every packing of w is gone: a later one packs what w holds then.
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = -w.data<float>()[i];
  auto later = cpu::OneDnnMatMul::make(16, 256, 768, none, false);
  ASSERT_TRUE(later->pack_kept_weights(w.data<float>()).is_ok());
  check(*later, 16, w);
}

// X with NaN and infinities in a few rows: every activation leaves NaN exactly where the gemm reference
// has it (oneDNN's own Relu and Clip turn NaN into 0, so they run in sdx's epilogue; LeakyRelu with
// alpha 0 is oneDNN's Relu), the other elements close.
TEST(OneDnnMatMul, ActivationsKeepNaNAndInfinities) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  const Dims d{33, 100, 333};
  Tensor x = random_tensor(DType::kFloat32, {d.M, d.K}, 13);
  const Tensor w = random_tensor(DType::kFloat32, {d.K, d.N}, 14), b = random_tensor(DType::kFloat32, {d.N}, 15);
  const float inf = INFINITY;
  for (auto [row, col, v] : {std::tuple{1, 5, NAN}, std::tuple{4, 0, inf}, std::tuple{7, 99, -inf},
                             std::tuple{10, 2, -NAN}, std::tuple{32, 50, NAN}})
    x.data<float>()[row * d.K + col] = v;
  const std::vector<std::pair<std::string, std::vector<float>>> acts = {
      {"none", {}}, {"relu", {}}, {"leaky_relu", {0.1f}}, {"leaky_relu", {0.f}}, {"clip", {0.f, 6.f}},
      {"hard_sigmoid", {}}, {"sigmoid", {}}, {"gelu", {}}};
  for (const auto& [name, params] : acts) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(name + (params.empty() ? "" : " " + std::to_string(params[0])) + (bias ? " with bias" : ""));
      auto act = cpu::FusedActivation::make(name, params);
      ASSERT_TRUE(act.is_ok());
      auto mm = cpu::OneDnnMatMul::make(d.M, d.K, d.N, *act, bias);
      ASSERT_NE(mm, nullptr);
      ASSERT_TRUE(mm->pack_weights(w.data<float>()).is_ok());
      std::vector<float> y(static_cast<size_t>(d.M * d.N));
      const float* pb = bias ? b.data<float>() : nullptr;
      ASSERT_TRUE(mm->run(x.data<float>(), pb, y.data()).is_ok());
      const std::vector<float> want = reference(d, x.data<float>(), w.data<float>(), pb, *act);
      int64_t nans = 0;
      for (int64_t i = 0; i < d.M * d.N; ++i) {
        const float g = y[static_cast<size_t>(i)], r = want[static_cast<size_t>(i)];
        ASSERT_EQ(std::isnan(g), std::isnan(r)) << "element " << i << ": got " << g << ", want " << r;
        if (std::isinf(r)) ASSERT_EQ(g, r) << "element " << i;
        nans += std::isnan(r);
        if (std::isfinite(r)) ASSERT_NEAR(g, r, 1e-4 * (1 + std::fabs(r))) << "element " << i;
      }
      EXPECT_GE(nans, 3 * d.N);  // the three NaN rows at least
    }
  }
}

TEST(OneDnnMatMul, DeclinesSmallProductsAndWhenSwitchedOff) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  const cpu::FusedActivation none;
  EXPECT_EQ(cpu::OneDnnMatMul::make(128, 64, 64, none, false), nullptr);  // 2^19 multiply-adds
  EXPECT_EQ(cpu::OneDnnMatMul::make(0, 256, 256, none, false), nullptr);
  EXPECT_EQ(cpu::OneDnnMatMul::make(128, 0, 256, none, false), nullptr);
  EXPECT_NE(cpu::OneDnnMatMul::make(16, 256, 256, none, false), nullptr);  // 2^20
  ScopedOneDnn off(false);
  EXPECT_EQ(cpu::OneDnnMatMul::make(128, 256, 256, none, false), nullptr);
}

// Pieces of rows over a 2-thread pool, several pieces per thread with two row counts, and one
// thread: the same bits (oneDNN's sum over K for an element does not depend on M).
TEST(OneDnnMatMul, PiecesOverThePoolKeepTheBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  for (const Dims& d : {Dims{130, 77, 111}, Dims{128, 256, 1024}, Dims{301, 96, 1500}, Dims{33, 1030, 47}}) {
    for (const char* act_name : {"relu", "sigmoid"}) {
      SCOPED_TRACE(d.name() + " " + act_name);
      auto act = cpu::FusedActivation::make(act_name, {});
      ASSERT_TRUE(act.is_ok());
      const Tensor x = random_tensor(DType::kFloat32, {d.M, d.K}, 4), w = random_tensor(DType::kFloat32, {d.K, d.N}, 5);
      const Tensor b = random_tensor(DType::kFloat32, {d.N}, 6);
      std::vector<float> y1(static_cast<size_t>(d.M * d.N)), y2(y1.size());

      auto one = cpu::OneDnnMatMul::make(d.M, d.K, d.N, *act, true);
      ASSERT_NE(one, nullptr);
      ASSERT_TRUE(one->pack_weights(w.data<float>()).is_ok());
      ASSERT_TRUE(one->run(x.data<float>(), b.data<float>(), y1.data()).is_ok());

      cpu::ThreadPool pool(2);
      cpu::ScopedThreadPool bind(&pool);
      auto two = cpu::OneDnnMatMul::make(d.M, d.K, d.N, *act, true);
      ASSERT_NE(two, nullptr);
      EXPECT_GE(two->num_pieces(), 2);
      EXPECT_EQ(two->num_pieces() % 2, 0) << "every thread gets as many pieces";
      ASSERT_TRUE(two->pack_weights(w.data<float>()).is_ok());
      ASSERT_TRUE(two->run(x.data<float>(), b.data<float>(), y2.data()).is_ok());
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0);
    }
  }
}

// ---- The kernels, on a model whose weight (and bias) are initializers -------------------------------

// A one-node model: inputs listed in `initializers` become graph initializers, the others graph inputs
// x0, x1, ...; the optimizer is off, so the node runs as given.
struct InitializerModel {
  NodeSpec spec;
  std::vector<int> initializers;

  ir::Model model() const {
    ir::Model m;
    m.opsets[""] = spec.domain.empty() ? spec.opset : 23;
    if (!spec.domain.empty()) m.opsets[spec.domain] = spec.opset;
    m.graph = std::make_shared<ir::Graph>("g");
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      const std::string name = "x" + std::to_string(i);
      const bool init = std::find(initializers.begin(), initializers.end(), int(i)) != initializers.end();
      ins.push_back(init ? m.graph->add_initializer(name, deep_copy(spec.inputs[i]))
                         : m.graph->add_input(name, ir::TypeInfo::tensor(spec.inputs[i].dtype())));
    }
    ir::Node* n = m.graph->add_node(spec.op, spec.domain, spec.op + "0", ins, {"y0"});
    n->set_opset(spec.opset);
    for (const auto& a : spec.attrs) n->add_attribute(a);
    m.graph->add_output(n->output(0));
    return m;
  }

  // Runs through a Session with `threads` intra-op threads.
  Tensor run(int threads = 2) const {
    runtime::SessionOptions options;
    options.optimizer.enabled = false;
    options.intra_op_num_threads = threads;
    auto session = runtime::Session::create(model(), options);
    EXPECT_TRUE(session.is_ok()) << session.status().to_string();
    if (!session.is_ok()) return Tensor();
    std::vector<std::pair<std::string, Datum>> feeds;
    for (size_t i = 0; i < spec.inputs.size(); ++i)
      if (std::find(initializers.begin(), initializers.end(), int(i)) == initializers.end())
        feeds.emplace_back("x" + std::to_string(i), Datum::tensor(spec.inputs[i]));
    auto out = (*session)->run(feeds);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out.is_ok() ? (*out)[0].as_tensor() : Tensor();
  }
};

NodeSpec linear(std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}) {
  return NodeSpec{.op = "Linear", .domain = "sdx", .opset = 1, .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

// The bound form of m's node prepared over copies of its inputs (those in `constant` marked constant) and
// run under a pool of `threads` (none for 1), against m.run(threads): bitwise. Inputs that are not constant
// (X, and W when so marked) are then changed in place and the bound call must follow. (The same thread
// count on both sides: the gemm path, with oneDNN off, may round differently at another thread count.)
void expect_bound_matches_run(const InitializerModel& m, const std::vector<int>& constant, int threads) {
  SCOPED_TRACE(std::to_string(threads) + " threads");
  ir::Model model = m.model();
  const ir::Node& node = *model.graph->nodes().at(0);
  const backend::KernelDef* def = backend::KernelRegistry::cpu().find(node);
  ASSERT_NE(def, nullptr);
  auto kernel = def->create(node);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  std::vector<Tensor> inputs;
  for (const Tensor& t : m.spec.inputs) inputs.push_back(deep_copy(t));
  std::vector<bool> is_constant(inputs.size(), false);
  for (int i : constant) is_constant[size_t(i)] = true;
  const Tensor want = m.run(threads);
  std::vector<Tensor> outputs = {fresh_tensor(want.dtype(), want.shape(), 0xA5)};

  std::unique_ptr<cpu::ThreadPool> pool = threads > 1 ? std::make_unique<cpu::ThreadPool>(threads) : nullptr;
  std::unique_ptr<backend::BoundKernel> bound;
  {
    cpu::ScopedThreadPool bind(pool.get());
    TestPrepareContext ctx(node, inputs, is_constant, outputs);
    auto prepared = (*kernel)->prepare(ctx);
    ASSERT_TRUE(prepared.is_ok() && prepared.value()) << "no bound form";
    bound = std::move(prepared).value();
  }
  const HeapCheck heap = cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
  auto run_bound = [&](const char* what) {
    cpu::ScopedThreadPool bind(pool.get());
    run_bound_once(*bound, what, heap);
  };
  run_bound("first run");
  EXPECT_TRUE(same_bits(outputs[0], want));

  InitializerModel changed = m;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (is_constant[i]) continue;
    perturb(inputs[i]);
    changed.spec.inputs[i] = deep_copy(inputs[i]);
  }
  run_bound("second run");
  EXPECT_TRUE(same_bits(outputs[0], changed.run(threads)));
}

void expect_bound_matches_run(const InitializerModel& m, const std::vector<int>& constant) {
  for (int threads : {1, 2}) expect_bound_matches_run(m, constant, threads);
}

TEST(OneDnnMatMul, LinearEqualsMatMulAddActivationBitwise) {
  for (const Dims& d : {Dims{130, 77, 111}, Dims{33, 100, 333}}) {
    const Tensor x = random_tensor(DType::kFloat32, {2, d.M, d.K}, 7);
    const Tensor w = random_tensor(DType::kFloat32, {d.K, d.N}, 8, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {d.N}, 9);
    const Tensor mm = InitializerModel{NodeSpec{.op = "MatMul", .inputs = {x, w}}, {1}}.run();
    const Tensor with_bias = must_run("Add", {mm, b});
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(d.name() + " " + a.name);
      EXPECT_TRUE(same_bits(InitializerModel{linear({x, w, b}, a.fused_attrs()), {1, 2}}.run(),
                            apply_activation(a, with_bias)));
      EXPECT_TRUE(same_bits(InitializerModel{linear({x, w}, a.fused_attrs()), {1}}.run(), apply_activation(a, mm)));
    }
  }
}

// sdx.Linear on oneDNN with NaN in X equals MatMul + Add + activation bit for bit, NaN where it has NaN (its
// sign may differ: Swish's vector code meets two NaNs in a product, same_bits_nan_as_nan).
TEST(OneDnnMatMul, LinearWithNaNEqualsUnfusedBitwise) {
  const Dims d{130, 77, 111};
  Tensor x = random_tensor(DType::kFloat32, {d.M, d.K}, 16);
  for (int64_t i = 0; i < d.M * d.K; i += 97) x.data<float>()[i] = (i % 2) ? NAN : -INFINITY;
  const Tensor w = random_tensor(DType::kFloat32, {d.K, d.N}, 17, -0.5f, 0.5f);
  const Tensor b = random_tensor(DType::kFloat32, {d.N}, 18);
  const Tensor mm = InitializerModel{NodeSpec{.op = "MatMul", .inputs = {x, w}}, {1}}.run();
  const Tensor with_bias = must_run("Add", {mm, b});
  for (const ActivationCase& a : all_activations()) {
    SCOPED_TRACE(a.name);
    const Tensor fused = InitializerModel{linear({x, w, b}, a.fused_attrs()), {1, 2}}.run();
    const Tensor unfused = apply_activation(a, with_bias);
    EXPECT_TRUE(same_bits_nan_as_nan(fused, unfused));
    int64_t nans = 0;
    for (int64_t i = 0; i < fused.numel(); ++i) nans += std::isnan(fused.data<float>()[i]);
    EXPECT_GE(nans, 40 * d.N);  // every row with a NaN (not one activation turns it into a number)
  }
}

TEST(OneDnnMatMul, LinearAndMatMulCloseToTheGemmPath) {
  // The same products with oneDNN off (gemm): close, not equal (other summation orders).
  for (const Dims& d : odd_dims()) {
    SCOPED_TRACE(d.name());
    const Tensor x = random_tensor(DType::kFloat32, {d.M, d.K}, 10), w = random_tensor(DType::kFloat32, {d.K, d.N}, 11);
    const Tensor b = random_tensor(DType::kFloat32, {d.N}, 12);
    const InitializerModel lin{linear({x, w, b}, {attr_s("activation", "relu")}), {1, 2}};
    const InitializerModel mm{NodeSpec{.op = "MatMul", .inputs = {x, w}}, {1}};
    Tensor lin_off, mm_off;
    {
      ScopedOneDnn off(false);
      lin_off = lin.run();
      mm_off = mm.run();
    }
    const double tol = 1e-6 * std::sqrt(double(d.K)) * 9;
    EXPECT_TRUE(close(lin.run().data<float>(), lin_off.data<float>(), lin_off.numel(), tol));
    EXPECT_TRUE(close(mm.run().data<float>(), mm_off.data<float>(), mm_off.numel(), tol));
  }
}

TEST(OneDnnMatMul, OneThreadEqualsTwoThreads) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN (a property of its products)";
  const Tensor x = random_tensor(DType::kFloat32, {3, 43, 200}, 13), w = random_tensor(DType::kFloat32, {200, 301}, 14);
  const Tensor b = random_tensor(DType::kFloat32, {301}, 15);
  for (const InitializerModel& m : {InitializerModel{linear({x, w, b}, {attr_s("activation", "gelu")}), {1, 2}},
                                    InitializerModel{NodeSpec{.op = "MatMul", .inputs = {x, w}}, {1}}}) {
    SCOPED_TRACE(m.spec.op);
    EXPECT_TRUE(same_bits(m.run(1), m.run(2)));
  }
}

TEST(OneDnnMatMul, BoundFormsMatchRunBitwise) {
  for (const Dims& d : {Dims{9, 300, 401}, Dims{130, 77, 111}, Dims{128, 256, 768}}) {
    SCOPED_TRACE(d.name());
    const Tensor x = random_tensor(DType::kFloat32, {d.M, d.K}, 16), w = random_tensor(DType::kFloat32, {d.K, d.N}, 17);
    const Tensor b = random_tensor(DType::kFloat32, {d.N}, 18);
    for (const char* act : {"none", "relu", "gelu"}) {
      SCOPED_TRACE(act);
      const InitializerModel lin{linear({x, w, b}, {attr_s("activation", act)}), {1, 2}};
      expect_bound_matches_run(lin, {1, 2});  // packed once, at prepare
      expect_bound_matches_run(lin, {});      // told the weight changes: packed on every call
    }
    const InitializerModel no_bias{linear({x, w}, {attr_s("activation", "leaky_relu")}), {1}};
    expect_bound_matches_run(no_bias, {1});
    // MatMul, with A 2-D and 3-D (its batches are one product).
    expect_bound_matches_run(InitializerModel{NodeSpec{.op = "MatMul", .inputs = {x, w}}, {1}}, {1});
    const Tensor x3 = random_tensor(DType::kFloat32, {2, d.M, d.K}, 19);
    expect_bound_matches_run(InitializerModel{NodeSpec{.op = "MatMul", .inputs = {x3, w}}, {1}}, {1});
    expect_bound_matches_run(InitializerModel{NodeSpec{.op = "MatMul", .inputs = {x3, w}}, {1}}, {});
  }
}

TEST(OneDnnMatMul, OtherCasesStayOnGemm) {
  // A weight the caller feeds, M <= 8 (the small-M kernel), a small product, a batched B, double: the
  // same bits with oneDNN on and off.
  const Tensor x = random_tensor(DType::kFloat32, {40, 256}, 20), w = random_tensor(DType::kFloat32, {256, 300}, 21);
  const Tensor x8 = random_tensor(DType::kFloat32, {8, 256}, 22), xs = random_tensor(DType::kFloat32, {40, 64}, 23);
  const Tensor ws = random_tensor(DType::kFloat32, {64, 64}, 24),
               w3 = random_tensor(DType::kFloat32, {2, 256, 300}, 25);
  const Tensor xd = random_tensor(DType::kFloat64, {40, 256}, 26), wd = random_tensor(DType::kFloat64, {256, 300}, 27);
  const std::vector<InitializerModel> cases = {
      {linear({x, w}), {}},    {NodeSpec{.op = "MatMul", .inputs = {x, w}}, {}},
      {linear({x8, w}), {1}},  {NodeSpec{.op = "MatMul", .inputs = {x8, w}}, {1}},
      {linear({xs, ws}), {1}}, {NodeSpec{.op = "MatMul", .inputs = {x, w3}}, {1}},
      {linear({xd, wd}), {1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    Tensor off;
    {
      ScopedOneDnn scope(false);
      off = cases[i].run();
    }
    EXPECT_TRUE(same_bits(cases[i].run(), off));
  }
}

// Not an assertion: how many heap allocations one oneDNN-backed product makes per call (oneDNN's
// execute builds its argument map and a scratchpad grantor per primitive call).
TEST(OneDnnMatMul, ReportsHeapAllocationsPerCall) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  auto mm = cpu::OneDnnMatMul::make(128, 256, 256, cpu::FusedActivation(), false);
  ASSERT_NE(mm, nullptr);
  const Tensor x = random_tensor(DType::kFloat32, {128, 256}, 28), w = random_tensor(DType::kFloat32, {256, 256}, 29);
  std::vector<float> y(128 * 256);
  ASSERT_TRUE(mm->pack_weights(w.data<float>()).is_ok());
  ASSERT_TRUE(mm->run(x.data<float>(), nullptr, y.data()).is_ok());
  const uint64_t before = thread_heap_allocations();
  ASSERT_TRUE(mm->run(x.data<float>(), nullptr, y.data()).is_ok());
  RecordProperty("heap_allocations_per_call", static_cast<int>(thread_heap_allocations() - before));
}

}  // namespace
}  // namespace sdx::test
