#include "jit/disk_cache.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "jit/process.h"
#include "jit_test_util.h"

namespace sdx::jit {
namespace {

std::vector<std::string> list(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

TEST(DiskCache, VersionedFolderAndKeys) {
  test::TempDir tmp;
  DiskCache cache(tmp.path());
  EXPECT_EQ(cache.dir(), tmp.path() + "/v1");
  const std::string k = DiskCache::key("src", "g++ 12");
  EXPECT_EQ(k.size(), 16u);
  EXPECT_EQ(DiskCache::key("src", "g++ 12"), k);
  EXPECT_NE(DiskCache::key("src2", "g++ 12"), k);
  EXPECT_NE(DiskCache::key("src", "g++ 13"), k);
  EXPECT_EQ(cache.library_path(k), cache.dir() + "/" + k + ".so");
}

TEST(DiskCache, DefaultRootFollowsEnvironment) {
  const char* old = std::getenv("SDX_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("SDX_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(DiskCache::default_root(), "/some/where/jit");
  EXPECT_EQ(DiskCache("").dir(), "/some/where/jit/v1");
  if (old) setenv("SDX_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("SDX_CACHE_DIR");
}

TEST(DiskCache, WritesThroughATemporaryFileAndRename) {
  test::TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.ensure_dir().is_ok());
  const std::string path = cache.dir() + "/abc.cc";
  EXPECT_FALSE(DiskCache::exists(path));
  ASSERT_TRUE(cache.write_file(path, "int x;\n").is_ok());
  EXPECT_TRUE(DiskCache::exists(path));
  EXPECT_EQ(read_text_file(path), "int x;\n");
  ASSERT_TRUE(cache.write_file(path, "int y;\n").is_ok());  // replaced atomically
  EXPECT_EQ(read_text_file(path), "int y;\n");
  const std::string t1 = cache.temp_path(path), t2 = cache.temp_path(path);
  EXPECT_NE(t1, t2);
  EXPECT_EQ(t1.rfind(path + ".tmp.", 0), 0u);
  for (const std::string& name : list(cache.dir())) EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
}

TEST(DiskCache, CompilerVersionsByFingerprint) {
  test::TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.ensure_dir().is_ok());
  EXPECT_EQ(cache.compiler_version("/usr/bin/g++|1|2"), "");
  ASSERT_TRUE(cache.store_compiler_version("/usr/bin/g++|1|2", "g++ (Debian 12.2.0-14) 12.2.0").is_ok());
  EXPECT_EQ(cache.compiler_version("/usr/bin/g++|1|2"), "g++ (Debian 12.2.0-14) 12.2.0");
  EXPECT_EQ(cache.compiler_version("/usr/bin/g++|1|3"), "");  // another fingerprint: another compiler
}

}  // namespace
}  // namespace sdx::jit
