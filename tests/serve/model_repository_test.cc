#include "serve/model_repository.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include "add_model_util.h"

namespace sdx::serve {
namespace {
namespace fs = std::filesystem;
using test::add_weights;
using test::budget;
using test::runs_right;

// A repository folder of its own per test, removed afterwards. Models here are not valid ONNX (the Python
// test serves real ones): what is checked is the folder layout, names, versions and failure reporting.
class ModelRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("sdx_repo_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& rel, const std::string& bytes) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << bytes;
  }
  fs::path root_;
};

TEST_F(ModelRepositoryTest, ModelNamesAreTheValidFolders) {
  write("b/1/model.onnx", "x");
  write("a/1/model.onnx", "x");
  write(".hidden/1/model.onnx", "x");
  write("file_not_folder", "x");
  ModelRepository repo(root_.string(), {});
  EXPECT_EQ(repo.model_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ModelRepository::valid_model_name("resnet-50_v1.5"));
  EXPECT_FALSE(ModelRepository::valid_model_name(""));
  EXPECT_FALSE(ModelRepository::valid_model_name(".."));
  EXPECT_FALSE(ModelRepository::valid_model_name("a/b"));
}

TEST_F(ModelRepositoryTest, UnknownModelsAndMissingVersionsAreNotFound) {
  fs::create_directories(root_ / "empty" / "latest");  // not a numeric version
  ModelRepository repo(root_.string(), {});
  EXPECT_EQ(repo.load("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(repo.load("../etc").code(), StatusCode::kNotFound);
  Status empty = repo.load("empty");
  EXPECT_EQ(empty.code(), StatusCode::kNotFound);
  EXPECT_NE(empty.message().find("empty/1/model.onnx"), std::string::npos) << empty.message();
  EXPECT_EQ(repo.find("nope", "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(repo.unload("nope").code(), StatusCode::kNotFound);
}

TEST_F(ModelRepositoryTest, AFailedLoadIsInTheIndexWithItsReason) {
  write("broken/1/model.onnx", "not a protobuf");
  ModelRepository repo(root_.string(), {});
  Status st = repo.load("broken");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("model 'broken' version 1"), std::string::npos) << st.message();
  std::vector<ModelRepository::IndexRow> rows = repo.index(false);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "broken");
  EXPECT_EQ(rows[0].state, "UNAVAILABLE");
  EXPECT_EQ(rows[0].reason, st.message());
  EXPECT_TRUE(repo.index(true).empty());
  Result<ModelRepository::Entry> found = repo.find("broken", "");
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("its load failed"), std::string::npos);
}

TEST_F(ModelRepositoryTest, NeverLoadedModelsAreUnavailableUnloaded) {
  write("m/1/model.onnx", "x");
  ModelRepository repo(root_.string(), {});
  std::vector<ModelRepository::IndexRow> rows = repo.index(false);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, "UNAVAILABLE");
  EXPECT_EQ(rows[0].reason, "unloaded");
}

TEST_F(ModelRepositoryTest, EvictedModelsReloadOnDemandAndStayReady) {
  for (const char* m : {"a", "b", "c"}) write(std::string(m) + "/1/model.onnx", add_weights());
  ModelCache cache(budget(40));  // 16 bytes each: two fit
  ModelRepository repo(root_.string(), {}, &cache);
  ASSERT_TRUE(repo.load_all().is_ok());
  EXPECT_EQ(cache.resident_keys().size(), 2u);
  EXPECT_EQ(cache.held_bytes(), 32);
  for (int round = 0; round < 2; ++round) {
    for (const char* m : {"a", "b", "c"}) {
      EXPECT_TRUE(repo.ready(m, "")) << m;  // evicted or not
      EXPECT_TRUE(repo.ready(m, "1")) << m;
      EXPECT_FALSE(repo.ready(m, "2")) << m;
      Result<ModelRepository::Entry> e = repo.find(m, "");
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      runs_right(*e.value().session);
    }
  }
  int64_t misses = 0, evictions = 0;
  for (const char* m : {"a", "b", "c"}) {
    misses += cache.counts(std::string("repository/") + m).misses;
    evictions += cache.counts(std::string("repository/") + m).evictions;
  }
  EXPECT_GE(misses, 4);  // a round-robin over 3 models with room for 2 misses every time after the first
  EXPECT_GE(evictions, 4);
  EXPECT_LE(cache.held_bytes(), 40);
  // The index says which are evicted; they stay READY.
  int evicted_rows = 0;
  for (const ModelRepository::IndexRow& row : repo.index(true)) {
    EXPECT_EQ(row.state, "READY");
    evicted_rows += row.reason.find("evicted") != std::string::npos;
  }
  EXPECT_EQ(evicted_rows, 1);
}

// A version folder may hold a bundle (model.sdx, `sdx compile`'s output) in place of model.onnx; with both,
// the bundle is served. config.json's instance_group count reaches the entry (the run slots' count).
TEST_F(ModelRepositoryTest, BundlesAndInstanceCounts) {
  const int64_t dims[] = {1, 4};
  float x[] = {10, 20, 30, 40};
  Result<std::string> bundle =
      compile_bundle(add_weights(), SessionOptions{}, {{{"x", TensorView{ElementType::kFloat32, dims, 2, x}}}});
  ASSERT_TRUE(bundle.is_ok()) << bundle.status().to_string();
  write("compiled/1/model.sdx", bundle.value());
  write("both/1/model.sdx", bundle.value());
  write("both/1/model.onnx", "not a model: the bundle beside it is what loads");
  write("both/config.json", R"({"instance_group": [{"count": 3, "kind": "KIND_CPU"}]})");
  ModelRepository repo(root_.string(), {});
  ASSERT_TRUE(repo.load_all().is_ok());
  for (const char* m : {"compiled", "both"}) {
    Result<ModelRepository::Entry> e = repo.find(m, "");
    ASSERT_TRUE(e.is_ok()) << m << ": " << e.status().to_string();
    runs_right(*e.value().session);
    EXPECT_EQ(e.value().instance_count, std::string(m) == "both" ? 3 : 0) << m;
  }
  write("gpu/1/model.onnx", add_weights());
  write("gpu/config.json", R"({"instance_group": [{"count": 1, "kind": "KIND_GPU"}]})");
  Status st = repo.load("gpu");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("instance_group[0].kind"), std::string::npos) << st.message();
}

