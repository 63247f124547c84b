#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(RecurrentKernel, RnnSingleStep) {
  auto ys = run_node("RNN", {f32({0.5f}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({0}, {1, 1, 1})}, {attr_i("hidden_size", 1)}, 22, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {std::tanh(0.5f)});
  expect_near((*ys)[1], {std::tanh(0.5f)});
}

TEST(RecurrentKernel, LstmZeroWeightsHalveCell) {
  // All gates see 0: i = f = o = 0.5, g = 0, so C = 0.5 * C0 and H = 0.5 * tanh(C).
  Tensor none;
  auto ys = run_node("LSTM", {f32({3}, {1, 1, 1}), f32({0, 0, 0, 0}, {1, 4, 1}), f32({0, 0, 0, 0}, {1, 4, 1}), none, none, none,
                         f32({1}, {1, 1, 1})},
                {attr_i("hidden_size", 1)}, 22, 3);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[1], {0.5f * std::tanh(0.5f)});
  expect_near((*ys)[2], {0.5f});
}

TEST(RecurrentKernel, SequenceLensStopsEarly) {
  // Batch entry 1 has length 0: its Y is zero and its state stays the initial one.
  auto ys = run_node("RNN", {f32({1, 1}, {1, 2, 1}), f32({1}, {1, 1, 1}), f32({0}, {1, 1, 1}), Tensor(), make<int32_t>(DType::kInt32, {1, 0}, {2})},
                     {attr_i("hidden_size", 1)}, 22, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {std::tanh(1.0f), 0.0f});
}

// float32 runs its activations as vector rows (simd sigmoid/tanh) and R h on the small-M kernel (R^T); float64
// runs them per element in double: the two agree within float rounding, for every cell and option
// (bidirectional, sequence_lens, peepholes, clip, input_forget, linear_before_reset 0 and 1, layout 1,
// batch 3, hidden sizes that are not multiples of a vector).
TEST(RecurrentKernel, Float32AgreesWithFloat64) {
  struct Case {
    std::string op, name;
    int gates;
    std::vector<ir::Attribute> attrs;
  };
  const std::vector<Case> cases = {
      {"GRU", "lbr 1", 3, {attr_i("linear_before_reset", 1)}},
      {"GRU", "lbr 0, bidirectional", 3, {attr_s("direction", "bidirectional")}},
      {"LSTM", "defaults", 4, {}},
      {"LSTM", "bidirectional, clip, input_forget", 4,
       {attr_s("direction", "bidirectional"), attr_f("clip", 0.8f), attr_i("input_forget", 1)}},
      {"RNN", "reverse", 1, {attr_s("direction", "reverse")}},
      {"GRU", "layout 1", 3, {attr_i("layout", 1)}},
  };
  const int64_t N = 3, I = 5, H = 19;
  for (int64_t S : {7, 20}) {
    SCOPED_TRACE(S);
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> dist(-0.8f, 0.8f);
    auto both = [&](std::vector<int64_t> dims) {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      std::vector<float> f(static_cast<size_t>(n));
      std::vector<double> d(f.size());
      for (size_t i = 0; i < f.size(); ++i) d[i] = f[i] = dist(gen);
      return std::pair{f32(f, dims), make<double>(DType::kFloat64, d, dims)};
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.op + ", " + c.name);
      const int64_t D = c.name.find("bidirectional") != std::string::npos ? 2 : 1;
      const bool layout1 = c.name.find("layout 1") != std::string::npos;
      std::vector<ir::Attribute> attrs = c.attrs;
      attrs.push_back(attr_i("hidden_size", H));
      auto [x, xd] = both(layout1 ? std::vector<int64_t>{N, S, I} : std::vector<int64_t>{S, N, I});
      auto [w, wd] = both({D, c.gates * H, I});
      auto [r, rd] = both({D, c.gates * H, H});
      auto [b, bd] = both({D, 2 * c.gates * H});
      auto [h0, h0d] = both(layout1 ? std::vector<int64_t>{N, D, H} : std::vector<int64_t>{D, N, H});
      const Tensor lens = make<int32_t>(DType::kInt32, {static_cast<int32_t>(S), 4, 0}, {N});
      std::vector<Tensor> in = {x, w, r, b, layout1 ? Tensor() : lens, h0};
      std::vector<Tensor> ind = {xd, wd, rd, bd, layout1 ? Tensor() : lens, h0d};
      if (c.op == "LSTM") {
        auto [c0, c0d] = both({D, N, H});
        auto [p, pd] = both({D, 3 * H});
        in.insert(in.end(), {c0, p});
        ind.insert(ind.end(), {c0d, pd});
      }
      const int outs = c.op == "LSTM" ? 3 : 2;
      auto got = run_node(c.op, in, attrs, 22, outs);
      auto want = run_node(c.op, ind, attrs, 22, outs);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_TRUE(want.is_ok()) << want.status().to_string();
      for (int o = 0; o < outs; ++o) {
        const Tensor& g = (*got)[o];
        const Tensor& e = (*want)[o];
        ASSERT_EQ(g.shape(), e.shape());
        for (int64_t i = 0; i < g.numel(); ++i)
          ASSERT_NEAR(g.data<float>()[i], e.data<double>()[i], 2e-6) << "output " << o << ", element " << i;
      }
    }
  }
}

