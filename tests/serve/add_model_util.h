// The small model the model-cache tests of the serve layer load (model_repository_test.cc,
// model_store_test.cc): y = x + w over x [batch, 4], w an initializer float[4] = {1, 2, 3, 4}, so
// Session::weight_bytes() is 16 (the bytes of tests/api/public_api_test.cc's kAddWeights, onnx 1.23.2).
//
//   write("a/1/model.onnx", add_weights());          // a repository model
//   store.add(fp, add_weights('u'));                   // another fingerprint, the same model
//   ModelCache cache(budget(40));                      // room for two
//   runs_right(*session);                              // x = {10, 20, 30, 40} -> {11, 22, 33, 44}
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sdx/session.h"
#include "serve/model_cache.h"

namespace sdx::serve::test {

// The model's bytes; `variant` changes the producer name's last letter ("sdx-tes?"): another fingerprint,
// the same model.
inline std::string add_weights(char variant = 't') {
  static const unsigned char kAddWeights[] = {
      8,   8,   18,  8,  115, 100, 120, 45,  116, 101, 115, 116, 58,  103, 10,  19,  10,  1,   120, 10,  1,   119,
      18,  1,   121, 26, 3,   97,  100, 100, 34,  3,   65,  100, 100, 18,  1,   103, 42,  25,  8,   4,   16,  1,
      34,  16,  0,   0,  128, 63,  0,   0,   0,   64,  0,   0,   64,  64,  0,   0,   128, 64,  66,  1,   119, 90,
      24,  10,  1,   120, 18,  19,  10,  17,  8,   1,   18,  13,  10,  7,   18,  5,   98,  97,  116, 99,  104, 10,
      2,   8,   4,   98,  24,  10,  1,   121, 18,  19,  10,  17,  8,   1,   18,  13,  10,  7,   18,  5,   98,  97,
      116, 99,  104, 10,  2,   8,   4,   66,  4,   10,  0,   16,  17};
  std::string bytes(reinterpret_cast<const char*>(kAddWeights), sizeof(kAddWeights));
  bytes[11] = variant;
  return bytes;
}

inline ModelCache::Options budget(int64_t bytes) {
  ModelCache::Options o;
  o.budget_bytes = bytes;
  return o;
}

// x + w on x = {10, 20, 30, 40}: {11, 22, 33, 44}, or the test fails.
inline void runs_right(const Session& s) {
  const int64_t dims[] = {1, 4};
  float x[] = {10, 20, 30, 40};
  Result<std::vector<Value>> out = s.run({{"x", Value::borrow({ElementType::kFloat32, dims, 2, x}).value()}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const float* y = static_cast<const float*>(out.value()[0].data());
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{11, 22, 33, 44}));
}

}  // namespace sdx::serve::test
