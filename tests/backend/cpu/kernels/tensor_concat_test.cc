#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorConcat, ConcatAxis1) {
  auto ys = run_node("Concat", {f32({1, 2}, {2, 1}), f32({3, 4, 5, 6}, {2, 2})}, {attr_i("axis", 1)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

// Large enough to be copied by the session's pool (runs of outer rows; one row per input on axis 0).
TEST(TensorConcat, LargeConcatsMatchElementwiseCopy) {
  struct Case {
    std::vector<int64_t> a, b;
    int64_t axis;
  };
  for (const Case& c : {Case{{1, 4, 128, 64}, {1, 4, 1, 64}, -2}, Case{{3, 5, 333, 17}, {3, 5, 2, 17}, 2},
                        Case{{20000}, {7001}, 0}, Case{{9, 4099}, {9, 1}, 1}}) {
    auto fill = [](const std::vector<int64_t>& dims, float base) {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      std::vector<float> v(static_cast<size_t>(n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
      return f32(v, dims);
    };
    Tensor a = fill(c.a, 0.0f), b = fill(c.b, 1e7f);
    auto ys = run_node("Concat", {a, b}, {attr_i("axis", c.axis)});
    ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
    const int r = a.rank();
    const int ax = static_cast<int>(c.axis < 0 ? c.axis + r : c.axis);
    const int64_t outer = a.shape().size_between(0, ax);
    const int64_t ablock = a.shape().size_between(ax, r), bblock = b.shape().size_between(ax, r);
    std::vector<float> want;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k = 0; k < ablock; ++k) want.push_back(a.data<float>()[o * ablock + k]);
      for (int64_t k = 0; k < bblock; ++k) want.push_back(b.data<float>()[o * bblock + k]);
    }
    EXPECT_EQ(values<float>((*ys)[0]), want) << a.shape().to_string() << " axis " << c.axis;
  }
}

TEST(TensorConcat, ConcatMismatchFails) {
  EXPECT_FALSE(run_node("Concat", {f32({1, 2}, {2, 1}), f32({3, 4, 5}, {3, 1})}, {attr_i("axis", 1)}).is_ok());
}

TEST(TensorConcat, SplitUnevenNumOutputs) {
  auto ys = run_node("Split", {f32({1, 2, 3, 4, 5}, {5})}, {attr_i("num_outputs", 2)}, 18, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values<float>((*ys)[1]), (std::vector<float>{4, 5}));
}

TEST(TensorConcat, SplitBadSizesFails) {
  EXPECT_FALSE(run_node("Split", {f32({1, 2, 3}, {3}), i64({1, 1}, {2})}, {}, 18, 2).is_ok());
}

TEST(TensorConcat, TileAndExpand) {
  auto t = run_node("Tile", {f32({1, 2}, {1, 2}), i64({2, 2}, {2})});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(values<float>((*t)[0]), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  auto e = run_node("Expand", {f32({1, 2}, {2, 1}), i64({2, 3}, {2})});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(values<float>((*e)[0]), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  EXPECT_FALSE(run_node("Expand", {f32({1, 2}, {2}), i64({3}, {1})}).is_ok());
}

TEST(TensorConcat, CompressConditionTooLongFails) {
  Tensor cond = Tensor::allocate(DType::kBool, Shape{3}).value();
  cond.data<bool>()[0] = false;
  cond.data<bool>()[1] = true;
  cond.data<bool>()[2] = true;
  auto ok = run_node("Compress", {f32({1, 2, 3}, {3}), cond});
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(values<float>((*ok)[0]), (std::vector<float>{2, 3}));
  EXPECT_FALSE(run_node("Compress", {f32({1, 2}, {2}), cond}).is_ok());
}

TEST(TensorConcat, SplitOldOpsetAttribute) {
  auto ys = run_node("Split", {f32({1, 2, 3}, {3})}, {attr_ints("split", {1, 2})}, 11, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[1]), (std::vector<float>{2, 3}));
}

}  // namespace
}  // namespace sdx::test

namespace sdx::test {
namespace {

// The bound forms replay what run() computes, bit for bit, with no allocation (bound_test_util.h).
TEST(TensorConcat, BoundConcatAndSplitMatchRun) {
  auto seq = [](const std::vector<int64_t>& dims, float base) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
    return f32(v, dims);
  };
  // A KV cache step (outer rows), axis 0 (one row per input), a large parallel copy.
  expect_bound_matches({.op = "Concat", .inputs = {seq({1, 4, 5, 8}, 0), seq({1, 4, 1, 8}, 1e4f)},
                        .attrs = {attr_i("axis", -2)}});
  expect_bound_matches({.op = "Concat", .inputs = {seq({3, 2}, 0), seq({1, 2}, 100), seq({2, 2}, 200)},
                        .attrs = {attr_i("axis", 0)}});
  expect_bound_matches({.op = "Concat", .inputs = {seq({9, 4099}, 0), seq({9, 1}, 1e7f)}, .attrs = {attr_i("axis", 1)}});
  // Split: equal parts, sizes from a constant input, uneven num_outputs (opset 18), an inner axis.
  expect_bound_matches({.op = "Split", .inputs = {seq({1, 1, 768}, 0)}, .attrs = {attr_i("axis", -1)}, .num_outputs = 3});
  expect_bound_matches({.op = "Split", .inputs = {seq({4, 6, 3}, 0), i64({2, 4}, {2})}, .attrs = {attr_i("axis", 1)},
                        .num_outputs = 2},
                       {1});
  expect_bound_matches({.op = "Split", .opset = 18, .inputs = {seq({5, 2}, 0)}, .attrs = {attr_i("num_outputs", 2)},
                        .num_outputs = 2});
}

}  // namespace
}  // namespace sdx::test
