// Bundles end to end: compile a model with a oneDNN-packed MatMul and Conv, load the bundle from a file
// (mapped, weights borrowed in place), and check that kernels adopt the packed weights it carries, that
// packed bytes of the wrong size are packed again rather than used, and that outputs equal a cold
// session's bit for bit either way.
#include "api/bundle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <thread>
#include <atomic>

#include "api/load.h"
#include "backend/packed_weights.h"
#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_writer.h"
#include "runtime/context.h"

namespace sdx::api {
namespace {

using ir::TypeInfo;

Tensor random_floats(Shape s, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(s)).value();
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 0.1f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// x[1,16,12,12] -> Conv(32 3x3, pad 1) -> Relu -> Reshape [32, 144] -> MatMul w[144,64] -> y[32,64]
std::string conv_matmul_model() {
  ir::Model m;
  m.opsets[""] = 17;
  m.ir_version = 8;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::fixed(1), ir::Dim::fixed(16), ir::Dim::fixed(12), ir::Dim::fixed(12)}));
  ir::Value* w = g.add_initializer("w", random_floats(Shape{32, 16, 3, 3}, 1));
  ir::Value* b = g.add_initializer("b", random_floats(Shape{32}, 2));
  ir::Node* conv = g.add_node("Conv", "", "conv", {x, w, b}, {"c"});
  ir::Attribute pads;
  pads.name = "pads";
  pads.type = ir::AttrType::kInts;
  pads.ints = {1, 1, 1, 1};
  conv->add_attribute(pads);
  ir::Node* relu = g.add_node("Relu", "", "relu", {conv->output(0)}, {"r"});
  Tensor shape = Tensor::allocate(DType::kInt64, Shape{2}).value();
  shape.data<int64_t>()[0] = 32;
  shape.data<int64_t>()[1] = 144;
  ir::Node* reshape = g.add_node("Reshape", "", "reshape", {relu->output(0), g.add_initializer("shape", shape)}, {"f"});
  ir::Node* mm = g.add_node("MatMul", "", "mm", {reshape->output(0), g.add_initializer("w2", random_floats(Shape{144, 64}, 3))},
                            {"y"});
  for (ir::Node* n : {conv, relu, reshape, mm}) n->set_opset(17);
  g.add_output(mm->output(0));
  return onnx::save_model(m).value().bytes;
}

std::vector<float> run_twice(runtime::Session& s, const Tensor& x) {
  auto ctx = s.create_context();
  const int64_t dims[] = {1, 16, 12, 12};
  runtime::TensorArg arg{DType::kFloat32, dims, 4, x.raw_data()};
  std::vector<float> out;
  for (int i = 0; i < 3; ++i) {  // freeze + capture, then replay
    EXPECT_TRUE(s.run(*ctx, &arg, 1).is_ok());
    const Tensor& y = ctx->output(0).as_tensor();
    out.assign(y.data<float>(), y.data<float>() + y.numel());
  }
  return out;
}

std::string write_temp(const std::string& bytes) {
  char path[] = "/tmp/sdx_bundle_test_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(Bundle, KernelsAdoptPackedWeightsAndWrongSizesArePackedAgain) {
  const std::string model = conv_matmul_model();
  const Tensor x = random_floats(Shape{1, 16, 12, 12}, 4);
  const int64_t dims[] = {1, 16, 12, 12};
  NamedInputs call = {{"x", runtime::TensorArg{DType::kFloat32, dims, 4, x.raw_data()}}};
  auto bytes = compile_bundle(model, {}, {call});
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  runtime::SessionOptions no_cache;
  no_cache.disk_plan_cache = false;  // a cold session, whatever the user's cache holds
  auto cold = load_session_bytes(model, no_cache);
  ASSERT_TRUE(cold.is_ok()) << cold.status().to_string();
  const std::vector<float> want = run_twice(**cold, x);

  auto b = bundle::read_bundle(*bytes);
  ASSERT_TRUE(b.is_ok());
  if (b->packed.empty()) GTEST_SKIP() << "no kernel packed its weights (built without oneDNN?)";
  EXPECT_FALSE(b->weights.empty());

  const std::string path = write_temp(*bytes);
  auto s = load_session_file(path);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(run_twice(**s, x), want);
  EXPECT_EQ((*s)->packed_weights()->hits(), b->packed.size());
  EXPECT_EQ((*s)->packed_weights()->misses(), 0u);

  // Every packed entry one byte short: nothing is adopted, everything is packed again, same outputs.
  std::vector<std::string> shorter;
  for (const bundle::PackedRecord& r : b->packed) shorter.emplace_back(r.bytes.substr(0, r.bytes.size() - 1));
  for (size_t i = 0; i < shorter.size(); ++i) b->packed[i].bytes = shorter[i];
  const std::string damaged = bundle::write_bundle(*b);
  const std::string path2 = write_temp(damaged);
  auto s2 = load_session_file(path2);
  ASSERT_TRUE(s2.is_ok()) << s2.status().to_string();
  EXPECT_EQ(run_twice(**s2, x), want);
  EXPECT_EQ((*s2)->packed_weights()->hits(), 0u);
  EXPECT_EQ((*s2)->packed_weights()->misses(), b->packed.size());
  std::remove(path.c_str());
  std::remove(path2.c_str());
}

