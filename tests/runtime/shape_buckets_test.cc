// runtime/shape_buckets.h: a "past" input and its mask padded up to buckets (zeros in front), outputs sliced
// back; a session replays one plan per bucket with the exact results; a model whose outputs change with the
// padding fails the first padded call's check and runs exact shapes from then on; malformed options and
// unknown dims are refused naming them.
#include "runtime/shape_buckets.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "../backend/cpu/kernels/kernel_test_util.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

using ir::Dim;
using ir::TypeInfo;

// present = Concat(past [1, P, 2], x [1, 1, 2], axis 1): [1, "P + 1", 2]; masked = present * mask[..., None]
// (mask [1, "P + 1"] float, 0 where padded); out = ReduceSum(masked over axis 1) (exact under zero padding)
// or, with `mean`, ReduceMean (not exact: the padding changes the count).
std::unique_ptr<Session> model(std::vector<std::string> buckets, bool mean = false) {
  ir::Model m;
  m.opsets[""] = 13;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  auto* past = g.add_input("past", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(1), Dim::symbolic("P"), Dim::fixed(2)}));
  auto* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(1), Dim::fixed(1), Dim::fixed(2)}));
  auto* mask = g.add_input("mask", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(1), Dim::symbolic("P + 1")}));
  ir::Node* cat = g.add_node("Concat", "", "cat", {past, x}, {"present"});
  cat->add_attribute(test::attr_i("axis", 1));
  const int64_t axes[] = {2};
  auto* ax = g.add_initializer("axes", Tensor::from_values(DType::kInt64, Shape{1}, axes));
  ir::Node* un = g.add_node("Unsqueeze", "", "un", {mask, ax}, {"mask3"});
  ir::Node* mul = g.add_node("Mul", "", "mul", {cat->output(0), un->output(0)}, {"masked"});
  const int64_t sum_axes[] = {1};
  auto* sax = g.add_initializer("sum_axes", Tensor::from_values(DType::kInt64, Shape{1}, sum_axes));
  ir::Node* red = mean ? g.add_node("ReduceMean", "", "red", {mul->output(0)}, {"out"})
                       : g.add_node("ReduceSum", "", "red", {mul->output(0), sax}, {"out"});
  if (mean) red->add_attribute(test::attr_ints("axes", {1}));
  for (ir::Node* n : {cat, un, mul, red}) n->set_opset(13);
  cat->output(0)->mutable_type() = TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(1), Dim::symbolic("P + 1"), Dim::fixed(2)});
  g.add_output(cat->output(0));
  g.add_output(red->output(0));
  SessionOptions o;
  o.shape_buckets = std::move(buckets);
  o.intra_op_num_threads = 1;
  auto s = Session::create(std::move(m), o);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

std::vector<std::pair<std::string, Datum>> feeds(int64_t p) {
  Tensor past = std::move(Tensor::allocate(DType::kFloat32, Shape{1, p, 2})).value();
  for (int64_t i = 0; i < 2 * p; ++i) past.data<float>()[i] = 0.5f + static_cast<float>(i);
  Tensor x = std::move(Tensor::allocate(DType::kFloat32, Shape{1, 1, 2})).value();
  x.data<float>()[0] = -3.f;
  x.data<float>()[1] = 7.f;
  Tensor mask = std::move(Tensor::allocate(DType::kFloat32, Shape{1, p + 1})).value();
  for (int64_t i = 0; i <= p; ++i) mask.data<float>()[i] = i % 3 == 1 ? 0.f : 1.f;
  return {{"past", Datum::tensor(past)}, {"x", Datum::tensor(x)}, {"mask", Datum::tensor(mask)}};
}

