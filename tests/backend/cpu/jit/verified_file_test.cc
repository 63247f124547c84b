#include "backend/cpu/jit/verified_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/xxh3_digest.h"
#include "jit_test_util.h"

namespace sdx::jit {
namespace {

TEST(VerifiedFile, HashesTheBytesReadThroughItsDescriptor) {
  test::TempDir tmp;
  const std::string path = tmp.path() + "/k.so";
  std::string bytes(200000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  test::write_file(path, bytes);
  chmod(path.c_str(), 0644);
  Result<VerifiedFile> f = VerifiedFile::open(path, 1 << 20);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value().size(), 200000);
  EXPECT_EQ(f.value().digest(), Xxh3Digest::hex_digest(bytes));
  EXPECT_GE(f.value().fd(), 0);
  // The descriptor is the file that was checked, whatever is renamed over the path later.
  test::write_file(tmp.path() + "/other", "other");
  ASSERT_EQ(rename((tmp.path() + "/other").c_str(), path.c_str()), 0);
  struct stat st;
  ASSERT_EQ(fstat(f.value().fd(), &st), 0);
  EXPECT_EQ(st.st_size, 200000);
  EXPECT_EQ(fcntl(f.value().fd(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(VerifiedFile, RefusesWhatCouldHoldSomeoneElsesCode) {
  test::TempDir tmp;
  const std::string real = tmp.path() + "/real.so";
  test::write_file(real, "bytes");
  chmod(real.c_str(), 0600);
  EXPECT_EQ(VerifiedFile::open(tmp.path() + "/missing.so", 1 << 20).status().code(), StatusCode::kNotFound);
  // A symbolic link, even to a good file.
  ASSERT_EQ(symlink(real.c_str(), (tmp.path() + "/link.so").c_str()), 0);
  Result<VerifiedFile> f = VerifiedFile::open(tmp.path() + "/link.so", 1 << 20);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("symbolic link"), std::string::npos) << f.status().message();
  // Writable by group or others, unless we own it and ask for it to be made private.
  chmod(real.c_str(), 0664);
  f = VerifiedFile::open(real, 1 << 20);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("writable by group or others"), std::string::npos) << f.status().message();
  f = VerifiedFile::open(real, 1 << 20, /*make_private=*/true);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  struct stat st;
  ASSERT_EQ(stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Not a regular file; too large.
  mkfifo((tmp.path() + "/fifo").c_str(), 0600);
  EXPECT_FALSE(VerifiedFile::open(tmp.path() + "/fifo", 1 << 20).is_ok());  // and does not block
  EXPECT_FALSE(VerifiedFile::open(real, 3).is_ok());
  EXPECT_EQ(read_private_file(real, 100).value(), "bytes");
  EXPECT_FALSE(read_private_file(real, 3).is_ok());
}

TEST(VerifiedFile, AnotherUsersFileIsRefused) {
  test::TempDir tmp;
  if (!test::can_chown_to_other_user(tmp.path())) GTEST_SKIP() << "chown to another user is not permitted (not root)";
  const std::string path = tmp.path() + "/theirs.so";
  test::write_file(path, "bytes");
  chmod(path.c_str(), 0644);
  ASSERT_EQ(chown(path.c_str(), test::other_uid(), test::other_uid()), 0);
  for (bool make_private : {false, true}) {
    Result<VerifiedFile> f = VerifiedFile::open(path, 1 << 20, make_private);
    ASSERT_FALSE(f.is_ok());
    EXPECT_NE(f.status().message().find("belongs to uid"), std::string::npos) << f.status().message();
  }
  EXPECT_FALSE(read_private_file(path, 100).is_ok());
}

}  // namespace
}  // namespace sdx::jit
