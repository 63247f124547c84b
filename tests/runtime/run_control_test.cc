// Stopping a run in progress (runtime/run_control.h) through the public API's terminate flag: a long Loop
// stops between steps with kCancelled, the flag set from another thread (run under ThreadSanitizer: the
// test names say Concurrent), and the session runs right afterwards.
#include "runtime/run_control.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sdx/sdx.h"
#include "sdx_onnx.pb.h"

namespace sdx::runtime {
namespace {

void value_info(sdx_onnx::ValueInfoProto* v, const char* name, int elem, std::initializer_list<int64_t> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// y = x + trips (a Loop adding 1 to a float[64] `trips` times).
std::string loop_model(int64_t trips) {
  sdx_onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("main");
  value_info(g->add_input(), "x", 1, {64});
  value_info(g->add_output(), "y", 1, {64});
  auto* t = g->add_initializer();
  t->set_name("trips");
  t->set_data_type(7);
  t->add_int64_data(trips);
  auto* c = g->add_initializer();
  c->set_name("cond");
  c->set_data_type(9);
  c->add_int32_data(1);
  auto* loop = g->add_node();
  loop->set_op_type("Loop");
  for (const char* in : {"trips", "cond", "x"}) loop->add_input(in);
  loop->add_output("y");
  auto* attr = loop->add_attribute();
  attr->set_name("body");
  attr->set_type(sdx_onnx::AttributeProto::GRAPH);
  auto* body = attr->mutable_g();
  body->set_name("body");
  value_info(body->add_input(), "i", 7, {});
  value_info(body->add_input(), "cond_in", 9, {});
  value_info(body->add_input(), "v_in", 1, {64});
  value_info(body->add_output(), "cond_out", 9, {});
  value_info(body->add_output(), "v_out", 1, {64});
  auto* one = body->add_initializer();
  one->set_name("one");
  one->set_data_type(1);
  one->add_float_data(1.0f);
  auto* add = body->add_node();
  add->set_op_type("Add");
  add->add_input("v_in");
  add->add_input("one");
  add->add_output("v_out");
  auto* id = body->add_node();
  id->set_op_type("Identity");
  id->add_input("cond_in");
  id->add_output("cond_out");
  return m.SerializeAsString();
}

TEST(RunControl, ScopesNest) {
  std::atomic<bool> a{false}, b{true};
  EXPECT_EQ(current_terminate_flag(), nullptr);
  {
    TerminateScope outer(&a);
    EXPECT_FALSE(terminate_requested(current_terminate_flag()));
    {
      TerminateScope inner(&b);
      EXPECT_TRUE(terminate_requested(current_terminate_flag()));
    }
    EXPECT_EQ(current_terminate_flag(), &a);
  }
  EXPECT_EQ(current_terminate_flag(), nullptr);
  EXPECT_EQ(terminated_status().code(), StatusCode::kCancelled);
}

TEST(RunControl, ConcurrentTerminateStopsALongRunAndTheContextRunsAgain) {
  Result<Session> s = Session::load_bytes(loop_model(20'000'000));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::atomic<bool> stop{false};
  std::unique_ptr<RunContext> ctx = s->create_context();
  ctx->set_terminate_flag(&stop);
  float x[64] = {};
  const int64_t dims[] = {64};
  const TensorView in{ElementType::kFloat32, dims, 1, x};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.store(true, std::memory_order_release);  // publishes only the request
  });
  const auto t0 = std::chrono::steady_clock::now();
  Status st = s->run(*ctx, &in, 1);
  setter.join();
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.to_string();
  EXPECT_NE(st.message().find("terminate flag"), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));

  Result<Session> short_loop = Session::load_bytes(loop_model(3));
  ASSERT_TRUE(short_loop.is_ok());
  std::unique_ptr<RunContext> c2 = short_loop->create_context();
  c2->set_terminate_flag(&stop);
  EXPECT_EQ(short_loop->run(*c2, &in, 1).code(), StatusCode::kCancelled);  // still set
  stop.store(false, std::memory_order_release);
  for (int i = 0; i < 3; ++i) {  // warmup, capture, replay: each right after the stopped run
    ASSERT_TRUE(short_loop->run(*c2, &in, 1).is_ok());
    TensorView out;
    ASSERT_TRUE(c2->output_view(0, &out));
    EXPECT_EQ(static_cast<const float*>(out.data)[63], 3.0f);
  }
  // The named-feeds run takes the flag per call.
  stop.store(true, std::memory_order_release);
  Result<Value> v = Value::borrow(in);
  ASSERT_TRUE(v.is_ok());
  auto outs = short_loop->run({{"x", v.value()}}, {}, nullptr, &stop);
  EXPECT_EQ(outs.status().code(), StatusCode::kCancelled);
  outs = short_loop->run({{"x", v.value()}});
  EXPECT_TRUE(outs.is_ok());
}

}  // namespace
}  // namespace sdx::runtime
