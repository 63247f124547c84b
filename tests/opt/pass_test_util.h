// Shared helpers for optimizer tests: a small model builder and check_pass, which
// loads a model twice (optimizer off, and only the given passes on with the IR
// verifier after every pass), compares the outputs on the given inputs within a
// tolerance and returns what the optimizer did.
//
//   auto build = [] {
//     ModelBuilder b;
//     ir::Value* x = b.input("x", {2, 3});
//     ir::Value* y = b.op("Add", {x, b.constant("zero", f32({0, 0, 0}, {3}))});
//     b.output(y);
//     return b.model();
//   };
//   PassCheck r = check_pass({"simplify_algebra"}, build, {{"x", random_f32({2, 3}, 1)}});
//   EXPECT_EQ(r.report.rewrites_of("simplify_algebra"), 1);
//
// Passes may be named by table name or DSP alias ("AlgebraicOptimizations"), as in SDX_OPTIMIZER_SKIP.
//   EXPECT_EQ(r.ops_after.count("Add"), 0u);
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../backend/cpu/kernels/kernel_test_util.h"
#include "opt/pass.h"
#include "opt/pass_manager.h"
#include "runtime/session.h"

namespace sdx::test {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) : opset_(opset) {
    model_.opsets[""] = opset;
    model_.graph = std::make_shared<ir::Graph>("g");
  }
  ir::Graph& graph() { return *model_.graph; }
  // A graph input with a fixed shape (an empty shape is a scalar).
  ir::Value* input(const std::string& name, const std::vector<int64_t>& dims, DType dt = DType::kFloat32) {
    std::vector<ir::Dim> d;
    for (int64_t x : dims) d.push_back(ir::Dim::fixed(x));
    return model_.graph->add_input(name, ir::TypeInfo::tensor(dt, d));
  }
  ir::Value* constant(const std::string& name, Tensor t) { return model_.graph->add_initializer(name, std::move(t)); }
  // One node; returns its first output (all outputs through outputs_of()).
  ir::Value* op(const std::string& type, const std::vector<ir::Value*>& inputs, std::vector<ir::Attribute> attrs = {},
                int num_outputs = 1, const std::string& domain = "", int opset = 0) {
    std::vector<std::string> outs;
    for (int i = 0; i < num_outputs; ++i) outs.push_back(type + "_" + std::to_string(counter_) + "_out" + std::to_string(i));
    ir::Node* n = model_.graph->add_node(type, domain, type + "_" + std::to_string(counter_++), inputs, outs);
    n->set_opset(opset ? opset : (domain.empty() ? opset_ : 1));
    if (!domain.empty() && !model_.opsets.count(domain)) model_.opsets[domain] = 1;
    for (ir::Attribute& a : attrs) n->add_attribute(std::move(a));
    last_ = n;
    return n->output(0);
  }
  ir::Node* last_node() const { return last_; }
  void output(ir::Value* v) { model_.graph->add_output(v); }
  ir::Model model() { return std::move(model_); }

 private:
  int opset_;
  ir::Model model_;
  int counter_ = 0;
  ir::Node* last_ = nullptr;
};

// Deterministic values in [lo, hi).
inline Tensor random_f32(const std::vector<int64_t>& dims, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t = Tensor::allocate(DType::kFloat32, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

struct PassCheck {
  opt::OptimizationReport report;
  std::map<std::string, int> ops_after;  // op histogram of the optimized graph
  std::vector<Datum> outputs;            // of the optimized session
};

// The options that run exactly `passes` (every other registered pass skipped).
inline opt::OptimizerOptions only(const std::vector<std::string>& passes) {
  opt::OptimizerOptions o;
  o.verify_each_pass = true;
  for (const opt::PassInfo& p : opt::registered_passes()) {
    const bool named = std::find(passes.begin(), passes.end(), p.name) != passes.end() ||
                       std::find(passes.begin(), passes.end(), p.alias) != passes.end();
    if (!named) o.skip.push_back(p.name);
  }
  return o;
}

inline void expect_close(const Datum& got, const Datum& want, double rtol, double atol, const std::string& what) {
  ASSERT_TRUE(got.is_tensor() && want.is_tensor()) << what;
  const Tensor& a = got.as_tensor();
  const Tensor& b = want.as_tensor();
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  if (a.dtype() != DType::kFloat32) {
    ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what;
    return;
  }
  int bad = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": optimized " << x << " vs unoptimized " << y;
  }
}

// check_pass with the optimized session's options given (e.g. only({...}) with fp16 set).
inline PassCheck check_pass_with(const opt::OptimizerOptions& options, const std::function<ir::Model()>& build,
                                 const std::vector<std::pair<std::string, Datum>>& feeds, double rtol = 1e-5,
                                 double atol = 1e-6) {
  PassCheck r;
  runtime::SessionOptions off;
  off.optimizer.enabled = false;
  runtime::SessionOptions on;
  on.optimizer = options;
  auto ref = runtime::Session::create(build(), off);
  auto opt = runtime::Session::create(build(), on);
  if (!ref.is_ok() || !opt.is_ok()) {
    ADD_FAILURE() << "load: " << (ref.is_ok() ? opt.status().to_string() : ref.status().to_string());
    return r;
  }
  r.report = (*opt)->optimization();
  r.ops_after = r.report.ops_after;
  auto want = (*ref)->run(feeds);
  auto got = (*opt)->run(feeds);
  if (!want.is_ok() || !got.is_ok()) {
    ADD_FAILURE() << "run: " << (want.is_ok() ? got.status().to_string() : want.status().to_string());
    return r;
  }
  for (size_t i = 0; i < want->size(); ++i)
    expect_close((*got)[i], (*want)[i], rtol, atol, "output " + std::to_string(i));
  r.outputs = std::move(got).value();
  return r;
}

// Loads build() unoptimized and with `passes` only, runs both on `feeds`, and checks that every
// output agrees within |opt - ref| <= atol + rtol * |ref| (non-float outputs: exactly).
inline PassCheck check_pass(const std::vector<std::string>& passes, const std::function<ir::Model()>& build,
                            const std::vector<std::pair<std::string, Datum>>& feeds, double rtol = 1e-5,
                            double atol = 1e-6) {
  return check_pass_with(only(passes), build, feeds, rtol, atol);
}

}  // namespace sdx::test
