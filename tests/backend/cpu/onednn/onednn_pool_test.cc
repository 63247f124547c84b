// MaxPool and AveragePool on oneDNN (onednn_pool.h) against the reference pooling (the same
// kernels with set_onednn_enabled(false)): kernels 2x2 / 3x3 / 3x2, strides, pads, ceil_mode,
// count_include_pad, dilations, batch 1 and 3, odd channel counts; cases oneDNN declines; the bound
// form against run(), bitwise; slicing over a 2-thread pool against one slice, bitwise; the
// channel-blocked sdx.BlockedMaxPool / BlockedAveragePool against the NCHW pools.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/onednn/onednn.h"
#include "backend/cpu/onednn/onednn_pool.h"
#include "backend/cpu/threading/thread_pool.h"
#include "../kernels/fused_test_util.h"

namespace sdx::test {
namespace {

class ScopedOneDnn {
 public:
  explicit ScopedOneDnn(bool on) : before_(cpu::onednn_enabled()) { cpu::set_onednn_enabled(on && before_); }
  ~ScopedOneDnn() { cpu::set_onednn_enabled(before_); }

 private:
  bool before_;
};

Tensor run_with(bool onednn, const NodeSpec& spec) {
  ScopedOneDnn scope(onednn);
  auto y = run_single(spec);
  EXPECT_TRUE(y.is_ok()) << y.status().to_string();
  return y.is_ok() ? *y : Tensor();
}

// Max is exact; averages divide the same sum, summed in another order (and oneDNN may multiply by
// the reciprocal), so they agree to a few ulps.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << got.type_string() << " vs " << want.type_string();
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w))))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

struct PoolCase {
  std::string name;
  std::vector<int64_t> x;
  std::vector<ir::Attribute> attrs;
};

std::vector<PoolCase> pool_cases() {
  return {
      {"3x3 stride 2 pad 1 (ResNet stem)", {1, 16, 28, 28},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}},
      {"2x2 stride 2", {3, 7, 10, 12}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}},
      {"3x2, asymmetric pads", {1, 17, 9, 11}, {attr_ints("kernel_shape", {3, 2}), attr_ints("pads", {1, 0, 2, 1})}},
      {"ceil_mode", {1, 3, 10, 11},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_i("ceil_mode", 1)}},
      {"ceil_mode with pads", {2, 5, 9, 9},
       {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}),
        attr_i("ceil_mode", 1)}},
      {"floor drops the tail", {1, 4, 11, 11}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {3, 3})}},
      {"SAME_UPPER", {1, 9, 13, 13},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_s("auto_pad", "SAME_UPPER")}},
      {"large enough to slice", {3, 64, 32, 32}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})}},
  };
}

TEST(OneDnnPool, MaxAndAverageMatchReference) {
  for (const PoolCase& c : pool_cases()) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 1);
    for (const char* op : {"MaxPool", "AveragePool"}) {
      for (int include_pad : {0, 1}) {
        if (std::string(op) == "MaxPool" && include_pad) continue;
        SCOPED_TRACE(std::string(op) + ", " + c.name + (include_pad ? ", count_include_pad" : ""));
        std::vector<ir::Attribute> attrs = c.attrs;
        if (include_pad) attrs.push_back(attr_i("count_include_pad", 1));
        const NodeSpec spec{.op = op, .opset = 19, .inputs = {x}, .attrs = attrs};
        const Tensor got = run_with(true, spec), want = run_with(false, spec);
        if (std::string(op) == "MaxPool") EXPECT_TRUE(same_bits(got, want));
        else EXPECT_TRUE(close(got, want, 1e-6));
      }
    }
  }
}

TEST(OneDnnPool, DilatedMaxPool) {
  const Tensor x = random_tensor(DType::kFloat32, {1, 5, 12, 12}, 2);
  const NodeSpec spec{.op = "MaxPool", .opset = 19, .inputs = {x},
                      .attrs = {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 2}),
                                attr_ints("pads", {1, 1, 1, 1})}};
  EXPECT_TRUE(same_bits(run_with(true, spec), run_with(false, spec)));
}