// A loaded bundle's plans are frozen and bound at load: the first context holds the bound plan and its
// first call replays; contexts after it start empty.
TEST(Bundle, PlansAreBoundAtLoadAndTheFirstContextReplays) {
  const std::string model = conv_matmul_model();
  const Tensor x = random_floats(Shape{1, 16, 12, 12}, 4);
  const int64_t dims[] = {1, 16, 12, 12};
  runtime::TensorArg arg{DType::kFloat32, dims, 4, x.raw_data()};
  auto bytes = compile_bundle(model, {}, {{{"x", arg}}});
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  auto s = load_session_bytes(*bytes);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  auto first = (*s)->create_context();
  ASSERT_EQ(first->entries().size(), 1u);
  EXPECT_EQ(first->entries()[0]->phase(), runtime::PlanPhase::kCaptured);
  EXPECT_TRUE((*s)->create_context()->entries().empty());
  runtime::ExecutionReport rep;
  ASSERT_TRUE((*s)->run(*first, &arg, 1, {}, &rep).is_ok());
  EXPECT_EQ(rep.mode_used, runtime::ExecutionMode::kCpuReplay);
  EXPECT_EQ(rep.replay_count, 1);
}

// Loading verifies the checksum on a second thread; the bound context goes to exactly one of two
// threads that create contexts at once (the other freezes and binds on its first call), both replay
// from their first call, and both get the cold outputs.
TEST(Bundle, ConcurrentContextsTakeTheBoundContextOnce) {
  const std::string model = conv_matmul_model();
  const Tensor x = random_floats(Shape{1, 16, 12, 12}, 4);
  const int64_t dims[] = {1, 16, 12, 12};
  runtime::TensorArg arg{DType::kFloat32, dims, 4, x.raw_data()};
  auto bytes = compile_bundle(model, {}, {{{"x", arg}}});
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  runtime::SessionOptions no_cache;
  no_cache.disk_plan_cache = false;
  auto cold = load_session_bytes(model, no_cache);
  ASSERT_TRUE(cold.is_ok()) << cold.status().to_string();
  const std::vector<float> want = run_twice(**cold, x);
  auto s = load_session_bytes(*bytes);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::atomic<int> bound{0}, replayed_first{0};
  std::vector<std::vector<float>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      auto ctx = (*s)->create_context();
      // relaxed: counters read after join(), which orders them.
      if (!ctx->entries().empty()) bound.fetch_add(1, std::memory_order_relaxed);
      for (int i = 0; i < 3; ++i) {
        runtime::ExecutionReport rep;
        if (!(*s)->run(*ctx, &arg, 1, {}, &rep).is_ok()) return;
        if (i == 0 && rep.mode_used == runtime::ExecutionMode::kCpuReplay) replayed_first.fetch_add(1, std::memory_order_relaxed);
      }
      const Tensor& y = ctx->output(0).as_tensor();
      got[static_cast<size_t>(t)].assign(y.data<float>(), y.data<float>() + y.numel());
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bound.load(), 1);
  EXPECT_EQ(replayed_first.load(), 2);
  EXPECT_EQ(got[0], want);
  EXPECT_EQ(got[1], want);
}

TEST(Bundle, AnInitializerPastTheWeightsSectionIsRefused) {
  const std::string model = conv_matmul_model();
  const Tensor x = random_floats(Shape{1, 16, 12, 12}, 4);
  const int64_t dims[] = {1, 16, 12, 12};
  auto bytes = compile_bundle(model, {}, {{{"x", runtime::TensorArg{DType::kFloat32, dims, 4, x.raw_data()}}}});
  ASSERT_TRUE(bytes.is_ok());
  auto b = bundle::read_bundle(*bytes);
  ASSERT_TRUE(b.is_ok());
  b->weights = b->weights.substr(0, b->weights.size() / 2);  // the graph still names the whole range
  auto s = load_bundle(bundle::write_bundle(*b), {});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("outside the bundle's weights section"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace sdx::api
