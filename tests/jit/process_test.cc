#include "jit/process.h"

#include <gtest/gtest.h>

#include <chrono>

#include "jit_test_util.h"

namespace sdx::jit {
namespace {

TEST(Process, ExitStatusAndOutput) {
  test::TempDir tmp;
  const std::string out = tmp.path() + "/out.txt";
  auto rc = run_process({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, out, nullptr, 30);
  ASSERT_TRUE(rc.is_ok()) << rc.status().to_string();
  EXPECT_EQ(rc.value(), 3);
  EXPECT_EQ(read_text_file(out), "hello\noops\n");
}

TEST(Process, MissingProgram) {
  test::TempDir tmp;
  auto rc = run_process({"/nonexistent/sdx-no-such-compiler"}, tmp.path() + "/o", nullptr, 30);
  EXPECT_FALSE(rc.is_ok());
}

TEST(Process, CancelKillsTheChild) {
  test::TempDir tmp;
  std::atomic<bool> cancel{true};
  const auto t0 = std::chrono::steady_clock::now();
  auto rc = run_process({"/bin/sleep", "30"}, tmp.path() + "/o", &cancel, 60);
  EXPECT_FALSE(rc.is_ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(Process, TimeLimit) {
  test::TempDir tmp;
  auto rc = run_process({"/bin/sleep", "30"}, tmp.path() + "/o", nullptr, 0.2);
  EXPECT_FALSE(rc.is_ok());
  EXPECT_NE(rc.status().message().find("ran past"), std::string::npos);
}

}  // namespace
}  // namespace sdx::jit