TEST(OneDnnPool, DeclinedCasesStayOnTheReference) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  cpu::WindowGeometry g;
  g.kernel = {2, 2};
  ASSERT_TRUE(g.set_params({2, 2}, {}, {0, 0, 0, 0}).is_ok());
  // count_include_pad with a ceil_mode window past the declared pads: ONNX does not count the
  // extra padding, oneDNN would.
  ASSERT_TRUE(g.resolve({5, 5}, cpu::AutoPad::kNotSet, /*ceil_mode=*/true).is_ok());
  EXPECT_EQ(cpu::OneDnnPool::make(cpu::OneDnnPool::Kind::kAverage, g, {5, 5}, 4, true), nullptr);
  EXPECT_NE(cpu::OneDnnPool::make(cpu::OneDnnPool::Kind::kAverage, g, {5, 5}, 4, false), nullptr);
  EXPECT_NE(cpu::OneDnnPool::make(cpu::OneDnnPool::Kind::kMax, g, {5, 5}, 4, false), nullptr);
  // A pad as large as the window (a window wholly in padding).
  cpu::WindowGeometry wide;
  wide.kernel = {2, 2};
  ASSERT_TRUE(wide.set_params({}, {}, {2, 2, 2, 2}).is_ok());
  ASSERT_TRUE(wide.resolve({4, 4}, cpu::AutoPad::kNotSet, false).is_ok());
  EXPECT_EQ(cpu::OneDnnPool::make(cpu::OneDnnPool::Kind::kMax, wide, {4, 4}, 1, false), nullptr);
  // The kernels still agree with the reference there (they take its path).
  const Tensor x = random_tensor(DType::kFloat32, {1, 4, 5, 5}, 3);
  const NodeSpec spec{.op = "AveragePool", .opset = 19, .inputs = {x},
                      .attrs = {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_i("ceil_mode", 1),
                                attr_i("count_include_pad", 1)}};
  EXPECT_TRUE(same_bits(run_with(true, spec), run_with(false, spec)));
}

TEST(OneDnnPool, BoundFormMatchesRunBitwise) {
  const HeapCheck heap = cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 4);
    if (cpu::onednn_enabled()) {
      expect_bound_matches(NodeSpec{.op = "MaxPool", .opset = 19, .inputs = {x}, .attrs = c.attrs}, {}, heap);
      expect_bound_matches(NodeSpec{.op = "AveragePool", .opset = 19, .inputs = {x}, .attrs = c.attrs}, {}, heap);
    }
  }
  // MaxPool with Indices has no bound form (the reference computes them).
  const Tensor x = random_tensor(DType::kFloat32, {1, 2, 4, 4}, 5);
  expect_no_bound_form(NodeSpec{.op = "MaxPool", .opset = 19, .inputs = {x},
                                .attrs = {attr_ints("kernel_shape", {2, 2})}, .num_outputs = 2});
}

TEST(OneDnnPool, SlicingOverThePoolKeepsTheBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  cpu::WindowGeometry g;
  g.kernel = {3, 3};
  ASSERT_TRUE(g.set_params({1, 1}, {}, {1, 1, 1, 1}).is_ok());
  ASSERT_TRUE(g.resolve({30, 30}, cpu::AutoPad::kNotSet, false).is_ok());
  const int64_t planes = 3 * 37;
  const Tensor x = random_tensor(DType::kFloat32, {3, 37, 30, 30}, 6);
  for (auto kind : {cpu::OneDnnPool::Kind::kMax, cpu::OneDnnPool::Kind::kAverage}) {
    Tensor y1 = fresh_tensor(DType::kFloat32, Shape{3, 37, 30, 30}, 0), y2 = fresh_tensor(DType::kFloat32, Shape{3, 37, 30, 30}, 0);
    auto one = cpu::OneDnnPool::make(kind, g, {30, 30}, planes, false);
    ASSERT_NE(one, nullptr);
    ASSERT_TRUE(one->run(x.data<float>(), y1.data<float>()).is_ok());
    cpu::ThreadPool pool(2);
    cpu::ScopedThreadPool bind(&pool);
    auto two = cpu::OneDnnPool::make(kind, g, {30, 30}, planes, false);
    ASSERT_NE(two, nullptr);
    ASSERT_TRUE(two->run(x.data<float>(), y2.data<float>()).is_ok());
    EXPECT_TRUE(same_bits(y2, y1));
  }
}

// t (float32 [N, C, H, W], C % 16 == 0) channel-blocked, or back.
Tensor blocked(const Tensor& t, bool to_blocked = true) {
  Tensor out = fresh_tensor(DType::kFloat32, t.shape(), 0);
  const int64_t n = t.shape()[0], c = t.shape()[1], hw = t.shape()[2] * t.shape()[3];
  if (to_blocked) cpu::block_channels(t.data<float>(), out.data<float>(), n, c, hw);
  else cpu::unblock_channels(t.data<float>(), out.data<float>(), n, c, hw);
  return out;
}

