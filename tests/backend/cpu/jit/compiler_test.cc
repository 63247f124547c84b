#include "backend/cpu/jit/compiler.h"

#include <gtest/gtest.h>

#include <fstream>

#include "jit_test_util.h"

namespace sdx::jit {
namespace {

TEST(Compiler, MissingCompilerIsNamed) {
  auto c = find_compiler("/nonexistent/sdx-c++");
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("/nonexistent/sdx-c++"), std::string::npos);
  EXPECT_FALSE(find_compiler("sdx-no-such-compiler-on-path").is_ok());
}

TEST(Compiler, BrokenCompilerFailsItsVersionQuery) {
  test::TempDir tmp;
  std::atomic<bool> cancel{false};
  auto v = query_compiler_version("/bin/false", tmp.path(), &cancel);
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("--version failed"), std::string::npos);
}

TEST(Compiler, BuildsASharedLibraryAndReportsErrors) {
  auto cxx = find_compiler("");
  if (!cxx.is_ok()) GTEST_SKIP() << "no C++ compiler: " << cxx.status().to_string();
  test::TempDir tmp;
  std::atomic<bool> cancel{false};
  auto v = query_compiler_version(cxx.value(), tmp.path(), &cancel);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_FALSE(v.value().empty());
  EXPECT_TRUE(compiler_fingerprint(cxx.value()).is_ok());
  const std::string good = tmp.path() + "/good.cc", bad = tmp.path() + "/bad.cc";
  std::ofstream(good) << "extern \"C\" int f() { return 7; }\n";
  std::ofstream(bad) << "this is not C++\n";
  EXPECT_TRUE(compile_shared_library(cxx.value(), good, tmp.path() + "/good.so", tmp.path() + "/log", &cancel).is_ok());
  Status st = compile_shared_library(cxx.value(), bad, tmp.path() + "/bad.so", tmp.path() + "/log2", &cancel);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("failed (exit status"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sdx::jit
