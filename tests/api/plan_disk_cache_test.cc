// The disk plan cache from C++: sessions on several threads capture plans of different input shapes at
// once while the writer thread persists them (run under ThreadSanitizer: the name says Concurrent), the
// entry ends up holding every signature, and the next session starts from it.
#include "api/plan_disk_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "api/load.h"
#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_writer.h"
#include "runtime/context.h"

namespace sdx::api {
namespace {

using ir::TypeInfo;

// x[n, 8] -> Relu -> Neg -> y (n symbolic)
std::string dynamic_model() {
  ir::Model m;
  m.opsets[""] = 17;
  m.ir_version = 8;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input(
      "x", TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbolic("n"), ir::Dim::fixed(8)}));
  ir::Node* relu = m.graph->add_node("Relu", "", "relu", {x}, {"r"});
  ir::Node* neg = m.graph->add_node("Neg", "", "neg", {relu->output(0)}, {"y"});
  relu->set_opset(17);
  neg->set_opset(17);
  m.graph->add_output(neg->output(0));
  return onnx::save_model(m).value().bytes;
}

// Sets the cache's variables for one test and puts the suite's back (tests/testing/suite_environment_test.cc).
struct CacheEnv {
  explicit CacheEnv(const std::string& dir) {
    setenv("SDX_DISK_PLAN_CACHE", "1", 1);
    setenv("SDX_DISK_PLAN_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheEnv() {
    setenv("SDX_DISK_PLAN_CACHE", "0", 1);
    unsetenv("SDX_DISK_PLAN_CACHE_DIR");
  }
};

TEST(PlanDiskCache, ConcurrentCapturesAllReachTheEntryAndTheNextSessionStartsFromIt) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("sdx_plan_cache_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  CacheEnv env(dir.string());
  const std::string model = dynamic_model();
  {
    auto s = load_session_bytes(model);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto ctx = (*s)->create_context();
        const int64_t dims[] = {t + 1, 8};
        std::vector<float> x(static_cast<size_t>((t + 1) * 8), 1.5f);
        runtime::TensorArg arg{DType::kFloat32, dims, 2, x.data()};
        for (int i = 0; i < 3; ++i) EXPECT_TRUE((*s)->run(*ctx, &arg, 1).is_ok());
      });
    }
    for (std::thread& th : threads) th.join();
  }  // the session's end waits for its writer
  const std::string key = PlanDiskCache::key(model, runtime::SessionOptions::from_env({}).value());
  const std::filesystem::path entry = dir / "v1" / (key + ".sdx");
  ASSERT_TRUE(std::filesystem::exists(entry)) << entry;
  auto mapped = MappedFile::open(entry.string());
  ASSERT_TRUE(mapped.is_ok());
  auto b = bundle::read_bundle((*mapped)->bytes());
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(b->plans.size(), 4u);

  auto again = load_session_bytes(model);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ((*again)->seeded_plans().size(), 4u);
  auto ctx = (*again)->create_context();
  const int64_t dims[] = {3, 8};
  std::vector<float> x(24, -2.f);
  runtime::TensorArg arg{DType::kFloat32, dims, 2, x.data()};
  runtime::ExecutionReport rep;
  ASSERT_TRUE((*again)->run(*ctx, &arg, 1, {}, &rep).is_ok());
  EXPECT_NE(rep.phase, runtime::PlanPhase::kWarmup);  // frozen from the entry on the first call
  ctx.reset();  // contexts before their session
  again->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sdx::api
