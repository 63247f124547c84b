// The conformance comparison must fail on real differences: a runner that
// cannot fail would make the pass count meaningless.
#include "testing/conformance.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sdx::testing {
namespace {

Datum floats(std::vector<float> v, Shape s) {
  return Datum::tensor(Tensor::from_values(DType::kFloat32, std::move(s), v.data()));
}

TEST(ConformanceCompare, EqualPasses) {
  EXPECT_TRUE(compare_datum(floats({1, 2, 3}, Shape{3}), floats({1, 2, 3}, Shape{3}), 1e-3, 1e-7).is_ok());
}

TEST(ConformanceCompare, ToleranceIsRelative) {
  EXPECT_TRUE(compare_datum(floats({1000.5f}, Shape{1}), floats({1000.f}, Shape{1}), 1e-3, 1e-7).is_ok());
  EXPECT_FALSE(compare_datum(floats({1.01f}, Shape{1}), floats({1.f}, Shape{1}), 1e-3, 1e-7).is_ok());
}

TEST(ConformanceCompare, ShapeAndTypeMustMatch) {
  EXPECT_FALSE(compare_datum(floats({1, 2}, Shape{2, 1}), floats({1, 2}, Shape{2}), 1e-3, 1e-7).is_ok());
  int64_t v[2] = {1, 2};
  Datum ints = Datum::tensor(Tensor::from_values(DType::kInt64, Shape{2}, v));
  EXPECT_FALSE(compare_datum(ints, floats({1, 2}, Shape{2}), 1e-3, 1e-7).is_ok());
}

TEST(ConformanceCompare, NanMatchesOnlyNan) {
  EXPECT_TRUE(compare_datum(floats({NAN}, Shape{1}), floats({NAN}, Shape{1}), 1e-3, 1e-7).is_ok());
  EXPECT_FALSE(compare_datum(floats({0.f}, Shape{1}), floats({NAN}, Shape{1}), 1e-3, 1e-7).is_ok());
  EXPECT_FALSE(compare_datum(floats({NAN}, Shape{1}), floats({0.f}, Shape{1}), 1e-3, 1e-7).is_ok());
  EXPECT_FALSE(compare_datum(floats({INFINITY}, Shape{1}), floats({-INFINITY}, Shape{1}), 1e-3, 1e-7).is_ok());
}

TEST(ConformanceCompare, IntegersAreExact) {
  int64_t a[2] = {1, 2}, b[2] = {1, 3};
  EXPECT_FALSE(compare_datum(Datum::tensor(Tensor::from_values(DType::kInt64, Shape{2}, a)),
                             Datum::tensor(Tensor::from_values(DType::kInt64, Shape{2}, b)), 1e-3, 1e-7).is_ok());
}

TEST(ConformanceCompare, SequencesCompareItemwise) {
  Tensor a = floats({1}, Shape{1}).as_tensor(), b = floats({2}, Shape{1}).as_tensor();
  EXPECT_FALSE(compare_datum(Datum::sequence({a}, DType::kFloat32), Datum::sequence({a, b}, DType::kFloat32), 1e-3, 1e-7).is_ok());
  EXPECT_FALSE(compare_datum(Datum::sequence({a}, DType::kFloat32), Datum::sequence({b}, DType::kFloat32), 1e-3, 1e-7).is_ok());
  EXPECT_FALSE(compare_datum(Datum::none(), floats({1}, Shape{1}), 1e-3, 1e-7).is_ok());
}

TEST(ConformanceCase, MissingFolderFails) {
  CaseResult r = run_conformance_case("/nonexistent/case");
  EXPECT_EQ(r.outcome, CaseResult::kFailed);
  EXPECT_FALSE(r.reason.empty());
}

}  // namespace
}  // namespace sdx::testing