std::vector<float> values(const Datum& d) {
  const Tensor& t = d.as_tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(ShapeBuckets, PadsToBucketsSlicesBackAndReplays) {
  auto s = model({"P=4"});
  auto exact = model({});
  ASSERT_TRUE(s && exact);
  EXPECT_EQ(s->shape_buckets()->describe(), "P in multiples of 4");
  EXPECT_EQ(s->shape_buckets()->status(), "unchecked");
  EXPECT_EQ(exact->shape_buckets(), nullptr);
  int replays = 0;
  for (int64_t p : {1, 2, 3, 4, 5, 6, 7, 8, 0, 9}) {
    ExecutionReport rep;
    auto got = s->run(feeds(p), {}, nullptr, &rep);
    auto want = exact->run(feeds(p));
    ASSERT_TRUE(got.is_ok() && want.is_ok()) << got.status().to_string();
    EXPECT_EQ(got.value()[0].as_tensor().shape(), (Shape{1, p + 1, 2})) << p;
    EXPECT_EQ(values(got.value()[0]), values(want.value()[0])) << p;
    EXPECT_EQ(values(got.value()[1]), values(want.value()[1])) << p;  // the zeros add nothing to the sum
    EXPECT_EQ(rep.bucket_padding, p == 0 ? 0 : (4 - p % 4) % 4) << p;
    replays += rep.mode_used == ExecutionMode::kCpuReplay;
  }
  // Buckets 4 (p 1..4) and 8 (p 5..8): each warms up once, freezes on its second call and replays after.
  EXPECT_GE(replays, 4);
  EXPECT_EQ(s->shape_buckets()->status().rfind("checked: ", 0), 0u) << s->shape_buckets()->status();
}

TEST(ShapeBuckets, AModelThePaddingChangesRunsExactShapesAndSaysWhy) {
  auto s = model({"P=4"}, /*mean=*/true);
  auto exact = model({}, true);
  ASSERT_TRUE(s && exact);
  for (int64_t p : {1, 2, 3}) {
    ExecutionReport rep;
    auto got = s->run(feeds(p), {}, nullptr, &rep);
    auto want = exact->run(feeds(p));
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(values(got.value()[1]), values(want.value()[1])) << p;  // the exact result, never the padded one
    EXPECT_EQ(rep.bucket_padding, 0);
  }
  const std::string st = s->shape_buckets()->status();
  EXPECT_EQ(st.rfind("disabled: ", 0), 0u) << st;
  EXPECT_NE(st.find("output 1 differs"), std::string::npos) << st;
}

// Automatic buckets on a growing length (a decode loop), then a second pass over short lengths.
TEST(ShapeBuckets, AutomaticBucketsFollowTheTraffic) {
  auto s = model({"P=auto:3"});
  auto exact = model({});
  ASSERT_TRUE(s && exact);
  EXPECT_NE(s->shape_buckets()->describe().find("none chosen yet"), std::string::npos);
  int replays = 0, calls = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t p = 1; p <= 100; p += pass + 1) {
      ExecutionReport rep;
      auto got = s->run(feeds(p), {}, nullptr, &rep);
      auto want = exact->run(feeds(p));
      ASSERT_TRUE(got.is_ok() && want.is_ok()) << got.status().to_string();
      ASSERT_EQ(values(got.value()[0]), values(want.value()[0])) << p;
      ASSERT_EQ(values(got.value()[1]), values(want.value()[1])) << p;
      if (pass == 0 && p <= 64) {  // before the first choice: a quarter of the power of two, at least 16
        int64_t p2 = 1;
        while (p2 * 2 <= p) p2 *= 2;
        const int64_t g = std::max<int64_t>(16, p2 / 4);
        EXPECT_EQ(rep.bucket_padding, (p + g - 1) / g * g - p) << p;
      }
      replays += rep.mode_used == ExecutionMode::kCpuReplay;
      ++calls;
    }
  const std::string d = s->shape_buckets()->describe();
  EXPECT_NE(d.find("P in automatic buckets (at most 3 chosen from the traffic; now ["), std::string::npos) << d;
  EXPECT_GT(replays, calls * 3 / 4) << d;  // a handful of warmups and captures per bucket
}

