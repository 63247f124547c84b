// Session: input validation errors name the input and what was expected;
// unsupported operators are listed in one error; a session runs concurrently.
#include "runtime/session.h"

#include <gtest/gtest.h>

#include <thread>

namespace sdx::runtime {
namespace {

using ir::Dim;
using ir::TypeInfo;

// y = Relu(x) with x: float[N, 3]
std::unique_ptr<Session> relu_session() {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  auto* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::symbolic("N"), Dim::fixed(3)}));
  ir::Node* n = m.graph->add_node("Relu", "", "relu0", {x}, {"y"});
  n->set_opset(17);
  m.graph->add_output(n->output(0));
  auto s = Session::create(std::move(m));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

Tensor floats(Shape shape) {
  auto t = Tensor::allocate(DType::kFloat32, shape, cpu_allocator(), true);
  return std::move(t).value();
}

TEST(Session, RunsAndReportsMetadata) {
  auto s = relu_session();
  ASSERT_TRUE(s);
  ASSERT_EQ(s->inputs().size(), 1u);
  EXPECT_EQ(s->inputs()[0].type.shape_string(), "[N, 3]");
  Tensor x = floats(Shape{2, 3});
  x.data<float>()[0] = -1.f;
  x.data<float>()[1] = 2.f;
  auto out = s->run({{"x", Datum::tensor(x)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out.value()[0].as_tensor();
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_EQ(y.data<float>()[1], 2.f);
}

TEST(Session, WrongInputName) {
  auto s = relu_session();
  auto out = s->run({{"nope", Datum::tensor(floats(Shape{1, 3}))}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("'nope'"), std::string::npos);
  EXPECT_NE(out.status().message().find("x"), std::string::npos);
}

TEST(Session, MissingInput) {
  auto s = relu_session();
  auto out = s->run({});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("missing input 'x'"), std::string::npos) << out.status().message();
}

TEST(Session, WrongDtype) {
  auto s = relu_session();
  auto t = Tensor::allocate(DType::kInt64, Shape{1, 3}).value();
  auto out = s->run({{"x", Datum::tensor(t)}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("expected element type float but got int64"), std::string::npos)
      << out.status().message();
}

TEST(Session, WrongRankAndDims) {
  auto s = relu_session();
  auto out = s->run({{"x", Datum::tensor(floats(Shape{3}))}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("expected rank 2"), std::string::npos) << out.status().message();
  out = s->run({{"x", Datum::tensor(floats(Shape{2, 4}))}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("dimension 1 must be 3"), std::string::npos) << out.status().message();
}

TEST(Session, WrongOutputName) {
  auto s = relu_session();
  auto out = s->run({{"x", Datum::tensor(floats(Shape{1, 3}))}}, {"z"});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("'z'"), std::string::npos);
}

TEST(Session, UnsupportedOpsAreListedTogether) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  auto* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  ir::Node* a = m.graph->add_node("FancyOp", "", "fancy_a", {x}, {"a"});
  ir::Node* b = m.graph->add_node("FancyOp", "", "fancy_b", {a->output(0)}, {"b"});
  ir::Node* c = m.graph->add_node("OtherOp", "com.example", "other", {b->output(0)}, {"c"});
  for (ir::Node* n : {a, b, c}) n->set_opset(1);
  m.graph->add_output(c->output(0));
  auto s = Session::create(std::move(m));
  ASSERT_FALSE(s.is_ok());
  const std::string& msg = s.status().message();
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("2 unsupported operators"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'fancy_a', 'fancy_b'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("com.example.OtherOp"), std::string::npos) << msg;
}

// 8 threads x 1,000 runs on one session, alternating two input shapes (each thread's context
// warms up and freezes both signatures), must match single-threaded results. Also run under TSAN.
TEST(Session, ConcurrentRunsMatchSingleThreaded) {
  auto s = relu_session();
  auto input = [](int rows, int seed) {
    Tensor x = floats(Shape{rows, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((seed * 7 + i * 13) % 11) - 5.f;
    return x;
  };
  auto expected = [&](int rows, int seed) {
    auto out = s->run({{"x", Datum::tensor(input(rows, seed))}});
    const Tensor& y = out.value()[0].as_tensor();
    return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
  };
  std::vector<std::vector<float>> want;
  for (int seed = 0; seed < 16; ++seed) want.push_back(expected(1 + seed % 2, seed));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        const int seed = (t + i) % 16;
        auto out = s->run({{"x", Datum::tensor(input(1 + seed % 2, seed))}});
        if (!out.is_ok()) {
          ++failures;
          continue;
        }
        const Tensor& y = out.value()[0].as_tensor();
        if (std::vector<float>(y.data<float>(), y.data<float>() + y.numel()) != want[static_cast<size_t>(seed)]) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace sdx::runtime
