#include "backend/cpu/jit/fusion_scoring.h"

#include <gtest/gtest.h>

namespace sdx::jit {
namespace {

SegmentIR relu_chain(int ops, Shape domain) {
  SegmentIR ir;
  ir.domain = domain;
  ir.inputs = {SegmentInput::broadcast(domain, domain).value()};
  for (int i = 0; i < ops; ++i) ir.instrs.push_back({JitOp::kRelu, {i, -1}, 0.f});
  ir.outputs = {ops};
  return ir;
}

TEST(FusionScoring, SingleOpIsNotWorthIt) { EXPECT_EQ(score_fusion(relu_chain(1, Shape{16})).score, 0.0); }

TEST(FusionScoring, LongerChainsScoreHigher) {
  const double two = score_fusion(relu_chain(2, Shape{16})).score;
  const double many = score_fusion(relu_chain(50, Shape{16})).score;
  EXPECT_GT(two, 0.5);
  EXPECT_GT(many, two);
  EXPECT_LT(many, 1.0);
  EXPECT_NE(score_fusion(relu_chain(50, Shape{16})).explain().find("score 0.9"), std::string::npos);
}

TEST(FusionScoring, RegisterPressureCosts) {
  // 40 inputs all live at once (added pairwise at the end) on a large domain spill.
  SegmentIR ir;
  ir.domain = Shape{1 << 16};
  for (int k = 0; k < 40; ++k) ir.inputs.push_back(SegmentInput::broadcast(ir.domain, ir.domain).value());
  for (int k = 1; k < 40; ++k) ir.instrs.push_back({JitOp::kMul, {k, k}, 0.f});  // value 39 + k: all live at once
  int acc = 40;
  for (int k = 2; k < 40; ++k) {
    ir.instrs.push_back({JitOp::kAdd, {acc, 39 + k}, 0.f});
    acc = ir.num_values() - 1;
  }
  ir.outputs = {ir.num_values() - 1};
  ASSERT_TRUE(ir.validate().is_ok());
  const FusionScore s = score_fusion(ir);
  EXPECT_GT(s.cost_ns, 1000);
}

}  // namespace
}  // namespace sdx::jit
