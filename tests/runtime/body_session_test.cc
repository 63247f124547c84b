// Subgraph bodies as sessions of their own (runtime/body_session.h): an If's branches compiled and
// replayed give the interpreter's results, from many threads at once (run under ThreadSanitizer by the
// `*Concurren*` filter), and a session that cannot lift a body says so and interprets it.
#include "runtime/body_session.h"

#include <gtest/gtest.h>

#include <thread>

#include "runtime/session.h"

namespace sdx::runtime {
namespace {

using ir::Dim;
using ir::TypeInfo;

ir::Attribute graph_attr(const std::string& name, std::shared_ptr<ir::Graph> g) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kGraph;
  a.g = std::move(g);
  return a;
}

// y = Relu(If(c, x + w, x * w)) with x: float[4], w a constant of the main graph, c: bool.
ir::Model if_model() {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("main");
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(4)}));
  ir::Value* c = g.add_input("c", TypeInfo::tensor(DType::kBool, std::vector<Dim>{}));
  const float wv[4] = {1.f, -2.f, 3.f, -4.f};
  ir::Value* w = g.add_initializer("w", Tensor::from_values(DType::kFloat32, Shape({4}), wv));
  auto then_g = std::make_shared<ir::Graph>("then", &g);
  ir::Node* add = then_g->add_node("Add", "", "add", {x, w}, {"t"});
  add->set_opset(17);
  then_g->add_output(add->output(0));
  auto else_g = std::make_shared<ir::Graph>("else", &g);
  ir::Node* mul = else_g->add_node("Mul", "", "mul", {x, w}, {"e"});
  mul->set_opset(17);
  else_g->add_output(mul->output(0));
  ir::Node* iff = g.add_node("If", "", "if0", {c}, {"b"});
  iff->set_opset(17);
  iff->add_attribute(graph_attr("then_branch", then_g));
  iff->add_attribute(graph_attr("else_branch", else_g));
  ir::Node* relu = g.add_node("Relu", "", "relu", {iff->output(0)}, {"y"});
  relu->set_opset(17);
  g.add_output(relu->output(0));
  return m;
}

std::vector<float> expected(const float* x, bool c) {
  const float w[4] = {1.f, -2.f, 3.f, -4.f};
  std::vector<float> y(4);
  for (int i = 0; i < 4; ++i) y[i] = std::max(0.f, c ? x[i] + w[i] : x[i] * w[i]);
  return y;
}

Result<std::vector<float>> call(const Session& s, const float* xv, bool c) {
  Tensor x = Tensor::from_values(DType::kFloat32, Shape({4}), xv);
  const uint8_t cv = c;
  Tensor ct = Tensor::from_values(DType::kBool, Shape(std::vector<int64_t>{}), &cv);
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, s.run({{"x", Datum::tensor(x)}, {"c", Datum::tensor(ct)}}), "");
  const Tensor& y = out[0].as_tensor();
  return std::vector<float>(y.data<float>(), y.data<float>() + 4);
}

TEST(BodySession, BranchesRunAsPlansOfTheirOwn) {
  auto s = Session::create(if_model());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s.value()->interpreted_bodies().empty());
  for (int i = 0; i < 6; ++i) {
    const float x[4] = {0.5f * i, -1.f, 2.f, 0.25f};
    auto y = call(*s.value(), x, i % 2 == 0);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_EQ(y.value(), expected(x, i % 2 == 0)) << "call " << i;
  }
  // The constant the branches copied in can no longer be overridden: the bodies would not see it.
  auto ctx = s.value()->create_context();
  const float nw[4] = {0, 0, 0, 0};
  Status st = s.value()->set_variable(*ctx, "w", Tensor::from_values(DType::kFloat32, Shape({4}), nw));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.to_string();
}

// body_reports(): each branch by name and owner, a plan, with its calls counted and the later ones replayed.
TEST(BodySession, ReportsSayWhichBodiesReplayed) {
  auto s = Session::create(if_model());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (int i = 0; i < 7; ++i) {
    const float x[4] = {0.5f * i, -1.f, 2.f, 0.25f};
    ASSERT_TRUE(call(*s.value(), x, i < 5).is_ok());  // then: 5 calls, else: 2
  }
  std::vector<BodyReport> reports = s.value()->body_reports();
  ASSERT_EQ(reports.size(), 2u);
  for (const BodyReport& r : reports) {
    SCOPED_TRACE(r.body);
    EXPECT_EQ(r.owner, "if0");
    EXPECT_EQ(r.owner_op, "If");
    EXPECT_EQ(r.attribute, r.body == "then" ? "then_branch" : "else_branch");
    EXPECT_TRUE(r.plan);
    EXPECT_TRUE(r.why.empty());
    EXPECT_EQ(r.calls, r.body == "then" ? 5u : 2u);
    EXPECT_EQ(r.new_plans, 1u);  // one input signature
    EXPECT_GT(r.captured_steps, 0);
    EXPECT_TRUE(r.nested.empty());
  }
  const BodyReport& then = reports[0].body == "then" ? reports[0] : reports[1];
  EXPECT_GE(then.replays, 2u);  // warmup, freeze and capture first; replays after
  EXPECT_LT(then.replays, then.calls);
  EXPECT_TRUE(then.last_fallback.empty()) << then.last_fallback;
  // Off: nothing compiled, nothing reported.
  SessionOptions off;
  off.subgraph_plans = false;
  auto interpreted = Session::create(if_model(), off);
  ASSERT_TRUE(interpreted.is_ok());
  EXPECT_TRUE(interpreted.value()->body_reports().empty());
}

TEST(BodySession, ConcurrentCallsShareBodyPlans) {
  SessionOptions o;
  o.intra_op_num_threads = 1;
  auto s = Session::create(if_model(), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const Session& session = *s.value();
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const float x[4] = {0.1f * t, 0.2f * i, -0.3f, 1.f};
        const bool c = (i + t) % 3 == 0;
        auto y = call(session, x, c);
        if (!y.is_ok() || y.value() != expected(x, c)) ++failures[static_cast<size_t>(t)];
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(BodySession, OffInterpretsBodies) {
  SessionOptions o;
  o.subgraph_plans = false;
  auto s = Session::create(if_model(), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const float x[4] = {1, 2, 3, 4};
  auto y = call(*s.value(), x, false);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y.value(), expected(x, false));
  // Overridable again: nothing was copied into a body.
  auto ctx = s.value()->create_context();
  EXPECT_TRUE(s.value()->set_variable(*ctx, "w", Tensor::from_values(DType::kFloat32, Shape({4}), x)).is_ok());
}

}  // namespace
}  // namespace sdx::runtime
