// Borrowed inputs: a large input the caller passes at the same address in the warmup call and the
// freezing call is read in place by the captured plan (no static buffer, no copy on replay); an input that
// moves later, or an output that would alias one, makes the plan freeze again and copy.
#include <gtest/gtest.h>

#include "../testing/heap_counter.h"
#include "runtime/executor.h"
#include "runtime/replay.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

using ir::TypeInfo;

constexpr int64_t kN = 32 * 1024;  // 128 KiB of float32: above Executor::kBorrowMinBytes

// x[1, n] -> Add c -> Relu -> Mul c -> y; with reshape_out also z = Reshape(x, [n]) (a view of x).
std::unique_ptr<Session> model(int64_t n, bool reshape_out, SessionOptions opts = {}) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  Tensor c = Tensor::allocate(DType::kFloat32, Shape{n}).value();
  for (int64_t i = 0; i < n; ++i) c.data<float>()[i] = 0.5f + 0.001f * static_cast<float>(i % 97);
  ir::Value* cv = m.graph->add_initializer("c", std::move(c));
  auto add = [&](const std::string& op, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Node* node = m.graph->add_node(op, "", op + "_" + out, ins, {out});
    node->set_opset(17);
    return node->output(0);
  };
  ir::Value* y = add("Mul", {add("Relu", {add("Add", {x, cv}, "a")}, "r"), cv}, "y");
  m.graph->add_output(y);
  if (reshape_out) {
    Tensor shape = Tensor::allocate(DType::kInt64, Shape{1}).value();
    shape.data<int64_t>()[0] = n;
    m.graph->add_output(add("Reshape", {x, m.graph->add_initializer("shape", std::move(shape))}, "z"));
  }
  return std::move(Session::create(std::move(m), opts)).value();
}

std::vector<float> values_of(const Datum& d) {
  const Tensor& t = d.as_tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

std::vector<float> reference(const std::vector<float>& x, bool reshape_out) {
  SessionOptions slow;
  slow.execution_mode = ExecutionMode::kSlotBySlot;
  auto ref = model(static_cast<int64_t>(x.size()), reshape_out, slow);
  Tensor t = Tensor::allocate(DType::kFloat32, Shape{1, static_cast<int64_t>(x.size())}).value();
  std::copy(x.begin(), x.end(), t.data<float>());
  auto r = ref->run({{"x", Datum::tensor(t)}});
  EXPECT_TRUE(r.is_ok());
  return values_of(r.value()[0]);
}

void fill(std::vector<float>& x, int call) {
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((static_cast<int>(i) * 7 + call * 3) % 13) - 6.f;
}

TEST(BorrowedInputs, AnInputKeptAtOneAddressIsReadInPlaceWithoutACopyOrAnAllocation) {
  auto s = model(kN, false);
  auto ctx = s->create_context();
  std::vector<float> x(static_cast<size_t>(kN));
  const int64_t dims[] = {1, kN};
  TensorArg arg{DType::kFloat32, dims, 2, x.data()};
  ExecutionReport rep;
  for (int call = 0; call < 3; ++call) {
    fill(x, call);
    ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
    EXPECT_EQ(values_of(ctx->output(0)), reference(x, false)) << "call " << call;
  }
  ASSERT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
  const PlanEntry& e = *ctx->current();
  EXPECT_EQ(e.num_borrowed(), 1);
  EXPECT_FALSE(e.planned()[static_cast<size_t>(e.plan->graph().inputs()[0]->index())].defined())
      << "a borrowed input has no static buffer";
  // The caller refills its array in place: every replay reads the new values, allocating nothing.
  const uint64_t heap_before = test::heap_allocations();
  for (int call = 3; call < 40; ++call) {
    x[static_cast<size_t>(call)] = static_cast<float>(call);
    ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
  }
  EXPECT_EQ(test::heap_allocations() - heap_before, 0u);
  EXPECT_EQ(values_of(ctx->output(0)), reference(x, false));
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
}

TEST(BorrowedInputs, AMovedInputIsFollowedWhileMovesAreRareThenCopied) {
  auto s = model(kN, false);
  auto ctx = s->create_context();
  std::vector<float> x(static_cast<size_t>(kN)), moved(static_cast<size_t>(kN));
  const int64_t dims[] = {1, kN};
  TensorArg arg{DType::kFloat32, dims, 2, x.data()};
  for (int call = 0; call < 3; ++call) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  ASSERT_EQ(ctx->current()->num_borrowed(), 1);
  // A new buffer (the next sequence's KV pool): read at its new address from this call on.
  fill(moved, 9);
  TensorArg elsewhere{DType::kFloat32, dims, 2, moved.data()};
  ExecutionReport rep;
  ASSERT_TRUE(s->run(*ctx, &elsewhere, 1, {}, &rep).is_ok());
  EXPECT_EQ(values_of(ctx->output(0)), reference(moved, false)) << "the moved input's values, not the old address's";
  EXPECT_EQ(ctx->current()->num_borrowed(), 1);
  for (int call = 0; call < 3; ++call) {
    moved[static_cast<size_t>(call)] = 100.f + static_cast<float>(call);
    ASSERT_TRUE(s->run(*ctx, &elsewhere, 1, {}, &rep).is_ok());
    EXPECT_EQ(values_of(ctx->output(0)), reference(moved, false));
    EXPECT_EQ(rep.phase, PlanPhase::kReplaying);
  }
  // An input that moves on every call: after Executor::kMaxBorrowMoves moves the plan copies for good, and
  // then any address replays.
  std::vector<std::vector<float>> buffers(Executor::kMaxBorrowMoves + 2, std::vector<float>(static_cast<size_t>(kN)));
  for (int call = 0; call < Executor::kMaxBorrowMoves + 2; ++call) {  // all alive: every address differs
    std::vector<float>& fresh = buffers[static_cast<size_t>(call)];
    fill(fresh, call + 40);
    TensorArg a{DType::kFloat32, dims, 2, fresh.data()};
    ASSERT_TRUE(s->run(*ctx, &a, 1, {}, &rep).is_ok());
    EXPECT_EQ(values_of(ctx->output(0)), reference(fresh, false));
  }
  EXPECT_EQ(ctx->current()->num_borrowed(), 0);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> fresh(static_cast<size_t>(kN));
    fill(fresh, call + 20);
    TensorArg a{DType::kFloat32, dims, 2, fresh.data()};
    ASSERT_TRUE(s->run(*ctx, &a, 1, {}, &rep).is_ok());
    EXPECT_EQ(values_of(ctx->output(0)), reference(fresh, false));
    EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
    EXPECT_EQ(rep.phase, PlanPhase::kReplaying);
  }
}

