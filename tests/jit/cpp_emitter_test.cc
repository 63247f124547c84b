#include "jit/cpp_emitter.h"

#include <gtest/gtest.h>

namespace sdx::jit {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(CppEmitter, EmbedsShapesAndAccessPatterns) {
  SegmentIR ir;
  ir.domain = Shape{2, 3, 4};
  ir.inputs = {SegmentInput::broadcast(ir.domain, ir.domain).value(), SegmentInput::broadcast(Shape{4}, ir.domain).value(),
               SegmentInput::broadcast(Shape{3, 1}, ir.domain).value(), SegmentInput::broadcast(Shape{}, ir.domain).value(),
               SegmentInput::broadcast(Shape{2, 1, 1}, ir.domain).value()};
  ir.instrs = {{JitOp::kAdd, {0, 1}, 0.f}, {JitOp::kMul, {5, 2}, 0.f}, {JitOp::kSub, {6, 3}, 0.f},
               {JitOp::kDiv, {7, 4}, 0.f}, {JitOp::kLeakyRelu, {8, -1}, 0.1f}};
  ir.outputs = {9, 6};
  ASSERT_TRUE(ir.validate().is_ok());
  const std::string src = emit_cpp(ir);
  EXPECT_TRUE(has(src, "sdx_jit_numel = 24LL;")) << src;
  EXPECT_TRUE(has(src, std::string("sdx_jit_abi[] = \"") + kJitAbi + "\""));
  EXPECT_TRUE(has(src, "in0[i]"));
  EXPECT_TRUE(has(src, "in1[i % 4LL]"));
  EXPECT_TRUE(has(src, "in2[(i / 4LL) % 3LL]"));
  EXPECT_TRUE(has(src, "in3[0]"));
  EXPECT_TRUE(has(src, "in4[i / 12LL]"));
  EXPECT_TRUE(has(src, "sdx_leaky_relu(v8, 0x1.99999ap-4f)")) << src;  // 0.1f, exactly
  EXPECT_TRUE(has(src, "out0[i] = v9;"));
  EXPECT_TRUE(has(src, "out1[i] = v6;"));
  // Loads come before the stores of the same element.
  EXPECT_LT(src.find("in4["), src.find("out0[i]"));
  EXPECT_EQ(emit_cpp(ir), src);  // deterministic: the disk-cache key depends on it
}

TEST(CppEmitter, FlagsForbidFastMathAndContraction) {
  const std::string flags = kCompileFlags;
  EXPECT_TRUE(has(flags, "-ffp-contract=off"));
  EXPECT_TRUE(has(flags, "-fno-fast-math"));
  EXPECT_FALSE(has(flags, "-ffast-math"));
  EXPECT_FALSE(has(flags, "-Ofast"));
}

}  // namespace
}  // namespace sdx::jit
