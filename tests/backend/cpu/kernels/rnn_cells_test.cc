#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/gemm/gemm.h"
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

// --- com.microsoft.DynamicQuantizeLSTM ----------------------------------------------------------------------

// Its inputs for I inputs, H hidden, D directions, N entries and S steps: W [D, I, 4H] and R [D, H, 4H] of
// `wtype` with per-tensor ([D]) or per-column ([D, 4H]) scales and zero points (0 for int8, 100..150 for
// uint8), B, sequence_lens (S - 1; in a batch the last S - 2), initial_h and initial_c; and the float
// LSTM inputs with the dequantized weights, transposed to ONNX's [D, 4H, I] and [D, 4H, H].
struct QuantizedLstmCase {
  std::vector<Tensor> quantized, dequantized;
};

QuantizedLstmCase quantized_lstm_case(DType wtype, bool per_column, int64_t S, int64_t N, int64_t D, int64_t I, int64_t H,
                                      unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  std::uniform_int_distribution<int> q8(wtype == DType::kInt8 ? -127 : 0, wtype == DType::kInt8 ? 127 : 255);
  std::uniform_int_distribution<int> zp(100, 150);
  std::uniform_real_distribution<float> sc(0.004f, 0.008f);
  const int64_t GH = 4 * H, scales = per_column ? GH : 1;
  auto rand = [&](const std::vector<int64_t>& dims) {
    Tensor t = f32({}, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = unit(gen);
    return t;
  };
  QuantizedLstmCase c;
  auto weight = [&](int64_t K, std::vector<Tensor>& q, std::vector<Tensor>& f) {
    std::vector<int> ints(static_cast<size_t>(D * K * GH));
    for (int& v : ints) v = q8(gen);
    std::vector<float> scale(static_cast<size_t>(D * scales));
    std::vector<int> zero(scale.size(), 0);
    for (size_t i = 0; i < scale.size(); ++i) {
      scale[i] = sc(gen);
      if (wtype == DType::kUint8) zero[i] = per_column ? zero[i - i % static_cast<size_t>(scales)] : zp(gen);
    }
    if (wtype == DType::kUint8 && per_column)  // one zero point per direction, as onnxruntime requires
      for (int64_t d = 0; d < D; ++d) {
        const int z = zp(gen);
        for (int64_t j = 0; j < scales; ++j) zero[static_cast<size_t>(d * scales + j)] = z;
      }
    std::vector<float> deq(static_cast<size_t>(D * GH * K));  // [D, 4H, K]
    for (int64_t d = 0; d < D; ++d)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t g = 0; g < GH; ++g) {
          const size_t si = static_cast<size_t>(d * scales + (per_column ? g : 0));
          deq[static_cast<size_t>((d * GH + g) * K + k)] =
              static_cast<float>(ints[static_cast<size_t>((d * K + k) * GH + g)] - zero[si]) * scale[si];
        }
    const std::vector<int64_t> sdims = per_column ? std::vector<int64_t>{D, GH} : std::vector<int64_t>{D};
    if (wtype == DType::kInt8) {
      q.push_back(make(DType::kInt8, std::vector<int8_t>(ints.begin(), ints.end()), {D, K, GH}));
      f.push_back(f32(deq, {D, GH, K}));
      return std::make_pair(f32(scale, sdims), make(DType::kInt8, std::vector<int8_t>(zero.begin(), zero.end()), sdims));
    }
    q.push_back(make(DType::kUint8, std::vector<uint8_t>(ints.begin(), ints.end()), {D, K, GH}));
    f.push_back(f32(deq, {D, GH, K}));
    return std::make_pair(f32(scale, sdims), make(DType::kUint8, std::vector<uint8_t>(zero.begin(), zero.end()), sdims));
  };
  Tensor x = rand({S, N, I});
  c.quantized.push_back(x);
  c.dequantized.push_back(x);
  auto [ws, wz] = weight(I, c.quantized, c.dequantized);
  auto [rs, rz] = weight(H, c.quantized, c.dequantized);
  std::vector<Tensor> rest = {rand({D, 2 * GH})};
  // S - 1 and, for a batch, S - 2 last (the bound test's changed call reads them + 1).
  std::vector<int32_t> lens(static_cast<size_t>(N), static_cast<int32_t>(S - 1));
  if (N > 1) lens.back() = static_cast<int32_t>(S - 2);
  rest.push_back(make(DType::kInt32, lens, {N}));
  rest.push_back(rand({D, N, H}));
  rest.push_back(rand({D, N, H}));
  for (const Tensor& t : rest) c.quantized.push_back(t), c.dequantized.push_back(t);
  c.quantized.insert(c.quantized.end(), {Tensor(), ws, wz, rs, rz});  // no P
  return c;
}