// Two bucketed dims on one input: zeros in front of both axes, the data in the corner, and back out.
TEST(ShapeBuckets, TwoDimsPadAndSliceBack) {
  const std::vector<ValueInfo> io = {
      {"x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::symbolic("A"), Dim::fixed(2), Dim::symbolic("B")})}};
  auto b = ShapeBuckets::create({"A=4", "B=3"}, io, io);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  Tensor x = std::move(Tensor::allocate(DType::kFloat32, Shape{3, 2, 2})).value();
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = 1.f + static_cast<float>(i);
  const Datum dx = Datum::tensor(x);
  auto call = b.value()->pad({&dx});
  ASSERT_TRUE(call.is_ok()) << call.status().to_string();
  ASSERT_TRUE(call.value().padded());
  const Tensor& p = call.value().feeds[0].as_tensor();
  ASSERT_EQ(p.shape(), (Shape{4, 2, 3}));
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t k = 0; k < 3; ++k) {
        const float want = a < 1 || k < 1 ? 0.f : x.data<float>()[((a - 1) * 2 + c) * 2 + (k - 1)];
        EXPECT_EQ(p.data<float>()[(a * 2 + c) * 3 + k], want) << a << "," << c << "," << k;
      }
  auto back = b.value()->unpad({call.value().feeds[0]}, {0}, call.value());
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(values(back.value()[0]), values(dx));
}

// Calls from several threads at once (run under ThreadSanitizer by scripts/test.sh): the first padded call's
// check and the automatic choice are shared state; every result is the exact one.
TEST(ShapeBuckets, ConcurrentCallsShareTheCheckAndTheAutomaticChoice) {
  for (const char* spec : {"P=4", "P=auto:3"}) {
    auto s = model({spec});
    auto exact = model({});
    ASSERT_TRUE(s && exact);
    std::vector<std::vector<float>> want;
    for (int64_t p = 0; p < 40; ++p) want.push_back(values(exact->run(feeds(p)).value()[1]));
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 80; ++i) {
          const int64_t p = (i * 7 + t * 3) % 40;
          auto got = s->run(feeds(p));
          if (!got.is_ok() || values(got.value()[1]) != want[static_cast<size_t>(p)]) wrong.fetch_add(1);
        }
      });
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0) << spec;
    EXPECT_EQ(s->shape_buckets()->status().rfind("checked: ", 0), 0u) << spec << ": " << s->shape_buckets()->status();
  }
}

TEST(ShapeBuckets, BadOptionsAreRefusedNamingThem) {
  const std::vector<ValueInfo> inputs = {
      {"past", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::symbolic("batch"), Dim::symbolic("P")})}};
  for (const char* bad : {"P", "P=", "P=0", "P=-2", "P=abc", "=4", "P=4x", "P=auto:0", "P=auto:65", "P=autox", "P=auto:"}) {
    auto b = ShapeBuckets::create({bad}, inputs, {});
    ASSERT_FALSE(b.is_ok()) << bad;
    EXPECT_NE(b.status().message().find(std::string("'") + bad + "'"), std::string::npos) << b.status().message();
    EXPECT_NE(b.status().message().find("NAME=STEP"), std::string::npos);
  }
  auto b = ShapeBuckets::create({"Q=8"}, inputs, {});
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("'Q'"), std::string::npos);
  EXPECT_NE(b.status().message().find("'batch', 'P'"), std::string::npos) << b.status().message();
  auto none = ShapeBuckets::create({}, inputs, {});
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none.value(), nullptr);
  // Through the session: the option's error names the entry.
  SessionOptions o;
  o.shape_buckets = {"nope=8"};
  ir::Model m;
  m.opsets[""] = 13;
  m.graph = std::make_shared<ir::Graph>("g");
  auto* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::symbolic("N")}));
  ir::Node* n = m.graph->add_node("Relu", "", "r", {x}, {"y"});
  n->set_opset(13);
  m.graph->add_output(n->output(0));
  auto s = Session::create(std::move(m), o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("'nope'"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace sdx::runtime
