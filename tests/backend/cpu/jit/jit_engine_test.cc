// The JIT engine end to end on real compilers: compile, disk cache across engines (as across
// processes: a warm cache runs no compiler at all), damaged cache entries (rebuilt, never loaded),
// refused cache folders, broken and missing compilers, cancellation.
#include "backend/cpu/jit/jit_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <unistd.h>

#include "core/xxh3_digest.h"

#include "backend/cpu/jit/fused_kernel.h"
#include "jit_test_util.h"

namespace sdx::jit {
namespace {

// y = sigmoid(relu(x * c) + x) on [3, 5] with c: [5]
SegmentIR sample_ir() {
  SegmentIR ir;
  ir.domain = Shape{3, 5};
  ir.inputs = {SegmentInput::broadcast(ir.domain, ir.domain).value(), SegmentInput::broadcast(Shape{5}, ir.domain).value()};
  ir.instrs = {{JitOp::kMul, {0, 1}, 0.f}, {JitOp::kRelu, {2, -1}, 0.f}, {JitOp::kAdd, {3, 0}, 0.f},
               {JitOp::kAbs, {4, -1}, 0.f}};
  ir.outputs = {5};
  return ir;
}

float reference(float x, float c) {
  float m = x * c;
  float r = m > 0.0f ? m : 0.0f;
  float a = r + x;
  return std::fabs(a);
}

JitOptions options_for(const std::string& cache, const std::string& compiler) {
  JitOptions o;
  o.cache_dir = cache;
  o.compiler = compiler;
  return o;
}

TEST(JitEngine, CompilesInTheBackgroundThenHitsTheDiskCacheWithoutACompiler) {
  test::TempDir tmp;
  const std::string log = tmp.path() + "/compiler.log";
  const std::string cxx = test::recording_compiler(tmp.path(), log);
  if (cxx.empty()) GTEST_SKIP() << "no C++ compiler on this machine";
  std::vector<float> x(15), c(5), y(15, -1.f);
  for (int i = 0; i < 15; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i - 7) * 0.37f;
  for (int i = 0; i < 5; ++i) c[static_cast<size_t>(i)] = 0.5f + 0.25f * static_cast<float>(i);
  const float* in[] = {x.data(), c.data()};
  float* out[] = {y.data()};
  {
    JitEngine jit(options_for(tmp.path() + "/cache", cxx));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    EXPECT_EQ(jit.request(sample_ir()), k);  // one source, one kernel
    ASSERT_TRUE(jit.wait_idle(120));
    ASSERT_EQ(k->state(), JitState::kReady) << k->failure();
    EXPECT_FALSE(k->cache_hit());
    run_segment(*k, in, out);
    for (int i = 0; i < 15; ++i) {
      const float want = reference(x[static_cast<size_t>(i)], c[static_cast<size_t>(i % 5)]);
      EXPECT_EQ(std::memcmp(&y[static_cast<size_t>(i)], &want, 4), 0) << i;
    }
    const JitStats st = jit.stats();
    EXPECT_EQ(st.compiled, 1);
    EXPECT_EQ(st.compiler_runs, 2);  // --version, then the compile
    EXPECT_TRUE(DiskCache::exists(jit.cache().library_path(k->key())));
    EXPECT_TRUE(DiskCache::exists(jit.cache().source_path(k->key())));
  }
  const int runs = test::count_lines(log);
  EXPECT_EQ(runs, 2);
  // A second engine (as a second process): READY at once from the disk cache, no compiler run.
  JitEngine jit(options_for(tmp.path() + "/cache", cxx));
  std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
  ASSERT_EQ(k->state(), JitState::kReady);
  EXPECT_TRUE(k->cache_hit());
  EXPECT_EQ(jit.stats().compiler_runs, 0);
  EXPECT_EQ(jit.stats().disk_cache_hits, 1);
  EXPECT_EQ(test::count_lines(log), runs);
  std::vector<float> y2(15, -2.f);
  float* out2[] = {y2.data()};
  run_segment(*k, in, out2);
  EXPECT_EQ(std::memcmp(y.data(), y2.data(), 15 * 4), 0);
}

// Runs sample_ir's kernel on fixed inputs and checks it against reference(), bit for bit.
void expect_correct(const CompiledSegment& k) {
  std::vector<float> x(15), c(5), y(15, -1.f);
  for (int i = 0; i < 15; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i - 7) * 0.37f;
  for (int i = 0; i < 5; ++i) c[static_cast<size_t>(i)] = 0.5f + 0.25f * static_cast<float>(i);
  const float* in[] = {x.data(), c.data()};
  float* out[] = {y.data()};
  run_segment(k, in, out);
  for (int i = 0; i < 15; ++i) {
    const float want = reference(x[static_cast<size_t>(i)], c[static_cast<size_t>(i % 5)]);
    EXPECT_EQ(std::memcmp(&y[static_cast<size_t>(i)], &want, 4), 0) << i;
  }
}

TEST(JitEngineCache, DamagedKernelFilesAreRebuiltNeverLoaded) {
  test::TempDir tmp;
  const std::string marker = tmp.path() + "/planted-was-loaded", planted = tmp.path() + "/planted.so";
  if (!test::build_planted_library(tmp.path(), planted, marker)) GTEST_SKIP() << "no working C++ compiler";
  const std::string cache = tmp.path() + "/cache";
  std::string key;
  {
    JitEngine jit(options_for(cache, ""));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    ASSERT_TRUE(jit.wait_idle(120));
    ASSERT_EQ(k->state(), JitState::kReady) << k->failure();
    key = k->key();
  }
  const DiskCache paths(cache);
  const std::string so = paths.library_path(key), manifest = paths.manifest_path(key);
  auto flip = [](const std::string& path, size_t at) {
    std::string b = test::read_file(path);
    b[at % b.size()] ^= 0x01;
    test::write_file(path, b);
  };
  const std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"library truncated", [&] { truncate(so.c_str(), static_cast<off_t>(test::read_file(so).size() / 3)); }},
      {"library emptied", [&] { truncate(so.c_str(), 0); }},
      {"a bit flipped in the library's code", [&] { flip(so, test::read_file(so).size() / 2); }},
      {"a bit flipped in the library's header", [&] { flip(so, 20); }},
      {"library replaced by a planted one", [&] { test::write_file(so, test::read_file(planted)); }},
      {"manifest deleted", [&] { unlink(manifest.c_str()); }},
      {"manifest's hash altered", [&] { flip(manifest, test::read_file(manifest).size() - 5); }},
      {"manifest truncated", [&] { truncate(manifest.c_str(), 30); }},
  };
  for (const auto& [what, damage] : damages) {
    damage();
    JitEngine jit(options_for(cache, ""));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    ASSERT_TRUE(jit.wait_idle(120)) << what;
    ASSERT_EQ(k->state(), JitState::kReady) << what << ": " << k->failure();
    EXPECT_FALSE(k->cache_hit()) << what;
    EXPECT_EQ(jit.stats().rebuilt, 1) << what;
    EXPECT_EQ(jit.stats().compiled, 1) << what;
    expect_correct(*k);
    EXPECT_FALSE(test::file_exists(marker)) << what << ": the planted library was loaded";
  }
  // Rebuilt for good: the next engine finds it sound.
  JitEngine jit(options_for(cache, ""));
  std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
  ASSERT_EQ(k->state(), JitState::kReady);
  EXPECT_TRUE(k->cache_hit());
  EXPECT_EQ(jit.stats().rebuilt, 0);
  expect_correct(*k);
}

