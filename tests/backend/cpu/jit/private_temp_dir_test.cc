#include "backend/cpu/jit/private_temp_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit_test_util.h"

namespace sdx::jit {
namespace {

TEST(PrivateTempDir, PrivateUnderTmpdirAndRemovedWithItsContents) {
  test::TempDir base, outside;
  test::ScopedEnv env("TMPDIR", base.path().c_str());
  std::string path;
  {
    Result<PrivateTempDir> d = PrivateTempDir::create("sdx-test");
    ASSERT_TRUE(d.is_ok()) << d.status().to_string();
    path = d.value().path();
    EXPECT_EQ(path.rfind(base.path() + "/sdx-test.", 0), 0u) << path;
    struct stat st;
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_EQ(st.st_uid, geteuid());
    // Contents, nested folders, and a link to a folder outside (removed, never followed).
    mkdir((path + "/sub").c_str(), 0700);
    test::write_file(path + "/sub/cc1234.s", "x");
    test::write_file(outside.path() + "/keep", "keep");
    ASSERT_EQ(symlink(outside.path().c_str(), (path + "/link").c_str()), 0);
    PrivateTempDir moved = std::move(d).value();
    EXPECT_EQ(moved.path(), path);
  }
  EXPECT_FALSE(test::file_exists(path));
  EXPECT_TRUE(test::file_exists(outside.path() + "/keep"));
}

TEST(PrivateTempDir, NamesAreUnique) {
  Result<PrivateTempDir> a = PrivateTempDir::create("sdx-test"), b = PrivateTempDir::create("sdx-test");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(a.value().path(), b.value().path());
  a.value().remove();
  EXPECT_TRUE(a.value().path().empty());
}

TEST(PrivateTempDir, MissingBaseIsAnError) {
  test::ScopedEnv env("TMPDIR", "/nonexistent/sdx-no-such-folder");
  EXPECT_FALSE(PrivateTempDir::create("sdx-test").is_ok());
}

}  // namespace
}  // namespace sdx::jit