// Against the float LSTM on the dequantized weights: equal up to the quantization of X and h (one part in
// 255 of their ranges), so a wrong layout, gate order, direction, scale or zero point shows (those move
// outputs by tenths). int8 and uint8 weights, per-tensor and per-column scales, forward and bidirectional,
// batch 3 with a shorter entry, and H not a multiple of a vector.
TEST(RecurrentKernel, DynamicQuantizeLstmFollowsTheFloatLstm) {
  struct Shape5 {
    DType type;
    bool per_column;
    int64_t S, N, D, I, H;
  };
  for (const Shape5& c : {Shape5{DType::kInt8, false, 6, 1, 1, 5, 8}, Shape5{DType::kInt8, true, 5, 3, 2, 7, 19},
                          Shape5{DType::kUint8, false, 4, 3, 2, 6, 11}, Shape5{DType::kUint8, true, 7, 1, 1, 70, 33}}) {
    SCOPED_TRACE(std::string(dtype_name(c.type)) + (c.per_column ? " per column" : " per tensor") + " D=" + std::to_string(c.D));
    const QuantizedLstmCase in = quantized_lstm_case(c.type, c.per_column, c.S, c.N, c.D, c.I, c.H, 17);
    std::vector<ir::Attribute> attrs = {attr_i("hidden_size", c.H)};
    if (c.D == 2) attrs.push_back(attr_s("direction", "bidirectional"));
    auto got = run_node({.op = "DynamicQuantizeLSTM", .domain = "com.microsoft", .opset = 1, .inputs = in.quantized,
                         .attrs = attrs, .num_outputs = 3});
    auto want = run_node({.op = "LSTM", .opset = 22, .inputs = in.dequantized, .attrs = attrs, .num_outputs = 3});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    for (int o = 0; o < 3; ++o) {
      ASSERT_EQ((*got)[o].shape(), (*want)[o].shape());
      double worst = 0;
      for (int64_t k = 0; k < (*got)[o].numel(); ++k)
        worst = std::max(worst, std::fabs(double{(*got)[o].data<float>()[k]} - (*want)[o].data<float>()[k]));
      EXPECT_LT(worst, 0.05) << "output " << o;
      EXPECT_GT(worst, 0.0) << "output " << o << ": quantization should move something";
    }
  }
}

// The bound form (weights packed once) gives run()'s bits without allocating, with X, sequence_lens and the
// states changed between calls.
TEST(RecurrentKernel, DynamicQuantizeLstmBoundFormMatchesRun) {
  const QuantizedLstmCase in = quantized_lstm_case(DType::kInt8, true, 5, 2, 2, 9, 13, 29);
  expect_bound_matches({.op = "DynamicQuantizeLSTM", .domain = "com.microsoft", .opset = 1, .inputs = in.quantized,
                        .attrs = {attr_i("hidden_size", 13), attr_s("direction", "bidirectional")}, .num_outputs = 3},
                       {1, 2, 3, 8, 9, 10, 11});
  const QuantizedLstmCase u8 = quantized_lstm_case(DType::kUint8, false, 3, 1, 1, 4, 6, 31);
  expect_bound_matches({.op = "DynamicQuantizeLSTM", .domain = "com.microsoft", .opset = 1, .inputs = u8.quantized,
                        .attrs = {attr_i("hidden_size", 6)}, .num_outputs = 3},
                       {1, 2, 3, 8, 9, 10, 11});
}

