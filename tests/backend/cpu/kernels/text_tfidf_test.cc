// Tests for src/backend/cpu/kernels/text_tfidf.cc (TfIdfVectorizer).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace sdx::test;

// Pool: unigrams {2, 3}, bigrams {(2,3), (3,2)}; columns 0..3.
std::vector<ir::Attribute> int_attrs(const std::string& mode, int64_t min_gram, int64_t max_gram, int64_t skip) {
  return {attr_s("mode", mode),
          attr_i("min_gram_length", min_gram),
          attr_i("max_gram_length", max_gram),
          attr_i("max_skip_count", skip),
          attr_ints("ngram_counts", {0, 2}),
          attr_ints("ngram_indexes", {0, 1, 2, 3}),
          attr_ints("pool_int64s", {2, 3, 2, 3, 3, 2})};
}

TEST(TfIdfVectorizerKernel, UniAndBigramCountsInt32) {
  const int32_t v[5] = {2, 3, 2, 5, 3};
  Tensor x = Tensor::from_values(DType::kInt32, Shape{5}, v);
  auto y = run_single("TfIdfVectorizer", {x}, int_attrs("TF", 1, 2, 0), /*opset=*/9);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // unigrams: 2 twice, 3 twice; bigrams (no skip): (2,3) once, (3,2) once.
  EXPECT_EQ(y->shape(), (Shape{4}));
  EXPECT_EQ(values(*y), (std::vector<float>{2, 2, 1, 1}));
}

TEST(TfIdfVectorizerKernel, SkipsCountBigramsAtEveryDistanceBatched) {
  const int64_t v[6] = {2, 5, 3, 3, 5, 2};
  Tensor x = Tensor::from_values(DType::kInt64, Shape{6}, v).reshaped(Shape{2, 3});
  auto y = run_single("TfIdfVectorizer", {x}, int_attrs("TF", 2, 2, 1), /*opset=*/9);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // Row 0 [2,5,3]: skip 1 gives (2,5),(5,3); skip 2 gives (2,3). Row 1 [3,5,2]: (3,2) at skip 2.
  EXPECT_EQ(y->shape(), (Shape{2, 4}));
  EXPECT_EQ(values(*y), (std::vector<float>{0, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(TfIdfVectorizerKernel, StringPoolWithIdfAndTfidfWeights) {
  const std::string v[4] = {"a", "b", "a", "c"};
  Tensor x = Tensor::from_values(DType::kString, Shape{4}, v);
  std::vector<ir::Attribute> attrs = {attr_s("mode", "TFIDF"),
                                      attr_i("min_gram_length", 1),
                                      attr_i("max_gram_length", 1),
                                      attr_i("max_skip_count", 0),
                                      attr_ints("ngram_counts", {0}),
                                      attr_ints("ngram_indexes", {1, 0}),
                                      attr_strings("pool_strings", {"a", "c"}),
                                      attr_floats("weights", {0.5f, 3.f})};
  auto y = run_single("TfIdfVectorizer", {x}, attrs, /*opset=*/9);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // "a" -> column 1 (count 2, weight 3), "c" -> column 0 (count 1, weight 0.5).
  EXPECT_EQ(values(*y), (std::vector<float>{0.5f, 6.f}));
  attrs[0] = attr_s("mode", "IDF");
  auto idf = run_single("TfIdfVectorizer", {x}, attrs, /*opset=*/9);
  ASSERT_TRUE(idf.is_ok()) << idf.status().to_string();
  EXPECT_EQ(values(*idf), (std::vector<float>{0.5f, 3.f}));
}

TEST(TfIdfVectorizerKernel, EmptyInputGivesZeros) {
  Tensor x = Tensor::from_values<int64_t>(DType::kInt64, Shape{0}, nullptr);
  auto y = run_single("TfIdfVectorizer", {x}, int_attrs("TF", 1, 2, 0), /*opset=*/9);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values(*y), (std::vector<float>{0, 0, 0, 0}));
}

TEST(TfIdfVectorizerKernel, RejectsBadAttributesAndInputs) {
  auto attrs = int_attrs("BM25", 1, 2, 0);
  const int64_t v[2] = {2, 3};
  Tensor x = Tensor::from_values(DType::kInt64, Shape{2}, v);
  EXPECT_FALSE(run_single("TfIdfVectorizer", {x}, attrs, /*opset=*/9).is_ok());  // unknown mode
  attrs = int_attrs("TF", 1, 2, 0);
  attrs[5] = attr_ints("ngram_indexes", {0, 1});  // fewer indexes than pool n-grams
  EXPECT_FALSE(run_single("TfIdfVectorizer", {x}, attrs, /*opset=*/9).is_ok());
  attrs = int_attrs("TF", 1, 2, 0);
  attrs[4] = attr_ints("ngram_counts", {0, 9});  // offset beyond the pool
  EXPECT_FALSE(run_single("TfIdfVectorizer", {x}, attrs, /*opset=*/9).is_ok());
  const std::string s[2] = {"2", "3"};
  Tensor xs = Tensor::from_values(DType::kString, Shape{2}, s);  // string input, int pool
  EXPECT_FALSE(run_single("TfIdfVectorizer", {xs}, int_attrs("TF", 1, 2, 0), /*opset=*/9).is_ok());
  Tensor x3 = x.reshaped(Shape{1, 1, 2});  // rank 3
  EXPECT_FALSE(run_single("TfIdfVectorizer", {x3}, int_attrs("TF", 1, 2, 0), /*opset=*/9).is_ok());
}

}  // namespace
}  // namespace sdx
