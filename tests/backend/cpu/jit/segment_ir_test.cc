#include "backend/cpu/jit/segment_ir.h"

#include <gtest/gtest.h>

namespace sdx::jit {
namespace {

TEST(SegmentInput, BroadcastPatterns) {
  const Shape domain{2, 3, 4};
  auto same = SegmentInput::broadcast(Shape{2, 3, 4}, domain).value();
  EXPECT_EQ(same.count, 24);
  EXPECT_EQ(same.inner, 1);
  auto scalar = SegmentInput::broadcast(Shape{}, domain).value();
  EXPECT_EQ(scalar.count, 1);
  auto ones = SegmentInput::broadcast(Shape{1, 1, 1}, domain).value();
  EXPECT_EQ(ones.count, 1);
  auto trailing = SegmentInput::broadcast(Shape{4}, domain).value();
  EXPECT_EQ(trailing.count, 4);
  EXPECT_EQ(trailing.inner, 1);
  auto middle = SegmentInput::broadcast(Shape{3, 1}, domain).value();
  EXPECT_EQ(middle.count, 3);
  EXPECT_EQ(middle.inner, 4);
  auto leading = SegmentInput::broadcast(Shape{2, 1, 1}, domain).value();
  EXPECT_EQ(leading.count, 2);
  EXPECT_EQ(leading.inner, 12);
  // [2, 1, 4]: two blocks separated by a broadcast dim: not one contiguous block.
  EXPECT_FALSE(SegmentInput::broadcast(Shape{2, 1, 4}, domain).is_ok());
  EXPECT_FALSE(SegmentInput::broadcast(Shape{5}, domain).is_ok());
  EXPECT_FALSE(SegmentInput::broadcast(Shape{1, 2, 3, 4}, domain).is_ok());
}

SegmentIR chain_ir() {
  SegmentIR ir;
  ir.domain = Shape{1, 16};
  ir.inputs = {SegmentInput::broadcast(Shape{1, 16}, ir.domain).value(), SegmentInput::broadcast(Shape{16}, ir.domain).value()};
  ir.instrs.push_back({JitOp::kAdd, {0, 1}, 0.f});  // 2
  ir.instrs.push_back({JitOp::kRelu, {2, -1}, 0.f});  // 3
  ir.instrs.push_back({JitOp::kMul, {3, 1}, 0.f});  // 4
  ir.outputs = {4};
  return ir;
}

TEST(SegmentIR, ValidateAndDescribe) {
  SegmentIR ir = chain_ir();
  EXPECT_TRUE(ir.validate().is_ok());
  EXPECT_EQ(ir.describe(), "ELEMENTWISE float32[1, 16]: 3 ops (Add 1, Mul 1, Relu 1), 2 inputs, 1 output");
  SegmentIR bad = ir;
  bad.instrs[1].args[0] = 4;  // refers to a later value
  EXPECT_FALSE(bad.validate().is_ok());
  bad = ir;
  bad.instrs[1].args[1] = 0;  // a unary op with two operands
  EXPECT_FALSE(bad.validate().is_ok());
  bad = ir;
  bad.outputs = {9};
  EXPECT_FALSE(bad.validate().is_ok());
}

TEST(SegmentIR, MaxLiveValues) {
  SegmentIR ir = chain_ir();
  // At the Add: x, c live; c stays live until the Mul together with the running value.
  EXPECT_EQ(ir.max_live_values(), 3);
}

TEST(SegmentIR, OpTable) {
  ASSERT_NE(find_jit_op("Relu"), nullptr);
  EXPECT_EQ(find_jit_op("Relu")->arity, 1);
  EXPECT_EQ(find_jit_op("Sum")->arity, 2);
  EXPECT_TRUE(find_jit_op("Add")->exact);
  EXPECT_FALSE(find_jit_op("Log")->exact);
  EXPECT_EQ(find_jit_op("Exp"), nullptr);  // vectorized kernel: no bitwise scalar formula
  EXPECT_EQ(find_jit_op("MatMul"), nullptr);
  EXPECT_STREQ(jit_op_info(JitOp::kLog).onnx_op, "Log");
}

}  // namespace
}  // namespace sdx::jit