// The bound form (float32, W and R constant: R^T made once) computes bitwise what run() computes and
// allocates nothing, for every cell, both directions, with and without B, initial states and peepholes,
// batch 1 (the small-M step) and 3, an input projection over more than 8 rows (the blocked product),
// layout 1, H not a multiple of a vector, and sequence_lens (read on every call). With a non-constant R it
// declines.
TEST(RecurrentKernel, BoundFormMatchesRunWithoutAllocating) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-0.8f, 0.8f);
  auto rand = [&](std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> f(static_cast<size_t>(n));
    for (float& v : f) v = dist(gen);
    return f32(f, dims);
  };
  struct Case {
    std::string op;
    int gates;
    int64_t S, N, D;
    bool layout1, full;  // full: B, initial states (and LSTM's P) given
    std::vector<ir::Attribute> attrs;
  };
  const std::vector<Case> cases = {
      {"GRU", 3, 12, 1, 2, false, true, {attr_i("linear_before_reset", 1), attr_s("direction", "bidirectional")}},
      {"GRU", 3, 5, 3, 1, false, false, {}},
      {"LSTM", 4, 9, 1, 2, false, true, {attr_s("direction", "bidirectional")}},
      {"LSTM", 4, 4, 2, 1, true, true, {attr_i("layout", 1)}},
      {"RNN", 1, 6, 1, 1, false, false, {attr_s("direction", "reverse")}},
  };
  const int64_t I = 7, H = 19;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " S=" + std::to_string(c.S) + " N=" + std::to_string(c.N));
    std::vector<ir::Attribute> attrs = c.attrs;
    attrs.push_back(attr_i("hidden_size", H));
    const int64_t G = c.gates;
    std::vector<Tensor> in = {rand(c.layout1 ? std::vector<int64_t>{c.N, c.S, I} : std::vector<int64_t>{c.S, c.N, I}),
                              rand({c.D, G * H, I}), rand({c.D, G * H, H})};
    std::vector<int> constant = {1, 2};
    if (c.full) {
      const std::vector<int64_t> state = c.layout1 ? std::vector<int64_t>{c.N, c.D, H} : std::vector<int64_t>{c.D, c.N, H};
      in.insert(in.end(), {rand({c.D, 2 * G * H}), Tensor(), rand(state)});
      constant.push_back(3);
      if (c.op == "LSTM") in.insert(in.end(), {rand(state), rand({c.D, 3 * H})});
    }
    const int outs = c.op == "LSTM" ? 3 : 2;
    expect_bound_matches({.op = c.op, .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = outs}, constant);
  }
  // sequence_lens, int32 and int64 (the changed call reads them +1: 3 and 2, then 2 and 1).
  const std::vector<ir::Attribute> attrs = {attr_i("hidden_size", H)};
  std::vector<Tensor> in = {rand({3, 2, I}), rand({1, 3 * H, I}), rand({1, 3 * H, H}), Tensor(),
                            make<int32_t>(DType::kInt32, {2, 1}, {2})};
  expect_bound_matches({.op = "GRU", .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = 2}, {1, 2});
  std::vector<ir::Attribute> bidi = attrs;
  bidi.push_back(attr_s("direction", "bidirectional"));
  std::vector<Tensor> in2 = {rand({3, 2, I}), rand({2, 3 * H, I}), rand({2, 3 * H, H}), Tensor(),
                             make<int64_t>(DType::kInt64, {1, 0}, {2})};
  expect_bound_matches({.op = "GRU", .opset = 22, .inputs = in2, .attrs = bidi, .num_outputs = 2}, {1, 2});
  // R that changes between calls: run() serves it.
  in.resize(3);
  expect_no_bound_form({.op = "GRU", .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = 2}, {1});
}

