#include "opt/constant_eval.h"

#include "../backend/cpu/kernels/kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ConstantEval, EvaluatesAnOpWithItsKernelsBroadcasting) {
  auto sum = opt::evaluate_op("Add", {f32({1, 2, 3}, {3}), f32({10, 20}, {2, 1})});
  ASSERT_TRUE(sum.is_ok()) << sum.status().to_string();
  EXPECT_EQ(sum->shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(*sum), (std::vector<float>{11, 12, 13, 21, 22, 23}));
}

TEST(ConstantEval, EvaluatesEveryOutputOfANodeAndReportsKernelErrors) {
  ir::Graph g("g");
  ir::Value* w = g.add_initializer("w", f32({1, 2, 3, 4}, {4}));
  ir::Node* split = g.add_node("Split", "", "split", {w}, {"a", "b"});
  split->set_opset(17);
  Tensor t = f32({1, 2, 3, 4}, {4});
  auto outs = opt::evaluate_node(*split, {&t});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  ASSERT_EQ(outs->size(), 2u);
  EXPECT_EQ(values<float>((*outs)[1]), (std::vector<float>{3, 4}));

  // Add of [3] and [4] does not broadcast: an error value, not a crash.
  EXPECT_FALSE(opt::evaluate_op("Add", {f32({1, 2, 3}, {3}), f32({1, 2, 3, 4}, {4})}).is_ok());
  EXPECT_FALSE(opt::evaluate_op("NoSuchOp", {f32({1}, {1})}).is_ok());
}

}  // namespace
}  // namespace sdx::test
