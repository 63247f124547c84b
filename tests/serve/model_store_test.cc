#include "serve/model_store.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "add_model_util.h"

namespace sdx::serve {
namespace {

using test::add_weights;
using test::budget;
using test::runs_right;

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

class ModelStoreSpill : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sdx_store_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path file_of(const std::string& fp) const { return dir_ / (fp.substr(7) + ".onnx"); }
  std::filesystem::path dir_;
};

TEST_F(ModelStoreSpill, EvictedUploadsReloadFromTheirKeptBytes) {
  ModelCache cache(budget(20));  // one model at a time
  const std::string a = add_weights('t'), b = add_weights('u');
  const std::string fa = ModelStore::fingerprint(a), fb = ModelStore::fingerprint(b);
  {
    ModelStore store({}, &cache, dir_.string());
    ASSERT_TRUE(store.add(fa, a).is_ok());
    ASSERT_TRUE(store.add(fb, b).is_ok());  // evicts a
    EXPECT_FALSE(cache.resident(fa));
    EXPECT_TRUE(store.has(fa));  // still registered: its bytes are kept
    EXPECT_EQ(store.size(), 2u);
    struct stat st {};
    ASSERT_EQ(::stat(file_of(fa).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(st.st_size, static_cast<off_t>(a.size()));
    Result<std::shared_ptr<const Session>> back = store.lookup(fa);  // reloads a, evicts b
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    runs_right(*back.value());
    EXPECT_EQ(cache.counts(fa).misses, 1);
    EXPECT_FALSE(cache.resident(fb));
    Result<ModelStore::Added> again = store.add(fb, b);  // held (evicted): no load at all
    ASSERT_TRUE(again.is_ok());
    EXPECT_TRUE(again.value().already_held);
    EXPECT_EQ(again.value().session, nullptr);
    EXPECT_EQ(cache.counts(fb).misses, 0);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_));  // the store removed what it kept
  EXPECT_TRUE(cache.resident_keys().empty());
}

TEST_F(ModelStoreSpill, AKeptCopyThatChangedIsNotLoaded) {
  ModelCache cache(budget(20));
  ModelStore store({}, &cache, dir_.string());
  const std::string a = add_weights('t'), b = add_weights('u');
  const std::string fa = ModelStore::fingerprint(a), fb = ModelStore::fingerprint(b);
  ASSERT_TRUE(store.add(fa, a).is_ok());
  ASSERT_TRUE(store.add(fb, b).is_ok());
  std::ofstream(file_of(fa), std::ios::binary | std::ios::trunc) << b;  // other bytes under a's name
  Result<std::shared_ptr<const Session>> r = store.lookup(fa);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no longer hashes to it"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("register it again"), std::string::npos) << r.status().message();
  EXPECT_FALSE(store.has(fa));
  EXPECT_FALSE(std::filesystem::exists(file_of(fa)));
}

TEST_F(ModelStoreSpill, WithoutAFolderAnEvictedUploadIsForgotten) {
  ModelCache cache(budget(20));
  ModelStore store({}, &cache);
  const std::string a = add_weights('t'), b = add_weights('u');
  const std::string fa = ModelStore::fingerprint(a), fb = ModelStore::fingerprint(b);
  ASSERT_TRUE(store.add(fa, a).is_ok());
  ASSERT_TRUE(store.add(fb, b).is_ok());
  EXPECT_FALSE(store.has(fa));
  EXPECT_EQ(store.lookup(fa).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.size(), 1u);
}

TEST_F(ModelStoreSpill, AnUploadBiggerThanTheBudgetIsRefusedAndNotKept) {
  ModelCache cache(budget(10));
  ModelStore store({}, &cache, dir_.string());
  const std::string a = add_weights();
  const std::string fa = ModelStore::fingerprint(a);
  Result<ModelStore::Added> r = store.add(fa, a);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("uploaded model " + fa + " needs 16 bytes"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(store.has(fa));
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace sdx::serve
