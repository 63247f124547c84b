#include "backend/cpu/jit/cpp_emitter.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <vector>

#include "backend/cpu/jit/compiler.h"
#include "jit_test_util.h"

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
  // Any of these lets the compiler assume no NaN / Inf and fold the prelude's NaN tests away.
  EXPECT_FALSE(has(flags, "-ffinite-math-only"));
  EXPECT_FALSE(has(flags, "-fno-honor-nans"));
  EXPECT_FALSE(has(flags, "-fno-honor-infinities"));
}

// The generated code, built with kCompileFlags by the system compiler, keeps NaN through Relu,
// LeakyRelu, Max and Min (either operand) as the CPU kernels do, and maps -0 to +0 in Relu.
TEST(CppEmitter, GeneratedCodePropagatesNaN) {
  auto cxx = find_compiler("");
  if (!cxx.is_ok()) GTEST_SKIP() << "no C++ compiler: " << cxx.status().to_string();
  SegmentIR ir;
  ir.domain = Shape{8};
  const SegmentInput whole = SegmentInput::broadcast(ir.domain, ir.domain).value();
  ir.inputs = {whole, whole};
  ir.instrs = {{JitOp::kRelu, {0, -1}, 0.f},      // 2
               {JitOp::kLeakyRelu, {0, -1}, 0.5f},  // 3
               {JitOp::kMax, {0, 1}, 0.f},          // 4
               {JitOp::kMin, {1, 0}, 0.f}};         // 5
  ir.outputs = {2, 3, 4, 5};
  ASSERT_TRUE(ir.validate().is_ok());
  test::TempDir tmp;
  const std::string src = tmp.path() + "/seg.cc", lib = tmp.path() + "/seg.so";
  std::ofstream(src) << emit_cpp(ir);
  std::atomic<bool> cancel{false};
  const Status built = compile_shared_library(cxx.value(), src, lib, tmp.path() + "/log", &cancel);
  ASSERT_TRUE(built.is_ok()) << built.to_string();
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using Fn = void (*)(const float* const*, float* const*, long long, long long);
  auto segment = reinterpret_cast<Fn>(dlsym(handle, "sdx_jit_segment"));
  ASSERT_NE(segment, nullptr);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {nan, -nan, -1.f, -0.f, 2.f, -inf, 3.f, nan};
  const std::vector<float> y = {1.f, 0.f, nan, 5.f, -nan, 1.f, 3.f, nan};
  std::vector<float> relu(8), leaky(8), mx(8), mn(8);
  const float* in[] = {x.data(), y.data()};
  float* out[] = {relu.data(), leaky.data(), mx.data(), mn.data()};
  segment(in, out, 0, 8);
  for (int i = 0; i < 8; ++i) {
    const bool any_nan = std::isnan(x[i]) || std::isnan(y[i]);
    EXPECT_EQ(std::isnan(relu[i]), std::isnan(x[i])) << i;
    EXPECT_EQ(std::isnan(leaky[i]), std::isnan(x[i])) << i;
    EXPECT_EQ(std::isnan(mx[i]), any_nan) << i;
    EXPECT_EQ(std::isnan(mn[i]), any_nan) << i;
  }
  EXPECT_EQ(relu[2], 0.f);
  EXPECT_FALSE(std::signbit(relu[3]));  // Relu(-0) = +0, as ReluOp
  EXPECT_EQ(relu[4], 2.f);
  EXPECT_EQ(leaky[2], -0.5f);
  EXPECT_EQ(leaky[5], -inf);
  EXPECT_EQ(mx[5], 1.f);
  EXPECT_EQ(mn[5], -inf);
  dlclose(handle);
}

}  // namespace
}  // namespace sdx::jit
