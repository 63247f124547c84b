// The execution-mode table: names and ids, the MLIR_CPU alias, strict parsing, and the fallback chain
// a session runs when a mode's backend is missing (every GPU and vendor mode on a CPU-only build).
#include "runtime/execution_mode.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/device_kind.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

TEST(ExecutionMode, NamesAndIdsRoundTrip) {
  for (int id = 0; id <= 16; ++id) {
    ExecutionMode m;
    ASSERT_TRUE(execution_mode_from_id(id, &m)) << id;
    ExecutionMode parsed;
    ASSERT_TRUE(parse_execution_mode(execution_mode_name(m), &parsed)) << id;
    EXPECT_EQ(parsed, m);
    ASSERT_TRUE(parse_execution_mode(std::to_string(id), &parsed));
    EXPECT_EQ(parsed, m);
  }
  ExecutionMode m;
  EXPECT_FALSE(execution_mode_from_id(17, &m));
  EXPECT_FALSE(execution_mode_from_id(-1, &m));
  ASSERT_TRUE(parse_execution_mode("cuda_graphs", &m));
  EXPECT_EQ(m, ExecutionMode::kCudaGraphs);
  ASSERT_TRUE(parse_execution_mode("MLIR_CPU", &m));
  EXPECT_EQ(m, ExecutionMode::kCpuReplay);
  for (const char* bad : {"BOGUS", "", "CUDA GRAPHS", "17", "-1", "cpu"}) EXPECT_FALSE(parse_execution_mode(bad, &m)) << bad;
  EXPECT_NE(execution_mode_names().find("CUDA_GRAPHS"), std::string::npos);
}

TEST(ExecutionMode, EveryModeResolvesToOneTheCpuRuns) {
  for (int id = 0; id <= 16; ++id) {
    ExecutionMode m;
    ASSERT_TRUE(execution_mode_from_id(id, &m));
    const ModeResolution r = resolve_execution_mode(m);
    EXPECT_EQ(r.requested, m);
    EXPECT_TRUE(r.used == ExecutionMode::kCpuReplay || r.used == ExecutionMode::kSlotBySlot) << id;
    const bool runs_as_asked = m == ExecutionMode::kAuto || m == r.used;
    EXPECT_EQ(r.reason.empty(), runs_as_asked) << execution_mode_name(m) << ": " << r.reason;
  }
  EXPECT_EQ(resolve_execution_mode(ExecutionMode::kAuto).used, ExecutionMode::kCpuReplay);
  EXPECT_EQ(resolve_execution_mode(ExecutionMode::kSlotBySlot).used, ExecutionMode::kSlotBySlot);
}

TEST(ExecutionMode, GpuModesFallBackAlongTheirChainAndSayWhy) {
  ASSERT_FALSE(device_available(DeviceKind::kCuda, nullptr));
  const ModeResolution cg = resolve_execution_mode(ExecutionMode::kCudaGraphs);
  EXPECT_EQ(cg.used, ExecutionMode::kCpuReplay);
  EXPECT_EQ(cg.reason, "CUDA_GRAPHS is not available (this build of sdx has no CUDA backend); running CPU_REPLAY");
  const ModeResolution triton = resolve_execution_mode(ExecutionMode::kTriton);
  EXPECT_EQ(triton.reason,
            "TRITON, NVRTC, PTX, CUDA_GRAPHS are not available (this build of sdx has no CUDA backend); running CPU_REPLAY");
}

ir::Model relu_model() {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
  ir::Node* n = m.graph->add_node("Relu", "", "r", {x}, {"y"});
  n->set_opset(17);
  m.graph->add_output(n->output(0));
  return m;
}

// SDX_EXECUTION_MODE for the scope (restored after).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(ExecutionMode, SessionRunsTheFallbackAndReportsIt) {
  ScopedEnv env("SDX_EXECUTION_MODE", "CUDA_GRAPHS");
  auto s = Session::create(relu_model());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->execution_mode().used, ExecutionMode::kCpuReplay);
  auto ctx = (*s)->create_context();
  const float x[4] = {-1, 2, -3, 4};
  const int64_t dims[] = {1, 4};
  TensorArg arg{DType::kFloat32, dims, 2, x};
  ExecutionReport rep;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*s)->run(*ctx, &arg, 1, {}, &rep).is_ok());
  EXPECT_EQ(rep.mode_requested, ExecutionMode::kCudaGraphs);
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);  // the third call replays
  ASSERT_NE(rep.mode_fallback_reason, nullptr);
  EXPECT_NE(std::string(rep.mode_fallback_reason).find("no CUDA backend"), std::string::npos);
  EXPECT_EQ(ctx->output(0).as_tensor().data<float>()[1], 2.f);
}

TEST(ExecutionMode, AMisspeltModeIsAnError) {
  ScopedEnv env("SDX_EXECUTION_MODE", "BOGUS");
  auto s = Session::create(relu_model());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("SDX_EXECUTION_MODE='BOGUS' is not an execution mode"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace sdx::runtime