TEST(BorrowedInputs, OnlyLargeInputsAtTheSameAddressTwiceAreBorrowed) {
  {  // another address at the freezing call: copied
    auto s = model(kN, false);
    auto ctx = s->create_context();
    std::vector<float> a(static_cast<size_t>(kN)), b(static_cast<size_t>(kN));
    const int64_t dims[] = {1, kN};
    TensorArg first{DType::kFloat32, dims, 2, a.data()}, second{DType::kFloat32, dims, 2, b.data()};
    ASSERT_TRUE(s->run(*ctx, &first, 1).is_ok());
    ASSERT_TRUE(s->run(*ctx, &second, 1).is_ok());
    EXPECT_EQ(ctx->current()->num_borrowed(), 0);
  }
  {  // small: copied
    auto s = model(64, false);
    auto ctx = s->create_context();
    std::vector<float> a(64);
    const int64_t dims[] = {1, 64};
    TensorArg arg{DType::kFloat32, dims, 2, a.data()};
    for (int call = 0; call < 3; ++call) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
    EXPECT_EQ(ctx->current()->phase(), PlanPhase::kReplaying);
    EXPECT_EQ(ctx->current()->num_borrowed(), 0);
  }
}

TEST(BorrowedInputs, AnOutputThatIsAViewOfTheInputIsNeverTheCallersMemory) {
  auto s = model(kN, true);
  auto ctx = s->create_context();
  std::vector<float> x(static_cast<size_t>(kN));
  const int64_t dims[] = {1, kN};
  TensorArg arg{DType::kFloat32, dims, 2, x.data()};
  ExecutionReport rep;
  for (int call = 0; call < 5; ++call) {
    fill(x, call);
    ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
    const std::vector<float> before = x;
    EXPECT_EQ(values_of(ctx->output(1)), before) << "call " << call;
    EXPECT_NE(ctx->output(1).as_tensor().raw_data(), static_cast<const void*>(x.data()));
    std::fill(x.begin(), x.end(), 0.f);  // the caller reuses its array: the output keeps its values
    EXPECT_EQ(values_of(ctx->output(1)), before) << "call " << call;
  }
  EXPECT_EQ(ctx->current()->num_borrowed(), 0);
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
}

}  // namespace
}  // namespace sdx::runtime
