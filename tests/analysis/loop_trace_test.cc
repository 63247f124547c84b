#include "analysis/loop_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/float16.h"

namespace sdx::analysis {
namespace {

Tensor floats(std::vector<float> v) { return Tensor::from_values(DType::kFloat32, Shape{static_cast<int64_t>(v.size())}, v.data()); }

TEST(LoopTrace, SummarizesFloatDoubleIntAndHalfTensors) {
  Result<ValueStats> f = summarize(floats({3, -4, 1, 0}));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value().numel, 4);
  EXPECT_DOUBLE_EQ(f.value().norm, std::sqrt(26.0));
  EXPECT_DOUBLE_EQ(f.value().min, -4);
  EXPECT_DOUBLE_EQ(f.value().max, 3);
  EXPECT_DOUBLE_EQ(f.value().mean, 0);
  EXPECT_TRUE(f.value().finite);

  const double d[] = {0.5, 1.5};
  ValueStats ds = summarize(Tensor::from_values(DType::kFloat64, Shape{2}, d)).value();
  EXPECT_DOUBLE_EQ(ds.mean, 1.0);

  const int64_t i[] = {7};
  ValueStats is = summarize(Tensor::from_values(DType::kInt64, Shape{}, i)).value();
  EXPECT_DOUBLE_EQ(is.mean, 7);
  EXPECT_DOUBLE_EQ(is.norm, 7);

  const Float16 h[] = {Float16::from_float(2.f), Float16::from_float(-2.f)};
  ValueStats hs = summarize(Tensor::from_values(DType::kFloat16, Shape{2}, h)).value();
  EXPECT_DOUBLE_EQ(hs.max, 2);
  EXPECT_DOUBLE_EQ(hs.min, -2);
}

TEST(LoopTrace, HashTracksTheBytesAndFinitenessIsReported) {
  ValueStats a = summarize(floats({1, 2})).value();
  ValueStats b = summarize(floats({1, 2})).value();
  ValueStats c = summarize(floats({2, 1})).value();  // same norm, min, max and mean, other bytes
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, c.hash);
  EXPECT_DOUBLE_EQ(a.norm, c.norm);
  EXPECT_FALSE(summarize(floats({1, INFINITY})).value().finite);
  EXPECT_FALSE(summarize(floats({NAN})).value().finite);
}

TEST(LoopTrace, EmptyTensorAndUnsupportedType) {
  ValueStats e = summarize(Tensor::allocate(DType::kFloat32, Shape{0}).value()).value();
  EXPECT_EQ(e.numel, 0);
  EXPECT_EQ(e.norm, 0);
  Result<ValueStats> s = summarize(Tensor::allocate(DType::kString, Shape{1}).value());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("string"), std::string::npos) << s.status().message();
}

TEST(LoopTrace, RingKeepsTheLatestCapacityRowsOldestFirst) {
  LoopTrace trace({"x"}, {.capacity = 4, .stride = 1});
  for (int it = 0; it < 10; ++it) ASSERT_TRUE(trace.record(it, {floats({static_cast<float>(it)})}).is_ok());
  EXPECT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace.recorded(), 10);
  EXPECT_EQ(trace.iterations(), (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(trace.series(0, StatField::kMean), (std::vector<double>{6, 7, 8, 9}));
}

TEST(LoopTrace, StrideRecordsEveryNthIteration) {
  LoopTrace trace({"x", "y"}, {.capacity = 3, .stride = 5});
  for (int it = 0; it < 23; ++it) {
    EXPECT_EQ(trace.wants(it), it % 5 == 0);
    ASSERT_TRUE(trace.record(it, {floats({1.f * it}), floats({-1.f * it, 0})}).is_ok());
  }
  EXPECT_EQ(trace.recorded(), 5);  // 0, 5, 10, 15, 20
  EXPECT_EQ(trace.iterations(), (std::vector<int64_t>{10, 15, 20}));
  EXPECT_EQ(trace.series(1, StatField::kMin), (std::vector<double>{-10, -15, -20}));
  EXPECT_EQ(trace.series(1, StatField::kMax), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(trace.series(0, StatField::kNorm), (std::vector<double>{10, 15, 20}));
}

TEST(LoopTrace, WrongValueCountIsAnErrorAndLeavesTheRingUnchanged) {
  LoopTrace trace({"x", "y"}, {.capacity = 2});
  Status s = trace.record(0, {floats({1})});
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(trace.size(), 0u);
  s = trace.record(0, {floats({1}), Tensor::allocate(DType::kString, Shape{1}).value()});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'y'"), std::string::npos) << s.message();
  EXPECT_EQ(trace.size(), 0u);
}

TEST(LoopTrace, DegenerateOptionsAreClamped) {
  LoopTrace trace({"x"}, {.capacity = 0, .stride = 0});
  EXPECT_EQ(trace.options().capacity, 1u);
  EXPECT_EQ(trace.options().stride, 1);
  ASSERT_TRUE(trace.record(0, {floats({1})}).is_ok());
  ASSERT_TRUE(trace.record(1, {floats({2})}).is_ok());
  EXPECT_EQ(trace.series(0, StatField::kMean), (std::vector<double>{2}));
}

}  // namespace
}  // namespace sdx::analysis