// The blocked pools on oneDNN and on the reference give the NCHW pools' results, reordered (max
// bitwise; averages to a few ulps on oneDNN, whose blocked and NCHW kernels may sum differently).
TEST(OneDnnPool, BlockedPoolsGiveTheNchwResults) {
  const std::vector<PoolCase> cases = {
      {"3x3 stride 2 pad 1 (ResNet stem)", {2, 32, 15, 14},
       {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})}},
      {"ceil_mode with pads", {1, 16, 9, 9},
       {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}),
        attr_i("ceil_mode", 1)}},
      {"count_include_pad past the pads (oneDNN declines)", {1, 16, 5, 5},
       {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_i("ceil_mode", 1),
        attr_i("count_include_pad", 1)}},
  };
  for (const PoolCase& c : cases) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 7);
    for (const char* op : {"MaxPool", "AveragePool"}) {
      std::vector<ir::Attribute> attrs;
      for (const ir::Attribute& a : c.attrs)
        if (a.name != "count_include_pad" || std::string(op) == "AveragePool") attrs.push_back(a);
      for (bool onednn : {true, false}) {
        SCOPED_TRACE(std::string(op) + ", " + c.name + (onednn ? ", oneDNN" : ", reference"));
        const Tensor want = run_with(onednn, NodeSpec{.op = op, .opset = 19, .inputs = {x}, .attrs = attrs});
        const Tensor got = blocked(run_with(onednn, NodeSpec{.op = std::string("Blocked") + op, .domain = "sdx", .opset = 1,
                                                             .inputs = {blocked(x)}, .attrs = attrs}),
                                   false);
        if (std::string(op) == "MaxPool" || !onednn) EXPECT_TRUE(same_bits(got, want));
        else EXPECT_TRUE(close(got, want, 1e-6));
      }
    }
  }
}

TEST(OneDnnPool, BlockedBoundFormAndSlicingKeepTheBits) {
  const HeapCheck heap = cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
  const Tensor x = random_tensor(DType::kFloat32, {3, 32, 30, 30}, 8);
  const std::vector<ir::Attribute> attrs = {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})};
  for (const char* op : {"BlockedMaxPool", "BlockedAveragePool"}) {
    if (cpu::onednn_enabled())
      expect_bound_matches(NodeSpec{.op = op, .domain = "sdx", .opset = 1, .inputs = {x}, .attrs = attrs}, {}, heap);
  }
  if (!cpu::onednn_enabled()) return;
  cpu::WindowGeometry g;
  g.kernel = {3, 3};
  ASSERT_TRUE(g.set_params({1, 1}, {}, {1, 1, 1, 1}).is_ok());
  ASSERT_TRUE(g.resolve({30, 30}, cpu::AutoPad::kNotSet, false).is_ok());
  for (auto kind : {cpu::OneDnnPool::Kind::kMax, cpu::OneDnnPool::Kind::kAverage}) {
    Tensor y1 = fresh_tensor(DType::kFloat32, x.shape(), 0), y2 = fresh_tensor(DType::kFloat32, x.shape(), 0);
    auto one = cpu::OneDnnPool::make(kind, g, {30, 30}, 3 * 32, false, true);
    ASSERT_NE(one, nullptr);
    ASSERT_TRUE(one->run(x.data<float>(), y1.data<float>()).is_ok());
    cpu::ThreadPool pool(2);
    cpu::ScopedThreadPool bind(&pool);
    auto two = cpu::OneDnnPool::make(kind, g, {30, 30}, 3 * 32, false, true);
    ASSERT_NE(two, nullptr);
    ASSERT_TRUE(two->run(x.data<float>(), y2.data<float>()).is_ok());
    EXPECT_TRUE(same_bits(y2, y1));
  }
  // Planes that are not whole blocks are declined.
  EXPECT_EQ(cpu::OneDnnPool::make(cpu::OneDnnPool::Kind::kMax, g, {30, 30}, 24, false, true), nullptr);
}

TEST(OneDnnPool, BlockedPoolErrors) {
  const std::vector<ir::Attribute> attrs = {attr_ints("kernel_shape", {2, 2})};
  // 8 channels, float64, 3-D.
  EXPECT_FALSE(run_single(NodeSpec{.op = "BlockedMaxPool", .domain = "sdx", .opset = 1,
                                   .inputs = {random_tensor(DType::kFloat32, {1, 8, 4, 4}, 9)}, .attrs = attrs})
                   .is_ok());
  EXPECT_FALSE(run_single(NodeSpec{.op = "BlockedMaxPool", .domain = "sdx", .opset = 1,
                                   .inputs = {random_tensor(DType::kFloat64, {1, 16, 4, 4}, 9)}, .attrs = attrs})
                   .is_ok());
  EXPECT_FALSE(run_single(NodeSpec{.op = "BlockedAveragePool", .domain = "sdx", .opset = 1,
                                   .inputs = {random_tensor(DType::kFloat32, {1, 16, 4}, 9)},
                                   .attrs = {attr_ints("kernel_shape", {2})}})
                   .is_ok());
}

}  // namespace
}  // namespace sdx::test
