#include "serve/model_repository.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace sdx::serve {
namespace {
namespace fs = std::filesystem;

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

}  // namespace
}  // namespace sdx::serve
