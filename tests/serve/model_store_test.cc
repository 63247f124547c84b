#include "serve/model_store.h"

#include <gtest/gtest.h>

#include <string>

namespace sdx::serve {
namespace {

// A Relu over x [batch, 4] (the bytes of tests/api/public_api_test.cc's kReluModel, onnx 1.23.2).
const unsigned char kReluModel[] = {
    8,   8,   18,  8,   115, 100, 120, 45,  116, 101, 115, 116, 58,  75, 10, 18, 10, 1,   120, 18,  1,  121, 26, 4,
    114, 101, 108, 117, 34,  4,   82,  101, 108, 117, 18,  1,   103, 90, 24, 10, 1,  120, 18,  19,  10, 17,  8,  1,
    18,  13,  10,  7,   18,  5,   98,  97,  116, 99,  104, 10,  2,   8,  4,  98, 24, 10,  1,   121, 18, 19,  10, 17,
    8,   1,   18,  13,  10,  7,   18,  5,   98,  97,  116, 99,  104, 10, 2,  8,  4,  66,  4,   10,  0,  16,  17};

std::string relu_bytes() { return std::string(reinterpret_cast<const char*>(kReluModel), sizeof(kReluModel)); }

TEST(ModelStore, FingerprintIsSha256) {
  // The SHA-256 of "abc" (FIPS 180-2's first example).
  EXPECT_EQ(ModelStore::fingerprint("abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(ModelStore::fingerprint(relu_bytes()), ModelStore::fingerprint(relu_bytes() + " "));
}

TEST(ModelStore, SameBytesAreLoadedOnce) {
  ModelStore store({});
  const std::string bytes = relu_bytes();
  const std::string fp = ModelStore::fingerprint(bytes);
  EXPECT_FALSE(store.has(fp));
  Result<ModelStore::Added> first = store.add(fp, bytes);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_FALSE(first.value().already_held);
  EXPECT_TRUE(store.has(fp));
  Result<ModelStore::Added> again = store.add(fp, bytes);
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again.value().already_held);
  EXPECT_EQ(again.value().session.get(), first.value().session.get());  // the same loaded session
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.find(fp)->inputs().at(0).name, "x");
  EXPECT_EQ(store.find("sha256:0000"), nullptr);
}

TEST(ModelStore, BadBytesAreRefusedNamingTheFingerprint) {
  ModelStore store({});
  const std::string junk = "this is not an ONNX model";
  const std::string fp = ModelStore::fingerprint(junk);
  Result<ModelStore::Added> r = store.add(fp, junk);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(fp), std::string::npos) << r.status().to_string();
  EXPECT_FALSE(store.has(fp));
  EXPECT_EQ(store.size(), 0u);
}

}  // namespace
}  // namespace sdx::serve