TEST_F(ModelRepositoryTest, AnUnloadedModelIsNotReloadedOnDemand) {
  for (const char* m : {"a", "b", "c"}) write(std::string(m) + "/1/model.onnx", add_weights());
  ModelCache cache(budget(40));
  ModelRepository repo(root_.string(), {}, &cache);
  ASSERT_TRUE(repo.load_all().is_ok());
  std::string evicted;
  for (const char* m : {"a", "b", "c"})
    if (!cache.resident(std::string("repository/") + m)) evicted = m;
  ASSERT_FALSE(evicted.empty());
  ASSERT_TRUE(repo.unload(evicted).is_ok());
  EXPECT_FALSE(repo.ready(evicted, ""));
  EXPECT_EQ(repo.find(evicted, "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache.counts("repository/" + evicted).misses, 0);
  ASSERT_TRUE(repo.unload("a" == evicted ? "b" : "a").is_ok());  // a loaded one: its bytes go
  EXPECT_EQ(cache.held_bytes(), 16);
}

TEST_F(ModelRepositoryTest, AModelTooBigForTheBudgetIsRefused) {
  write("a/1/model.onnx", add_weights());
  ModelCache cache(budget(10));
  ModelRepository repo(root_.string(), {}, &cache);
  Status st = repo.load("a");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("model 'a' needs 16 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("budget of 10 bytes"), std::string::npos) << st.message();
  EXPECT_FALSE(repo.ready("a", ""));
  ASSERT_EQ(repo.index(false).size(), 1u);
  EXPECT_EQ(repo.index(false)[0].reason, st.message());
}

TEST_F(ModelRepositoryTest, AModelARequestHoldsIsNotEvicted) {
  for (const char* m : {"a", "b", "c"}) write(std::string(m) + "/1/model.onnx", add_weights());
  ModelCache cache(budget(40));
  ModelRepository repo(root_.string(), {}, &cache);
  ASSERT_TRUE(repo.load("a").is_ok());
  Result<ModelRepository::Entry> running = repo.find("a", "");  // a request running on a, its lowest value
  ASSERT_TRUE(running.is_ok());
  ASSERT_TRUE(repo.load("b").is_ok());
  ASSERT_TRUE(repo.load("c").is_ok());
  EXPECT_TRUE(cache.resident("repository/a"));
  EXPECT_FALSE(cache.resident("repository/b"));
  runs_right(*running.value().session);
}

TEST_F(ModelRepositoryTest, AnEvictedModelWhoseFilesWentFailsWithTheReason) {
  for (const char* m : {"a", "b"}) write(std::string(m) + "/1/model.onnx", add_weights());
  ModelCache cache(budget(20));  // one at a time
  ModelRepository repo(root_.string(), {}, &cache);
  ASSERT_TRUE(repo.load("a").is_ok());
  ASSERT_TRUE(repo.load("b").is_ok());  // evicts a
  fs::remove_all(root_ / "a" / "1");
  Result<ModelRepository::Entry> e = repo.find("a", "");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("model 'a' was evicted and could not be reloaded"), std::string::npos)
      << e.status().message();
  EXPECT_FALSE(repo.ready("a", ""));
  EXPECT_NE(repo.find("a", "").status().message().find("its load failed"), std::string::npos);
}

// Requests on several threads over three models with room for two, while another thread reloads one
// through the API: every lookup answers a model that runs right, or RESOURCE_EXHAUSTED when every model
// that could go is in use; the held bytes stay within the budget.
TEST_F(ModelRepositoryTest, ConcurrentLookupsEvictionsAndReloads) {
  for (const char* m : {"a", "b", "c"}) write(std::string(m) + "/1/model.onnx", add_weights());
  ModelCache cache(budget(40));
  ModelRepository repo(root_.string(), {}, &cache);
  ASSERT_TRUE(repo.load_all().is_ok());
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      const char* names[] = {"a", "b", "c"};
      for (int i = 0; i < 60; ++i) {
        Result<ModelRepository::Entry> e = repo.find(names[(t + i) % 3], "");
        if (!e.is_ok()) {
          EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted) << e.status().to_string();
          refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        runs_right(*e.value().session);
        ok.fetch_add(1, std::memory_order_relaxed);
        EXPECT_LE(cache.held_bytes(), 40);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 10; ++i) {
      Status st = repo.load("a");
      EXPECT_TRUE(st.is_ok() || st.code() == StatusCode::kResourceExhausted) << st.to_string();
    }
  });
  for (std::thread& th : threads) th.join();
  EXPECT_GT(ok.load(), 90);
  EXPECT_LE(cache.held_bytes(), 40);
}

}  // namespace
}  // namespace sdx::serve