TEST(JitEngineCache, GroupOrWorldWritableCacheFolderIsRefused) {
  test::TempDir tmp;
  const std::string cache = tmp.path() + "/cache";
  for (const std::string& sub : {std::string(), std::string("/v1")}) {
    ASSERT_TRUE(DiskCache(cache).ensure_dir().is_ok());
    chmod((cache + sub).c_str(), 0777);
    testing::internal::CaptureStderr();
    JitEngine jit(options_for(cache, "/bin/false"));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    const std::string err = testing::internal::GetCapturedStderr();
    ASSERT_EQ(k->state(), JitState::kFailed) << sub;  // at once: nothing is read from the folder
    EXPECT_NE(k->failure().find("JIT disk cache '" + cache + "' refused"), std::string::npos) << k->failure();
    EXPECT_NE(k->failure().find("writable by group or others"), std::string::npos) << k->failure();
    EXPECT_EQ(jit.stats().compiler_runs, 0);
    EXPECT_EQ(jit.request(sample_ir())->state(), JitState::kFailed);
    if (sub.empty()) {
      EXPECT_NE(err.find("sdx: warning: JIT disk cache"), std::string::npos) << err;  // once per folder
    }
    chmod((cache + sub).c_str(), 0700);
  }
}

TEST(JitEngineCache, PlantedLibraryInAnotherUsersCacheIsNeverLoaded) {
  test::TempDir tmp;
  if (!test::can_chown_to_other_user(tmp.path())) GTEST_SKIP() << "chown to another user is not permitted (not root)";
  const std::string marker = tmp.path() + "/planted-was-loaded", planted = tmp.path() + "/planted.so";
  if (!test::build_planted_library(tmp.path(), planted, marker)) GTEST_SKIP() << "no working C++ compiler";
  const std::string cache = tmp.path() + "/cache";
  std::string key;
  {
    JitEngine jit(options_for(cache, ""));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    ASSERT_TRUE(jit.wait_idle(120));
    ASSERT_EQ(k->state(), JitState::kReady) << k->failure();
    key = k->key();
  }
  // "Another user" plants a library under the exact kernel name, with a manifest that matches
  // it, and owns the folders: a cache that passes every content check but is not ours.
  const DiskCache paths(cache);
  const std::string bytes = test::read_file(planted);
  test::write_file(paths.library_path(key), bytes);
  test::write_file(paths.manifest_path(key),
                   CacheManifest{key, static_cast<int64_t>(bytes.size()), Xxh3Digest::hex_digest(bytes)}.to_text());
  for (const std::string& owned : {cache, cache + "/v1"}) {
    ASSERT_EQ(std::system(("chown -R " + std::to_string(test::other_uid()) + " '" + owned + "'").c_str()), 0);
    JitEngine jit(options_for(cache, ""));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    ASSERT_TRUE(jit.wait_idle(60));
    ASSERT_EQ(k->state(), JitState::kFailed) << owned;
    EXPECT_NE(k->failure().find("refused"), std::string::npos) << k->failure();
    EXPECT_NE(k->failure().find("belongs to uid " + std::to_string(test::other_uid())), std::string::npos) << k->failure();
    EXPECT_EQ(jit.stats().compiler_runs, 0);
    EXPECT_FALSE(test::file_exists(marker)) << "the planted library was loaded";
    ASSERT_EQ(std::system(("chown -R " + std::to_string(geteuid()) + " '" + cache + "'").c_str()), 0);
  }
}

