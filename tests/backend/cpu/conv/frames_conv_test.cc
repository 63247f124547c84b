// The frames product for convolutions of one input channel with a long filter
// (backend/cpu/conv/frames_conv.h):
// - against a direct double-precision convolution: 1-D and 2-D over one row, strides, dilations,
//   pads (windows partly outside x), batches, output channel counts that are not multiples of 16
//   (each product above OneDnnMatMul::kMinMacs, below which the path declines);
// - it declines what it does not take (two input channels, short filters, groups, 2-D kernels);
// - through the Conv and sdx.FusedConv kernels: FusedConv equals Conv + activation and Conv + Add +
//   activation bit for bit; the bound form equals run().
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/conv/frames_conv.h"
#include "backend/cpu/onednn/onednn.h"
#include "../kernels/fused_test_util.h"

namespace sdx::test {
namespace {

struct Case {
  std::string name;
  std::vector<int64_t> x, w;  // X [N, 1, (1,) L], W [M, 1, (1,) K]
  int64_t stride, dilation, pad_begin, pad_end;
};

std::vector<Case> cases() {
  return {
      {"STFT: 512 taps, stride 160", {1, 1, 16000}, {33, 1, 512}, 160, 1, 0, 0},
      {"2-D over one row, batch 2", {2, 1, 1, 3000}, {33, 1, 1, 96}, 7, 1, 0, 0},
      {"padded: windows partly outside", {1, 1, 2000}, {49, 1, 64}, 5, 1, 31, 32},
      {"dilation 2, odd channels", {2, 1, 2000}, {29, 1, 80}, 3, 2, 4, 9},
  };
}

bool two_d(const Case& c) { return c.x.size() == 4; }

std::vector<ir::Attribute> attrs_of(const Case& c) {
  if (two_d(c))
    return {attr_ints("strides", {1, c.stride}), attr_ints("dilations", {1, c.dilation}),
            attr_ints("pads", {0, c.pad_begin, 0, c.pad_end})};
  return {attr_ints("strides", {c.stride}), attr_ints("dilations", {c.dilation}),
          attr_ints("pads", {c.pad_begin, c.pad_end})};
}

cpu::ConvPlan plan_of(const Case& c, bool bias) {
  cpu::ConvAttrs a;
  a.strides = two_d(c) ? std::vector<int64_t>{1, c.stride} : std::vector<int64_t>{c.stride};
  a.dilations = two_d(c) ? std::vector<int64_t>{1, c.dilation} : std::vector<int64_t>{c.dilation};
  a.pads = two_d(c) ? std::vector<int64_t>{0, c.pad_begin, 0, c.pad_end} : std::vector<int64_t>{c.pad_begin, c.pad_end};
  a.has_pads = true;
  const Shape b({c.w[0]});
  auto p = cpu::ConvPlan::make(a, Shape(c.x), Shape(c.w), bias ? &b : nullptr, "test");
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return std::move(p).value();
}

// The convolution, directly, in double.
std::vector<double> direct(const Case& c, const float* x, const float* w, const float* b, int64_t frames) {
  const int64_t N = c.x[0], L = c.x.back(), M = c.w[0], K = c.w.back();
  std::vector<double> y(static_cast<size_t>(N * M * frames));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < frames; ++o) {
        double acc = b ? b[m] : 0.0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t i = o * c.stride + k * c.dilation - c.pad_begin;
          if (i >= 0 && i < L) acc += double(w[m * K + k]) * x[n * L + i];
        }
        y[static_cast<size_t>((n * M + m) * frames + o)] = acc;
      }
  return y;
}

