// runtime/session_buckets.cc: a session with no shape_buckets option switches a dim proven independent rows to
// automatic buckets once callers have brought half the plan cache's count of signatures, while other threads
// call it (the buckets are published with release/acquire), and every call keeps the exact result.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/session.h"

namespace sdx::runtime {
namespace {

// x [batch, 4] -> Relu -> Neg: rows independent.
std::unique_ptr<Session> rows_model(SessionOptions o) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* v = m.graph->add_input(
      "x", ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbolic("batch"), ir::Dim::fixed(4)}));
  for (const char* op : {"Relu", "Neg"}) {
    ir::Node* n = m.graph->add_node(op, "", op, {v}, {std::string(op) + "_out"});
    n->set_opset(17);
    v = n->output(0);
  }
  v->mutable_type() = ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbolic("batch"), ir::Dim::fixed(4)});
  m.graph->add_output(v);
  return std::move(Session::create(std::move(m), o)).value();
}

// One call at batch b with values that differ per row; checks the rows it gets back.
void call_and_check(const Session& s, int64_t b, int seed) {
  Tensor x = Tensor::allocate(DType::kFloat32, Shape{b, 4}).value();
  for (int64_t i = 0; i < b * 4; ++i) x.data<float>()[i] = static_cast<float>((i * 7 + seed) % 11) - 5.0f;
  Result<std::vector<Datum>> out = s.run({{"x", Datum::tensor(x)}}, {});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out.value()[0].as_tensor();
  ASSERT_EQ(y.shape(), (Shape{b, 4}));
  for (int64_t i = 0; i < b * 4; ++i) ASSERT_EQ(y.data<float>()[i], -std::max(x.data<float>()[i], 0.0f)) << b << " " << i;
}

TEST(SessionBucketsConcurrency, ThreadsCallingWhileBucketsSwitchOnGetExactResults) {
  SessionOptions o;
  o.plan_cache_max_count = 16;  // buckets after 8 signatures, at most 8 sizes
  o.warmup_runs = 1;
  auto s = rows_model(o);
  EXPECT_EQ(s->row_dims().at("batch"), "");
  EXPECT_EQ(s->shape_buckets(), nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) call_and_check(*s, 1 + (i * 5 + t * 3) % 23, t * 100 + i);
    });
  for (std::thread& th : threads) th.join();
  ASSERT_NE(s->shape_buckets(), nullptr);
  EXPECT_NE(s->shape_buckets()->describe().find("batch in automatic buckets (at most 8"), std::string::npos)
      << s->shape_buckets()->describe();
  EXPECT_EQ(s->shape_buckets()->status().rfind("checked", 0), 0u) << s->shape_buckets()->status();
}

TEST(SessionBuckets, OffKeepsExactShapes) {
  SessionOptions o;
  o.plan_cache_max_count = 16;
  o.auto_shape_buckets = false;
  auto s = rows_model(o);
  for (int64_t b = 1; b <= 20; ++b) call_and_check(*s, b, 3);
  EXPECT_EQ(s->shape_buckets(), nullptr);
}

}  // namespace
}  // namespace sdx::runtime