TEST(RecurrentKernel, DynamicQuantizeLstmRejectsBadWeights) {
  const QuantizedLstmCase good = quantized_lstm_case(DType::kInt8, false, 2, 1, 1, 3, 4, 41);
  auto run = [](std::vector<Tensor> in, std::vector<ir::Attribute> extra = {}) {
    std::vector<ir::Attribute> attrs = {attr_i("hidden_size", 4)};
    attrs.insert(attrs.end(), extra.begin(), extra.end());
    return run_node({.op = "DynamicQuantizeLSTM", .domain = "com.microsoft", .opset = 1, .inputs = in, .attrs = attrs,
                     .num_outputs = 1});
  };
  ASSERT_TRUE(run(good.quantized).is_ok()) << run(good.quantized).status().to_string();
  std::vector<Tensor> float_w = good.quantized;
  float_w[1] = good.dequantized[1];  // float, and ONNX's layout
  EXPECT_NE(run(float_w).status().to_string().find("W must be int8 or uint8"), std::string::npos) << run(float_w).status().to_string();
  std::vector<Tensor> bad_scale = good.quantized;
  bad_scale[8] = f32({0.1f, 0.2f, 0.3f}, {3});
  EXPECT_NE(run(bad_scale).status().to_string().find("W's scale must be float32"), std::string::npos);
  std::vector<Tensor> bad_zero = good.quantized;
  bad_zero[11] = make(DType::kUint8, std::vector<uint8_t>{0}, {1});
  EXPECT_NE(run(bad_zero).status().to_string().find("R's zero point must be int8"), std::string::npos);
  EXPECT_FALSE(run(good.quantized, {attr_i("layout", 1)}).is_ok());  // not one of its attributes
}

// The two directions of a bidirectional layer run on two threads when the pool has them: the same bits
// as one thread, for GRU (both reset forms), LSTM and DynamicQuantizeLSTM, with sequence_lens.
TEST(RecurrentKernel, ConcurrentDirectionsMatchOneThread) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-0.7f, 0.7f);
  auto rand = [&](const std::vector<int64_t>& dims) {
    Tensor t = f32({}, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
    return t;
  };
  const int64_t S = 9, N = 2, I = 11, H = 21;
  auto run_threads = [](const NodeSpec& spec, int threads) {
    runtime::SessionOptions options;
    options.intra_op_num_threads = threads;
    std::vector<std::pair<std::string, Datum>> feeds;
    for (size_t i = 0; i < spec.inputs.size(); ++i)
      if (spec.inputs[i].defined()) feeds.emplace_back("x" + std::to_string(i), Datum::tensor(spec.inputs[i]));
    auto session = runtime::Session::create(one_node_model(spec), options);
    EXPECT_TRUE(session.is_ok()) << session.status().to_string();
    auto out = (*session)->run(feeds);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<std::vector<float>> values_out;
    for (const Datum& d : *out) values_out.push_back(values<float>(d.as_tensor()));
    return values_out;
  };
  const Tensor lens = make(DType::kInt32, std::vector<int32_t>{9, 6}, {N});
  std::vector<NodeSpec> specs;
  for (int lbr : {0, 1})
    specs.push_back({.op = "GRU", .opset = 22,
                     .inputs = {rand({S, N, I}), rand({2, 3 * H, I}), rand({2, 3 * H, H}), rand({2, 6 * H}), lens},
                     .attrs = {attr_i("hidden_size", H), attr_s("direction", "bidirectional"), attr_i("linear_before_reset", lbr)},
                     .num_outputs = 2});
  specs.push_back({.op = "LSTM", .opset = 22,
                   .inputs = {rand({S, N, I}), rand({2, 4 * H, I}), rand({2, 4 * H, H}), rand({2, 8 * H}), lens},
                   .attrs = {attr_i("hidden_size", H), attr_s("direction", "bidirectional")},
                   .num_outputs = 3});
  const QuantizedLstmCase q = quantized_lstm_case(DType::kInt8, true, S, N, 2, I, H, 43);
  specs.push_back({.op = "DynamicQuantizeLSTM", .domain = "com.microsoft", .opset = 1, .inputs = q.quantized,
                   .attrs = {attr_i("hidden_size", H), attr_s("direction", "bidirectional")}, .num_outputs = 3});
  for (const NodeSpec& spec : specs) {
    SCOPED_TRACE(spec.op);
    EXPECT_EQ(run_threads(spec, 2), run_threads(spec, 1));
  }
}

