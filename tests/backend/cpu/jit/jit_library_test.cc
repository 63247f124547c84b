// Loading through verified descriptors: the library loaded is the file that was checked, and
// a descriptor number reused after an unload never brings back the old library (glibc matches
// "/proc/self/fd/N" against the names of loaded objects before it opens anything).
#include "backend/cpu/jit/jit_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "jit_test_util.h"

namespace sdx::jit {
namespace {

float run(const JitLibrary& lib) {
  float y[4] = {0, 0, 0, 0};
  float* out[] = {y};
  lib.segment()(nullptr, out, 0, 4);
  return y[3];
}

std::shared_ptr<JitLibrary> load(const std::string& path, int64_t numel = 4) {
  Result<VerifiedFile> f = VerifiedFile::open(path, 1 << 24);
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  if (!f.is_ok()) return nullptr;
  Result<std::shared_ptr<JitLibrary>> lib = JitLibrary::load(std::move(f).value(), numel);
  EXPECT_TRUE(lib.is_ok()) << lib.status().to_string();
  return lib.is_ok() ? lib.value() : nullptr;
}

TEST(JitLibrary, LoadsThroughTheVerifiedDescriptorAndNeverConfusesReusedDescriptors) {
  test::TempDir tmp;
  const std::string a = test::build_constant_library(tmp.path(), 1), b = test::build_constant_library(tmp.path(), 2),
                    c = test::build_constant_library(tmp.path(), 3);
  if (a.empty() || b.empty() || c.empty()) GTEST_SKIP() << "no working C++ compiler";
  std::shared_ptr<JitLibrary> la = load(a);
  ASSERT_TRUE(la);
  EXPECT_EQ(run(*la), 1.0f);
  EXPECT_EQ(la->path(), a);
  EXPECT_EQ(la->digest().size(), 32u);
  // The same file again: the loaded library is shared, not loaded twice.
  std::shared_ptr<JitLibrary> la2 = load(a);
  EXPECT_EQ(la2, la);
  la2.reset();
  std::shared_ptr<JitLibrary> lb = load(b);
  ASSERT_TRUE(lb);
  EXPECT_EQ(run(*lb), 2.0f);
  // Unload a; c is likely to get a's descriptor number, and must still be c.
  la.reset();
  std::shared_ptr<JitLibrary> lc = load(c);
  ASSERT_TRUE(lc);
  EXPECT_EQ(run(*lc), 3.0f);
  EXPECT_EQ(run(*lb), 2.0f);
  // And a, loaded again after its unload, is a.
  la = load(a);
  ASSERT_TRUE(la);
  EXPECT_EQ(run(*la), 1.0f);
}

TEST(JitLibrary, WrongShapeOrForeignLibraryIsRefused) {
  test::TempDir tmp;
  const std::string a = test::build_constant_library(tmp.path(), 1);
  if (a.empty()) GTEST_SKIP() << "no working C++ compiler";
  Result<VerifiedFile> f = VerifiedFile::open(a, 1 << 24);
  ASSERT_TRUE(f.is_ok());
  Result<std::shared_ptr<JitLibrary>> lib = JitLibrary::load(std::move(f).value(), 5);
  ASSERT_FALSE(lib.is_ok());
  EXPECT_NE(lib.status().message().find("another shape"), std::string::npos) << lib.status().message();
  // Not a library at all.
  test::write_file(tmp.path() + "/junk.so", std::string(4096, 'j'));
  f = VerifiedFile::open(tmp.path() + "/junk.so", 1 << 24);
  ASSERT_TRUE(f.is_ok());
  EXPECT_FALSE(JitLibrary::load(std::move(f).value(), 4).is_ok());
  // After a refusal the good library still loads.
  std::shared_ptr<JitLibrary> ok = load(a);
  ASSERT_TRUE(ok);
  EXPECT_EQ(run(*ok), 1.0f);
}

}  // namespace
}  // namespace sdx::jit
