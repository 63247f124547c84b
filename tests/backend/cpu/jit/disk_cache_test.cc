#include "backend/cpu/jit/disk_cache.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "core/xxh3_digest.h"
#include "backend/cpu/jit/process.h"
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

mode_t mode_of(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

TEST(DiskCache, VersionedFolderAndKeys) {
  test::TempDir tmp;
  DiskCache cache(tmp.path());
  EXPECT_EQ(cache.dir(), tmp.path() + "/v1");
  EXPECT_TRUE(cache.persistent());
  const std::string k = DiskCache::key("src", "g++ 12");
  EXPECT_EQ(k.size(), 16u);
  EXPECT_EQ(DiskCache::key("src", "g++ 12"), k);
  EXPECT_NE(DiskCache::key("src2", "g++ 12"), k);
  EXPECT_NE(DiskCache::key("src", "g++ 13"), k);
  EXPECT_EQ(cache.library_path(k), cache.dir() + "/" + k + ".so");
  EXPECT_EQ(cache.manifest_path(k), cache.dir() + "/" + k + ".manifest");
}

TEST(DiskCache, DefaultRootFollowsEnvironment) {
  {
    test::ScopedEnv env("SDX_CACHE_DIR", "/some/where");
    EXPECT_EQ(DiskCache::default_root(), "/some/where/jit");
    EXPECT_EQ(DiskCache("").dir(), "/some/where/jit/v1");
  }
  EXPECT_EQ(DiskCache::default_root_from("/s", "/x", "/h", "/p"), "/s/jit");
  EXPECT_EQ(DiskCache::default_root_from("", "/x", "/h", "/p"), "/x/sdx/jit");
  EXPECT_EQ(DiskCache::default_root_from(nullptr, nullptr, "/h", "/p"), "/h/.cache/sdx/jit");
  EXPECT_EQ(DiskCache::default_root_from(nullptr, nullptr, "", "/p"), "/p/.cache/sdx/jit");
  EXPECT_EQ(DiskCache::default_root_from(nullptr, nullptr, nullptr, nullptr), "");  // no home: private
}

TEST(DiskCache, WithoutHomeTheHomeFolderComesFromThePasswordDatabaseNeverTmp) {
  test::ScopedEnv a("SDX_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", nullptr);
  const std::string root = DiskCache::default_root();
  EXPECT_EQ(root.rfind("/tmp", 0), std::string::npos) << root;
  EXPECT_EQ(root.find("sdx-cache-"), std::string::npos) << root;
  if (!root.empty()) {
    EXPECT_NE(root.find("/.cache/sdx/jit"), std::string::npos) << root;
  }
}

TEST(DiskCache, NoHomeMeansAPrivateCacheRemovedWithIt) {
  test::TempDir base;
  test::ScopedEnv env("TMPDIR", base.path().c_str());
  std::string root;
  {
    DiskCache cache = DiskCache::private_cache();
    EXPECT_FALSE(cache.persistent());
    ASSERT_TRUE(cache.ensure_dir().is_ok()) << cache.ensure_dir().to_string();
    root = cache.dir().substr(0, cache.dir().size() - 3);
    EXPECT_EQ(cache.dir().rfind(base.path() + "/sdx-jit-private.", 0), 0u) << cache.dir();
    EXPECT_EQ(mode_of(root), 0700u);
    ASSERT_TRUE(cache.write_file(cache.source_path("0123456789abcdef"), "int x;\n").is_ok());
  }
  EXPECT_FALSE(test::file_exists(root));
  EXPECT_TRUE(list(base.path()).empty());
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
  EXPECT_EQ(mode_of(path), 0600u);
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

TEST(DiskCache, EnsureDirMakesPrivateFoldersAndRefusesOpenOnes) {
  test::TempDir tmp;
  DiskCache cache(tmp.path() + "/made/cache");
  ASSERT_TRUE(cache.ensure_dir().is_ok()) << cache.ensure_dir().to_string();
  for (const std::string& d : {tmp.path() + "/made", tmp.path() + "/made/cache", cache.dir(), cache.dir() + "/compilers"})
    EXPECT_EQ(mode_of(d), 0700u) << d;
  for (const std::string& d : {tmp.path() + "/made/cache", cache.dir(), cache.dir() + "/compilers"}) {
    for (mode_t mode : {0770, 0707, 0777}) {
      chmod(d.c_str(), mode);
      Status st = cache.ensure_dir();
      ASSERT_FALSE(st.is_ok()) << d << " " << std::oct << mode;
      EXPECT_NE(st.message().find("JIT disk cache '" + tmp.path() + "/made/cache' refused"), std::string::npos)
          << st.message();
      EXPECT_NE(st.message().find("writable by group or others"), std::string::npos) << st.message();
    }
    chmod(d.c_str(), 0755);  // what older versions made: fine
    EXPECT_TRUE(cache.ensure_dir().is_ok()) << d;
  }
}

TEST(DiskCache, AnotherUsersCacheFolderIsRefused) {
  test::TempDir tmp;
  if (!test::can_chown_to_other_user(tmp.path())) GTEST_SKIP() << "chown to another user is not permitted (not root)";
  DiskCache cache(tmp.path() + "/cache");
  ASSERT_TRUE(cache.ensure_dir().is_ok());
  for (const std::string& d : {tmp.path() + "/cache", cache.dir(), cache.dir() + "/compilers"}) {
    ASSERT_EQ(chown(d.c_str(), test::other_uid(), test::other_uid()), 0);
    Status st = cache.ensure_dir();
    ASSERT_FALSE(st.is_ok()) << d;
    EXPECT_NE(st.message().find("belongs to uid " + std::to_string(test::other_uid())), std::string::npos) << st.message();
    ASSERT_EQ(chown(d.c_str(), geteuid(), getegid()), 0);
  }
  EXPECT_TRUE(cache.ensure_dir().is_ok());
}

// Entries published through publish_library, then damaged: load() never hands them to the
// loader (a planted library's constructor would leave a marker), deletes them, says data_loss.
class DiskCacheEntries : public ::testing::Test {
 protected:
  void SetUp() override {
    kernel_ = test::build_constant_library(tmp_.path(), 7);
    if (kernel_.empty()) GTEST_SKIP() << "no working C++ compiler";
    marker_ = tmp_.path() + "/planted-was-loaded";
    planted_ = tmp_.path() + "/planted.so";
    ASSERT_TRUE(test::build_planted_library(tmp_.path(), planted_, marker_, /*numel=*/4));
    ASSERT_TRUE(cache_.ensure_dir().is_ok());
  }
  // A fresh entry for key_, published as the engine publishes a compile.
  void publish() {
    const std::string tmp = cache_.temp_path(cache_.library_path(key_));
    test::write_file(tmp, test::read_file(kernel_));
    Result<std::shared_ptr<JitLibrary>> lib = cache_.publish_library(tmp, key_, 4);
    ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  }
  std::string so() const { return cache_.library_path(key_); }
  std::string manifest() const { return cache_.manifest_path(key_); }

  test::TempDir tmp_;
  DiskCache cache_{tmp_.path() + "/cache"};
  const std::string key_ = "00112233445566ff";
  std::string kernel_, planted_, marker_;
};

TEST_F(DiskCacheEntries, SoundEntryLoadsAndCarriesItsManifest) {
  EXPECT_EQ(cache_.load(key_, 4).status().code(), StatusCode::kNotFound);
  publish();
  const std::string bytes = test::read_file(so());
  EXPECT_EQ(mode_of(so()), 0600u);
  EXPECT_EQ(test::read_file(manifest()), "sdx-jit-manifest 2\nkey " + key_ + "\nsize " + std::to_string(bytes.size()) +
                                             "\nxxh3_128 " + Xxh3Digest::hex_digest(bytes) + "\n");
  Result<std::shared_ptr<JitLibrary>> lib = cache_.load(key_, 4);
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  float y[4] = {};
  float* out[] = {y};
  lib.value()->segment()(nullptr, out, 0, 4);
  EXPECT_EQ(y[0], 7.0f);
  std::vector<std::string> names = list(cache_.dir());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, std::vector<std::string>({key_ + ".manifest", key_ + ".so", "compilers"}));
  // A manifest without its library is a miss (and is cleaned up).
  unlink(so().c_str());
  EXPECT_EQ(cache_.load(key_, 4).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(test::file_exists(manifest()));
}

TEST_F(DiskCacheEntries, DamagedEntriesAreDeletedNeverLoaded) {
  const std::string other_manifest = CacheManifest{"ffeeddccbbaa9988", 10, std::string(64, 'a')}.to_text();
  const std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"library truncated to half", [&] { truncate(so().c_str(), static_cast<off_t>(test::read_file(so()).size() / 2)); }},
      {"library truncated to nothing", [&] { truncate(so().c_str(), 0); }},
      {"one bit flipped in the library", [&] {
         std::string b = test::read_file(so());
         b[b.size() / 2] ^= 0x10;
         test::write_file(so(), b);
       }},
      {"library replaced", [&] { test::write_file(so(), test::read_file(planted_)); }},
      {"library replaced, manifest size fixed", [&] {
         const std::string b = test::read_file(planted_);
         test::write_file(so(), b);
         CacheManifest m = CacheManifest::parse(test::read_file(manifest())).value();
         m.size = static_cast<int64_t>(b.size());
         test::write_file(manifest(), m.to_text());
       }},
      {"library a link to a planted library with a matching manifest", [&] {
         const std::string b = test::read_file(planted_);
         unlink(so().c_str());
         ASSERT_EQ(symlink(planted_.c_str(), so().c_str()), 0);
         test::write_file(manifest(), CacheManifest{key_, static_cast<int64_t>(b.size()), Xxh3Digest::hex_digest(b)}.to_text());
       }},
      {"manifest missing", [&] { unlink(manifest().c_str()); }},
      {"manifest truncated", [&] { truncate(manifest().c_str(), 20); }},
      {"manifest emptied", [&] { truncate(manifest().c_str(), 0); }},
      {"manifest hash altered", [&] {
         std::string m = test::read_file(manifest());
         m[m.size() - 2] = m[m.size() - 2] == 'a' ? 'b' : 'a';
         test::write_file(manifest(), m);
       }},
      {"manifest of another kernel", [&] { test::write_file(manifest(), other_manifest); }},
      {"manifest a link", [&] {
         const std::string copy = tmp_.path() + "/manifest-copy";
         test::write_file(copy, test::read_file(manifest()));
         unlink(manifest().c_str());
         ASSERT_EQ(symlink(copy.c_str(), manifest().c_str()), 0);
       }},
      {"library group-writable", [&] { chmod(so().c_str(), 0664); }},
  };
  for (const auto& [what, damage] : damages) {
    publish();
    damage();
    Result<std::shared_ptr<JitLibrary>> lib = cache_.load(key_, 4);
    ASSERT_FALSE(lib.is_ok()) << what;
    EXPECT_EQ(lib.status().code(), StatusCode::kDataLoss) << what << ": " << lib.status().to_string();
    EXPECT_NE(lib.status().message().find("deleted"), std::string::npos) << lib.status().message();
    EXPECT_FALSE(test::file_exists(so())) << what;
    EXPECT_FALSE(test::file_exists(manifest())) << what;
    EXPECT_FALSE(test::file_exists(marker_)) << what << ": the planted library was loaded";
  }
}

}  // namespace
}  // namespace sdx::jit