// An input projection large enough for oneDNN (S * N * I * G * H >= 2^20: W^T packed once by the bound
// call, per call by run()): the bound form gives run()'s bits, and float32 agrees with the float64 run (the
// gemm path) within float rounding; GRU and LSTM, bidirectional, with sequence_lens.
TEST(RecurrentKernel, LargeInputProjectionOnOneDnn) {
  std::mt19937 gen(21);
  std::uniform_real_distribution<float> dist(-0.3f, 0.3f);
  const int64_t S = 32, N = 2, I = 128, H = 64;
  for (const auto& [op, G] : std::vector<std::pair<std::string, int64_t>>{{"GRU", 3}, {"LSTM", 4}}) {
    SCOPED_TRACE(op);
    auto rand = [&](std::vector<int64_t> dims) {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      std::vector<float> f(static_cast<size_t>(n));
      for (float& v : f) v = dist(gen);
      return f32(f, dims);
    };
    const std::vector<ir::Attribute> attrs = {attr_i("hidden_size", H), attr_s("direction", "bidirectional")};
    std::vector<Tensor> in = {rand({S, N, I}), rand({2, G * H, I}), rand({2, G * H, H}), rand({2, 2 * G * H}),
                              make<int64_t>(DType::kInt64, {30, 17}, {N})};
    expect_bound_matches({.op = op, .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = 2}, {1, 2, 3},
                         HeapCheck::kLibraryMayAllocate);
    std::vector<Tensor> in64;
    for (size_t i = 0; i < 4; ++i) {
      Tensor t = Tensor::allocate(DType::kFloat64, in[i].shape()).value();
      for (int64_t k = 0; k < t.numel(); ++k) t.data<double>()[k] = in[i].data<float>()[k];
      in64.push_back(std::move(t));
    }
    in64.push_back(in[4]);
    auto y32 = run_node({.op = op, .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = 2});
    auto y64 = run_node({.op = op, .opset = 22, .inputs = in64, .attrs = attrs, .num_outputs = 2});
    ASSERT_TRUE(y32.is_ok() && y64.is_ok()) << y32.status().to_string();
    for (int64_t k = 0; k < (*y32)[0].numel(); ++k)
      ASSERT_NEAR((*y32)[0].data<float>()[k], (*y64)[0].data<double>()[k], 2e-5) << k;
  }
}

TEST(RecurrentKernel, RejectsBadWeightShape) {
  EXPECT_FALSE(run_node("GRU", {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({0, 0, 0}, {1, 3, 1})}, {attr_i("hidden_size", 1)}, 22, 2).is_ok());
  EXPECT_FALSE(run_node("RNN", {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({0}, {1, 1, 1})}, {attr_s("direction", "sideways")}, 22, 2).is_ok());
}

}  // namespace
}  // namespace sdx::test
