// The C ABI from C++: what the C test cannot see: heap allocations on the replay path, contexts on
// several threads, and the thread-local last error. (tests/capi/runtime_c_test.c drives the rest from C.)
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "api/load.h"
#include "../testing/heap_counter.h"
#include "runtime/session.h"
#include "sdx/sdx_runtime_c.h"
#include "sdx_onnx.pb.h"

namespace {

// y = Relu(x + c): x float[N, 4], c = {0.5, -1, 2, -3}.
std::string add_relu_model() {
  sdx_onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  for (const char* name : {"x", "y"}) {
    auto* v = name[0] == 'x' ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(1);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    tt->mutable_shape()->add_dim()->set_dim_value(4);
  }
  auto* c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(1);
  c->add_dims(4);
  for (float f : {0.5f, -1.0f, 2.0f, -3.0f}) c->add_float_data(f);
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add");
  add->add_input("x");
  add->add_input("c");
  add->add_output("t");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("t");
  relu->add_output("y");
  return m.SerializeAsString();
}

float expected(float x, int col) {
  static const float kC[4] = {0.5f, -1.0f, 2.0f, -3.0f};
  const float t = x + kC[col];
  return t > 0 ? t : 0;
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string bytes = add_relu_model();
    ASSERT_EQ(sdxCreateRuntime(nullptr, &rt_), SDX_STATUS_OK) << sdxGetLastError();
    ASSERT_EQ(sdxLoadBundleFromMemory(rt_, bytes.data(), bytes.size(), &bundle_), SDX_STATUS_OK) << sdxGetLastError();
  }
  void TearDown() override {
    sdxUnloadBundle(bundle_);
    sdxDestroyRuntime(rt_);
  }

  sdx_runtime_t* rt_ = nullptr;
  sdx_bundle_t* bundle_ = nullptr;
};

// Heap allocations of 100 replayed calls of Session::run on a context of its own.
uint64_t session_replay_allocations(const std::string& model, std::vector<float>& x, const int64_t* dims) {
  using namespace sdx::runtime;
  auto session = sdx::api::load_session_bytes(model);
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  if (!session.is_ok()) return ~uint64_t{0};
  auto ctx = (*session)->create_context();
  const TensorArg arg{sdx::DType::kFloat32, dims, 2, x.data()};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE((*session)->run(*ctx, &arg, 1).is_ok());
  EXPECT_EQ(ctx->phase(), PlanPhase::kReplaying);
  const uint64_t before = sdx::test::heap_allocations();
  for (int i = 0; i < 100; ++i) EXPECT_TRUE((*session)->run(*ctx, &arg, 1).is_ok());
  return sdx::test::heap_allocations() - before;
}

// The C layer adds no allocation to the replay path: mark + run + get output allocate exactly what
// Session::run does, which is nothing once every kernel of the plan has a bound form.
TEST_F(CApi, SteadyStateMarkRunGetOutputAddNoHeapAllocations) {
  sdx_context_t* ctx = nullptr;
  ASSERT_EQ(sdxCreateContext(rt_, bundle_, &ctx), SDX_STATUS_OK);
  std::vector<float> x(4 * 8);
  const int64_t dims[2] = {8, 4};
  sdx_tensor_t t{sizeof(sdx_tensor_t), x.data(), dims, 2, SDX_DTYPE_FLOAT32, x.size() * sizeof(float)};
  sdx_run_info_t info{sizeof(sdx_run_info_t)};
  sdx_execution_report_t rep{};
  rep.struct_size = sizeof rep;
  sdx_tensor_t y{};
  y.struct_size = sizeof y;
  ASSERT_EQ(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_OK);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(sdxRun(ctx, &info, &rep), SDX_STATUS_OK) << sdxGetLastError();
  ASSERT_EQ(rep.phase, SDX_PHASE_REPLAYING);

  bool values_ok = true;
  const uint64_t before = sdx::test::heap_allocations();
  for (int i = 0; i < 100; ++i) {
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>((i + static_cast<int>(k)) % 7) - 3.0f;
    values_ok &= sdxMarkInputPlaceholder(ctx, "x", &t) == SDX_STATUS_OK;  // re-marking is free too
    values_ok &= sdxRun(ctx, &info, &rep) == SDX_STATUS_OK;
    values_ok &= sdxGetOutput(ctx, "y", &y) == SDX_STATUS_OK;
    const float* v = static_cast<const float*>(y.data);
    for (size_t k = 0; k < x.size(); ++k) values_ok &= v[k] == expected(x[k], static_cast<int>(k % 4));
  }
  const uint64_t c_allocations = sdx::test::heap_allocations() - before;
  EXPECT_TRUE(values_ok);
  EXPECT_EQ(rep.replay_count, 101);
  EXPECT_EQ(rep.execution_mode, SDX_MODE_CPU_REPLAY);
  EXPECT_EQ(session_replay_allocations(add_relu_model(), x, dims), 0u);  // Add and Relu replay as bound calls
  EXPECT_EQ(c_allocations, 0u);                                          // and the C layer adds none
  sdxDestroyContext(ctx);
}