// The recurrent product of a wide layer runs in four column blocks (reverse order on odd steps, for L2):
// each block's columns must come out as the whole product's, bit for bit, at the batch sizes of a step
// (the small-M kernel) and a batch past it; float and double. A 320-wide LSTM (R^T 1.6 MiB: blocks) then
// agrees with its float64 run and its bound form gives run()'s bits.
TEST(RecurrentKernel, WideRecurrentProductInColumnBlocks) {
  std::mt19937 gen(31);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t N : {1, 3, 9}) {
    const int64_t H = 512, GH = 2048;
    std::vector<float> h(static_cast<size_t>(N * H)), rt(static_cast<size_t>(H * GH));
    for (float& v : h) v = dist(gen);
    for (float& v : rt) v = dist(gen);
    std::vector<float> whole(static_cast<size_t>(N * GH)), blocks(whole.size());
    cpu::gemm(false, false, N, GH, H, 1.f, h.data(), H, rt.data(), GH, 0.f, whole.data(), GH);
    for (int64_t b = 3; b >= 0; --b)
      cpu::gemm(false, false, N, GH / 4, H, 1.f, h.data(), H, rt.data() + b * GH / 4, GH, 0.f, blocks.data() + b * GH / 4, GH);
    ASSERT_EQ(whole, blocks) << "N=" << N;
    std::vector<double> hd(h.begin(), h.end()), rtd(rt.begin(), rt.end()), wd(whole.size()), bd(whole.size());
    cpu::gemm(false, false, N, GH, H, 1.0, hd.data(), H, rtd.data(), GH, 0.0, wd.data(), GH);
    for (int64_t b = 0; b < 4; ++b)
      cpu::gemm(false, false, N, GH / 4, H, 1.0, hd.data(), H, rtd.data() + b * GH / 4, GH, 0.0, bd.data() + b * GH / 4, GH);
    ASSERT_EQ(wd, bd) << "double N=" << N;
  }
  const int64_t S = 6, N = 1, I = 16, H = 320;
  std::uniform_real_distribution<float> small(-0.1f, 0.1f);
  auto rand = [&](const std::vector<int64_t>& dims) {
    Tensor t = f32({}, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = small(gen);
    return t;
  };
  const std::vector<ir::Attribute> attrs = {attr_i("hidden_size", H)};
  std::vector<Tensor> in = {rand({S, N, I}), rand({1, 4 * H, I}), rand({1, 4 * H, H}), rand({1, 8 * H})};
  expect_bound_matches({.op = "LSTM", .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = 2}, {1, 2, 3});
  std::vector<Tensor> in64;
  for (const Tensor& t : in) {
    Tensor d = Tensor::allocate(DType::kFloat64, t.shape()).value();
    for (int64_t k = 0; k < t.numel(); ++k) d.data<double>()[k] = t.data<float>()[k];
    in64.push_back(std::move(d));
  }
  auto y32 = run_node({.op = "LSTM", .opset = 22, .inputs = in, .attrs = attrs, .num_outputs = 1});
  auto y64 = run_node({.op = "LSTM", .opset = 22, .inputs = in64, .attrs = attrs, .num_outputs = 1});
  ASSERT_TRUE(y32.is_ok() && y64.is_ok());
  for (int64_t k = 0; k < (*y32)[0].numel(); ++k)
    ASSERT_NEAR((*y32)[0].data<float>()[k], (*y64)[0].data<double>()[k], 1e-5) << k;
}

}  // namespace
}  // namespace sdx::test
