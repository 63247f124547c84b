#include "backend/cpu/jit/cache_permissions.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit_test_util.h"

namespace sdx::jit {
namespace {

mode_t mode_of(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

std::string make_dir(const std::string& path, mode_t mode) {
  mkdir(path.c_str(), 0700);
  chmod(path.c_str(), mode);  // exact, whatever the umask
  return path;
}

TEST(CachePermissions, CreatesMissingFoldersPrivate) {
  test::TempDir tmp;
  const std::string c = tmp.path() + "/a/b/c";
  ASSERT_TRUE(make_private_dirs(c).is_ok());
  for (const std::string& p : {tmp.path() + "/a", tmp.path() + "/a/b", c}) EXPECT_EQ(mode_of(p), 0700u) << p;
  EXPECT_TRUE(check_private_dir(c).is_ok());
  EXPECT_TRUE(check_folders_above(c).is_ok()) << check_folders_above(c).to_string();
  ASSERT_TRUE(make_private_dirs(c).is_ok());  // existing: fine
}

TEST(CachePermissions, GroupOrWorldWritableFoldersAreRefused) {
  test::TempDir tmp;
  for (mode_t mode : {0775, 0757, 0777, 0770, 01777}) {
    const std::string d = make_dir(tmp.path() + "/d" + std::to_string(mode), mode);
    Status st = check_private_dir(d);
    ASSERT_FALSE(st.is_ok()) << std::oct << mode;
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(st.message().find("writable by group or others"), std::string::npos) << st.message();
  }
  for (mode_t mode : {0700, 0755, 0750, 0500})
    EXPECT_TRUE(check_private_dir(make_dir(tmp.path() + "/ok" + std::to_string(mode), mode)).is_ok()) << std::oct << mode;
}

TEST(CachePermissions, TheCacheFolderIsNotASymbolicLinkOrAFile) {
  test::TempDir tmp;
  const std::string real = make_dir(tmp.path() + "/real", 0700);
  ASSERT_EQ(symlink(real.c_str(), (tmp.path() + "/link").c_str()), 0);
  Status st = check_private_dir(tmp.path() + "/link");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("symbolic link"), std::string::npos) << st.message();
  test::write_file(tmp.path() + "/file", "x");
  EXPECT_FALSE(check_private_dir(tmp.path() + "/file").is_ok());
  EXPECT_FALSE(check_private_dir(tmp.path() + "/missing").is_ok());
}

TEST(CachePermissions, FoldersAboveMayBeWorldWritableOnlyWhenSticky) {
  test::TempDir tmp;
  const std::string open = make_dir(tmp.path() + "/open", 0777);
  const std::string sticky = make_dir(tmp.path() + "/sticky", 01777);
  const std::string group = make_dir(tmp.path() + "/group", 0770);
  Status st = check_folders_above(make_dir(open + "/cache", 0700));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("writable by group or others"), std::string::npos) << st.message();
  EXPECT_FALSE(check_folders_above(make_dir(group + "/cache", 0700)).is_ok());
  EXPECT_TRUE(check_folders_above(make_dir(sticky + "/cache", 0700)).is_ok());  // like /tmp
  // A link on the way is judged by where it points.
  ASSERT_EQ(symlink(open.c_str(), (tmp.path() + "/to-open").c_str()), 0);
  EXPECT_FALSE(check_folders_above(tmp.path() + "/to-open/cache").is_ok());
  const std::string mine = make_dir(tmp.path() + "/mine", 0700);
  make_dir(mine + "/cache", 0700);
  ASSERT_EQ(symlink(mine.c_str(), (tmp.path() + "/to-mine").c_str()), 0);
  EXPECT_TRUE(check_folders_above(tmp.path() + "/to-mine/cache").is_ok());
}

TEST(CachePermissions, AnotherUsersFoldersAreRefused) {
  test::TempDir tmp;
  if (!test::can_chown_to_other_user(tmp.path())) GTEST_SKIP() << "chown to another user is not permitted (not root)";
  const std::string uid = std::to_string(test::other_uid());
  // The cache folder itself.
  const std::string theirs = make_dir(tmp.path() + "/theirs-cache", 0700);
  ASSERT_EQ(chown(theirs.c_str(), test::other_uid(), test::other_uid()), 0);
  Status st = check_private_dir(theirs);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("belongs to uid " + uid), std::string::npos) << st.message();
  // A folder above it, even read-only for us: its owner could rename our cache away.
  const std::string above = make_dir(tmp.path() + "/theirs", 0755);
  const std::string cache = make_dir(above + "/cache", 0700);
  ASSERT_EQ(chown(above.c_str(), test::other_uid(), test::other_uid()), 0);
  EXPECT_TRUE(check_private_dir(cache).is_ok());
  st = check_folders_above(cache);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("belongs to uid " + uid), std::string::npos) << st.message();
  // Our folder holding a link to theirs (e.g. ~/.cache -> /elsewhere): judged by the target.
  const std::string mine = make_dir(tmp.path() + "/mine", 0700);
  ASSERT_EQ(symlink(above.c_str(), (mine + "/link").c_str()), 0);
  EXPECT_FALSE(check_folders_above(mine + "/link/cache").is_ok());
  // A link that belongs to another user, even to our own folder.
  const std::string own = make_dir(tmp.path() + "/own", 0700);
  make_dir(own + "/cache", 0700);
  ASSERT_EQ(symlink(own.c_str(), (mine + "/their-link").c_str()), 0);
  EXPECT_TRUE(check_folders_above(mine + "/their-link/cache").is_ok());
  ASSERT_EQ(lchown((mine + "/their-link").c_str(), test::other_uid(), test::other_uid()), 0);
  st = check_folders_above(mine + "/their-link/cache");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("symbolic link"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sdx::jit