TEST(FramesConv, MatchesADirectConvolution) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "oneDNN is not built in or is switched off";
  for (const Case& c : cases()) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(c.name + (bias ? ", bias" : ""));
      const cpu::ConvPlan p = plan_of(c, bias);
      const Tensor x = random_tensor(DType::kFloat32, c.x, 1), w = random_tensor(DType::kFloat32, c.w, 2, -0.2f, 0.2f);
      const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 3);
      Tensor y = Tensor::allocate(DType::kFloat32, p.out_shape).value();
      std::optional<Status> st = cpu::run_frames_conv(p, {}, x, w, bias ? &b : nullptr, y);
      ASSERT_TRUE(st.has_value()) << "the frames path declined";
      ASSERT_TRUE(st->is_ok()) << st->to_string();
      const std::vector<double> want =
          direct(c, x.data<float>(), w.data<float>(), bias ? b.data<float>() : nullptr, p.out_shape.dims().back());
      ASSERT_EQ(static_cast<size_t>(y.numel()), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(y.data<float>()[i], want[i], 1e-5 * (30 + std::fabs(want[i]))) << "element " << i;
    }
  }
}

TEST(FramesConv, DeclinesWhatItDoesNotTake) {
  const Tensor x2 = random_tensor(DType::kFloat32, {1, 2, 500}, 4);
  auto declines = [](const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, int64_t group = 1) {
    cpu::ConvAttrs a;
    a.group = group;
    auto p = cpu::ConvPlan::make(a, Shape(xs), Shape(ws), nullptr, "test");
    EXPECT_TRUE(p.is_ok()) << p.status().to_string();
    const Tensor x = random_tensor(DType::kFloat32, xs, 5), w = random_tensor(DType::kFloat32, ws, 6);
    Tensor y = Tensor::allocate(DType::kFloat32, p.value().out_shape).value();
    return !cpu::run_frames_conv(p.value(), {}, x, w, nullptr, y).has_value();
  };
  EXPECT_TRUE(declines({1, 2, 500}, {8, 2, 100}));        // two input channels
  EXPECT_TRUE(declines({1, 1, 500}, {8, 1, 63}));         // a short filter
  EXPECT_TRUE(declines({1, 1, 9, 500}, {8, 1, 3, 100}));  // a 2-D kernel
  EXPECT_TRUE(declines({1, 1, 2, 500}, {8, 1, 1, 100}));  // two rows
  const Case c = cases()[0];
  Tensor y = Tensor::allocate(DType::kFloat32, plan_of(c, false).out_shape).value();
  EXPECT_FALSE(cpu::run_frames_conv(plan_of(c, false), {}, random_tensor(DType::kFloat32, c.x, 7),
                                    random_tensor(DType::kFloat32, c.w, 8), nullptr, y, nullptr, {.x = true})
                   .has_value());  // a blocked layout
}

// Through the kernels: FusedConv (every activation, with and without a residual) equals Conv then
// the ONNX activation (then Add first), bit for bit; the bound form equals run().
TEST(FramesConv, FusedConvEqualsConvThenActivationAndBoundEqualsRun) {
  for (const Case& c : cases()) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 11), w = random_tensor(DType::kFloat32, c.w, 12, -0.2f, 0.2f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 13);
    const Tensor y = must_run("Conv", {x, w, b}, attrs_of(c));
    const Tensor r = random_tensor(DType::kFloat32, y.shape().dims(), 14);
    const Tensor yr = must_run("Add", {y, r});
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(c.name + ", " + a.name);
      expect_fused_conv_bits(x, w, b, r, attrs_of(c), a, y, yr);
    }
    SCOPED_TRACE(c.name);
    // oneDNN's execute allocates its argument map (see fused_conv_test.cc).
    const HeapCheck heap = HeapCheck::kLibraryMayAllocate;
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w, b}, .attrs = attrs_of(c)}, {1, 2}, heap);
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w}, .attrs = attrs_of(c)}, {}, heap);  // W changes
    std::vector<ir::Attribute> attrs = attrs_of(c);
    attrs.push_back(attr_s("activation", "leaky_relu"));
    attrs.push_back(attr_floats("activation_params", {0.2f}));
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = attrs},
                         {1, 2}, heap);
  }
}

}  // namespace
}  // namespace sdx::test