TEST(JitEngine, MissingOrBrokenCompilersFailWithAReason) {
  test::TempDir tmp;
  {
    JitEngine jit(options_for(tmp.path(), "/nonexistent/sdx-c++"));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    EXPECT_EQ(k->state(), JitState::kFailed);  // known at once: nothing to run
    EXPECT_NE(k->failure().find("/nonexistent/sdx-c++"), std::string::npos);
  }
  {
    JitEngine jit(options_for(tmp.path(), "/bin/false"));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    ASSERT_TRUE(jit.wait_idle(60));
    EXPECT_EQ(k->state(), JitState::kFailed);
    EXPECT_NE(k->failure().find("/bin/false"), std::string::npos) << k->failure();
    EXPECT_EQ(jit.stats().failed, 1);
  }
  {
    // A compiler that answers --version but cannot compile.
    const std::string fake = tmp.path() + "/fake-c++";
    std::ofstream(fake) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'fake c++ 1.0'; exit 0; fi\n"
                           "echo 'fake: internal compiler error' >&2; exit 4\n";
    chmod(fake.c_str(), 0755);
    JitEngine jit(options_for(tmp.path(), fake));
    std::shared_ptr<CompiledSegment> k = jit.request(sample_ir());
    ASSERT_TRUE(jit.wait_idle(60));
    ASSERT_EQ(k->state(), JitState::kFailed);
    EXPECT_NE(k->failure().find("internal compiler error"), std::string::npos) << k->failure();
    EXPECT_FALSE(DiskCache::exists(jit.cache().library_path(k->key())));
  }
}

TEST(JitEngineConcurrency, DestroyWhileCompiling) {
  test::TempDir tmp;
  // A "compiler" that takes long: destroying the engine kills it instead of waiting.
  const std::string slow = tmp.path() + "/slow-c++";
  std::ofstream(slow) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'slow c++ 1.0'; exit 0; fi\nexec sleep 60\n";
  chmod(slow.c_str(), 0755);
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<CompiledSegment> k;
  {
    JitEngine jit(options_for(tmp.path(), slow));
    k = jit.request(sample_ir());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  EXPECT_NE(k->state(), JitState::kReady);  // still safe to query after the engine is gone
}

}  // namespace
}  // namespace sdx::jit