TEST_F(CApi, ConcurrentContextsShareOneBundle) {
  constexpr int kThreads = 4;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      sdx_context_t* ctx = nullptr;
      if (sdxCreateContext(rt_, bundle_, &ctx) != SDX_STATUS_OK) {
        ++failures[th];
        return;
      }
      const int64_t rows = 1 + th;  // a shape signature per thread
      std::vector<float> x(static_cast<size_t>(rows) * 4);
      const int64_t dims[2] = {rows, 4};
      const sdx_tensor_t t{sizeof(sdx_tensor_t), x.data(), dims, 2, SDX_DTYPE_FLOAT32, 0};
      failures[th] += sdxMarkInputPlaceholder(ctx, "x", &t) != SDX_STATUS_OK;
      for (int i = 0; i < 50; ++i) {
        for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>((th + i + static_cast<int>(k)) % 9) - 4.0f;
        sdx_tensor_t y{};
        y.struct_size = sizeof y;
        if (sdxRun(ctx, nullptr, nullptr) != SDX_STATUS_OK || sdxGetOutput(ctx, "y", &y) != SDX_STATUS_OK) {
          ++failures[th];
          continue;
        }
        const float* v = static_cast<const float*>(y.data);
        for (size_t k = 0; k < x.size(); ++k) failures[th] += v[k] != expected(x[k], static_cast<int>(k % 4));
      }
      failures[th] += sdxGetPlanPhase(ctx) != SDX_PHASE_REPLAYING;
      sdxDestroyContext(ctx);
    });
  }
  for (auto& t : threads) t.join();
  for (int th = 0; th < kThreads; ++th) EXPECT_EQ(failures[th], 0) << "thread " << th;
}

TEST_F(CApi, LastErrorIsPerThread) {
  sdx_context_t* ctx = nullptr;
  ASSERT_EQ(sdxCreateContext(rt_, bundle_, &ctx), SDX_STATUS_OK);
  EXPECT_EQ(sdxRun(ctx, nullptr, nullptr), SDX_STATUS_FAILED_PRECONDITION);
  const std::string mine = sdxGetLastError();
  EXPECT_NE(mine.find("sdxRun: input 'x' has not been marked"), std::string::npos) << mine;
  std::string theirs = "unset";
  std::thread([&] { theirs = sdxGetLastError(); }).join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(std::string(sdxGetLastError()), mine);
  sdxDestroyContext(ctx);
}

TEST(CApiHeader, EnumsAndVersion) {
  EXPECT_EQ(sdxGetAbiVersion(), SDX_RUNTIME_ABI_VERSION);
  EXPECT_EQ(SDX_PHASE_CUDA_GRAPH_CAPTURED, SDX_PHASE_CAPTURED);
  EXPECT_STREQ(sdxGetStatusName(SDX_STATUS_INTERNAL), "INTERNAL");
  EXPECT_STREQ(sdxGetStatusName(SDX_STATUS_CANCELLED), "CANCELLED");  // sdxTerminate's answer
  EXPECT_STREQ(sdxGetStatusName(static_cast<sdx_status_t>(1234)), "UNKNOWN");
}

}  // namespace
