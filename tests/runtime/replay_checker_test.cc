#include "runtime/replay_checker.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend/kernel_registry.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::runtime {
namespace {

// A test-only op whose slot-by-slot kernel copies its input, while its bound (replay) form writes
// x + 1: one kernel that corrupts its output in replay only.
class CorruptInReplayKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
    std::copy(x.data<float>(), x.data<float>() + x.numel(), y.data<float>());
    return Status::ok();
  }
  Result<std::unique_ptr<backend::BoundKernel>> prepare(const backend::PrepareContext& ctx) const override {
    const float* x = ctx.input(0).data<float>();
    float* y = const_cast<float*>(ctx.output(0).data<float>());
    const int64_t n = ctx.input(0).numel();
    return backend::bind_call([=] {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
      return Status::ok();
    });
  }
};
SDX_OP_SCHEMA_DOMAIN(CorruptInReplay, "sdx.test")
    .attrs({})
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(ir::infer_same_as_input(0))
    .infer_shape(ir::shape_same_as_input(0));
const backend::KernelRegistrar kCorrupt(
    {"CorruptInReplay", "sdx.test", 1, backend::kAnyOpset, backend::kernel_factory<CorruptInReplayKernel>()});

// x -> Relu -> [middle] -> Neg -> Abs -> y
std::unique_ptr<Session> model(const std::string& middle_op, const std::string& middle_domain) {
  ir::Model m;
  m.opsets[""] = 17;
  m.opsets["sdx.test"] = 1;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* v = m.graph->add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
  auto add = [&](const std::string& op, const std::string& domain, const std::string& name) {
    ir::Node* n = m.graph->add_node(op, domain, name, {v}, {name + "_out"});
    n->set_opset(domain.empty() ? 17 : 1);
    v = n->output(0);
  };
  add("Relu", "", "relu");
  add(middle_op, middle_domain, "middle");
  add("Neg", "", "neg");
  add("Abs", "", "abs");
  m.graph->add_output(v);
  SessionOptions o;
  o.optimizer.enabled = false;
  o.jit.enabled = false;
  auto s = Session::create(std::move(m), o);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return std::move(s).value();
}

std::vector<std::pair<std::string, Datum>> feeds(std::vector<float> v) {
  Tensor t = Tensor::allocate(DType::kFloat32, Shape{1, static_cast<int64_t>(v.size())}).value();
  std::copy(v.begin(), v.end(), t.data<float>());
  return {{"x", Datum::tensor(t)}};
}

TEST(ReplayChecker, NamesTheSlotOfTheKernelThatDivergesInReplayOnly) {
  auto s = model("CorruptInReplay", "sdx.test");
  auto c = check_replay(*s, feeds({1, -2, 3, 4, 5}));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE(c->replayed) << c->not_replayed_why;
  ASSERT_TRUE(c->diverged) << c->summary();
  EXPECT_EQ(c->first_divergence.value, "middle_out");  // not the Neg/Abs that merely inherit it
  EXPECT_EQ(c->first_divergence.op, "CorruptInReplay");
  EXPECT_EQ(c->first_divergence.node, "middle");
  EXPECT_EQ(c->first_divergence.slot, s->plan().steps()[1].outputs[0]);
  EXPECT_EQ(c->max_abs_diff, 1.0);
  EXPECT_EQ(c->first_index, 0);
  EXPECT_NE(c->summary().find("replay diverges first at slot"), std::string::npos) << c->summary();
}

TEST(ReplayChecker, AHealthyModelMatchesBitForBit) {
  auto s = model("Sigmoid", "");
  auto c = check_replay(*s, feeds({1, -2, 3, 4, 5}));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE(c->replayed);
  EXPECT_FALSE(c->diverged) << c->summary();
  EXPECT_EQ(c->compared, 4);
  EXPECT_FALSE(c->nonfinite);
}

TEST(ReplayChecker, NamesTheFirstSlotHoldingNaNOrInf) {
  auto s = model("Log", "");  // Log(Relu(0)) = -inf
  auto c = check_replay(*s, feeds({1, 0, 3}));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE(c->nonfinite);
  EXPECT_EQ(c->first_nonfinite.value, "middle_out");
  EXPECT_TRUE(c->reference_nonfinite);
  EXPECT_FALSE(c->diverged) << c->summary();  // -inf in both, bit for bit
}

TEST(ReplayChecker, BadFeedsAreErrors) {
  auto s = model("Sigmoid", "");
  EXPECT_FALSE(check_replay(*s, {}).is_ok());
  auto f = feeds({1});
  f[0].first = "nope";
  auto r = check_replay(*s, f);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace sdx::runtime
