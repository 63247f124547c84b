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

using SegmentFn = void (*)(const float* const*, float* const*, long long, long long);

// The source built by the system compiler with compile_flags() and opened: fn, or null and error.
struct BuiltSegment {
  SegmentFn fn = nullptr;
  std::string error;
  void* handle = nullptr;
  BuiltSegment(const std::string& cxx, const std::string& source, const std::string& dir) {
    const std::string file = dir + "/seg.cc", lib = dir + "/seg.so";
    std::ofstream(file) << source;
    std::atomic<bool> cancel{false};
    const Status built = compile_shared_library(cxx, file, lib, dir + "/log", &cancel);
    if (!built.is_ok()) {
      error = built.to_string();
      return;
    }
    handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = dlerror();
      return;
    }
    fn = reinterpret_cast<SegmentFn>(dlsym(handle, "sdx_jit_segment"));
    if (!fn) error = "no sdx_jit_segment";
  }
  ~BuiltSegment() {
    if (handle) dlclose(handle);
  }
  BuiltSegment(const BuiltSegment&) = delete;
  BuiltSegment& operator=(const BuiltSegment&) = delete;
};

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
  const std::string flags = compile_flags();  // kCompileFlags and the ISA's flags
  EXPECT_EQ(flags.rfind(kCompileFlags, 0), 0u);
  EXPECT_TRUE(has(flags, "-ffp-contract=off"));
  EXPECT_TRUE(has(flags, "-fno-fast-math"));
  EXPECT_FALSE(has(flags, "-ffast-math"));
  EXPECT_FALSE(has(flags, "-Ofast"));
  // Any of these lets the compiler assume no NaN / Inf and fold the prelude's NaN tests away.
  EXPECT_FALSE(has(flags, "-ffinite-math-only"));
  EXPECT_FALSE(has(flags, "-fno-honor-nans"));
  EXPECT_FALSE(has(flags, "-fno-honor-infinities"));
}

// Broadcast inputs whose runs allow rows of at least 8 elements (a per-channel [3, 1, 1] and a
// trailing [10] over [2, 3, 4, 10]: rows of 10) are read through per-row pointers, with no division in
// the element loop; the kernel gives the per-element formula's bits for chunks that start and end
// inside rows.
TEST(CppEmitter, BroadcastInputsAreReadByRows) {
  auto cxx = find_compiler("");
  if (!cxx.is_ok()) GTEST_SKIP() << "no C++ compiler: " << cxx.status().to_string();
  SegmentIR ir;
  ir.domain = Shape{2, 3, 4, 10};
  ir.inputs = {SegmentInput::broadcast(ir.domain, ir.domain).value(), SegmentInput::broadcast(Shape{3, 1, 1}, ir.domain).value(),
               SegmentInput::broadcast(Shape{10}, ir.domain).value(), SegmentInput::broadcast(Shape{}, ir.domain).value()};
  ir.instrs = {{JitOp::kAdd, {0, 1}, 0.f}, {JitOp::kMul, {4, 2}, 0.f}, {JitOp::kMax, {5, 3}, 0.f}};  // 4, 5, 6
  ir.outputs = {6};
  ASSERT_TRUE(ir.validate().is_ok());
  const std::string src = emit_cpp(ir);
  EXPECT_TRUE(has(src, "row1 = in1 + (r0 / 40LL) % 3LL;")) << src;
  EXPECT_TRUE(has(src, "row2 = in2 + r0 % 10LL;")) << src;
  EXPECT_TRUE(has(src, "row1[0]") && has(src, "row2[j]") && has(src, "in0[i]") && has(src, "in3[0]")) << src;
  test::TempDir tmp;
  BuiltSegment built(cxx.value(), src, tmp.path());
  ASSERT_NE(built.fn, nullptr) << built.error;
  const SegmentFn segment = built.fn;
  std::vector<float> x(240), c = {0.5f, -1.25f, 2.f}, t(10), s = {-0.75f}, y(240, -99.f);
  for (int i = 0; i < 240; ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.f;
  for (int i = 0; i < 10; ++i) t[i] = 0.1f * static_cast<float>(i) - 0.45f;
  const float* in[] = {x.data(), c.data(), t.data(), s.data()};
  float* out[] = {y.data()};
  for (auto [b, e] : {std::pair{0, 37}, std::pair{37, 121}, std::pair{121, 125}, std::pair{125, 240}}) segment(in, out, b, e);
  for (int i = 0; i < 240; ++i) {
    const float v = (x[i] + c[(i / 40) % 3]) * t[i % 10];
    EXPECT_EQ(y[i], v < s[0] ? s[0] : v) << i;
  }
}

// The generated code, built with compile_flags() by the system compiler, keeps NaN through Relu,
// LeakyRelu, Max and Min (either operand) as the CPU kernels do, and maps -0 to +0 in Relu: at every
// position of 67 elements, so in the vectorized loop body and in its tail.
TEST(CppEmitter, GeneratedCodePropagatesNaN) {
  auto cxx = find_compiler("");
  if (!cxx.is_ok()) GTEST_SKIP() << "no C++ compiler: " << cxx.status().to_string();
  constexpr int kN = 67;
  SegmentIR ir;
  ir.domain = Shape{kN};
  const SegmentInput whole = SegmentInput::broadcast(ir.domain, ir.domain).value();
  ir.inputs = {whole, whole};
  ir.instrs = {{JitOp::kRelu, {0, -1}, 0.f},      // 2
               {JitOp::kLeakyRelu, {0, -1}, 0.5f},  // 3
               {JitOp::kMax, {0, 1}, 0.f},          // 4
               {JitOp::kMin, {1, 0}, 0.f}};         // 5
  ir.outputs = {2, 3, 4, 5};
  ASSERT_TRUE(ir.validate().is_ok());
  test::TempDir tmp;
  BuiltSegment built(cxx.value(), emit_cpp(ir), tmp.path());
  ASSERT_NE(built.fn, nullptr) << built.error;
  const SegmentFn segment = built.fn;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x8 = {nan, -nan, -1.f, -0.f, 2.f, -inf, 3.f, nan};
  const std::vector<float> y9 = {1.f, 0.f, nan, 5.f, -nan, 1.f, 3.f, nan, -2.f};
  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) x[i] = x8[i % 8], y[i] = y9[i % 9];
  std::vector<float> relu(kN), leaky(kN), mx(kN), mn(kN);
  const float* in[] = {x.data(), y.data()};
  float* out[] = {relu.data(), leaky.data(), mx.data(), mn.data()};
  segment(in, out, 0, kN);
  for (int i = 0; i < kN; ++i) {
    const bool any_nan = std::isnan(x[i]) || std::isnan(y[i]);
    EXPECT_EQ(std::isnan(relu[i]), std::isnan(x[i])) << i;
    EXPECT_EQ(std::isnan(leaky[i]), std::isnan(x[i])) << i;
    EXPECT_EQ(std::isnan(mx[i]), any_nan) << i;
    EXPECT_EQ(std::isnan(mn[i]), any_nan) << i;
    if (std::isnan(x[i])) continue;
    EXPECT_EQ(relu[i], x[i] <= 0.f ? 0.f : x[i]) << i;
    EXPECT_FALSE(std::signbit(relu[i])) << i;  // Relu(-0) = +0, as ReluOp
    EXPECT_EQ(leaky[i], x[i] >= 0.f ? x[i] : 0.5f * x[i]) << i;
    if (any_nan) continue;
    EXPECT_EQ(mx[i], x[i] < y[i] ? y[i] : x[i]) << i;
    EXPECT_EQ(mn[i], x[i] < y[i] ? x[i] : y[i]) << i;  // Min(y, x): x < y ? x : y
  }
  EXPECT_EQ(relu[2], 0.f);
  EXPECT_EQ(leaky[2], -0.5f);
  EXPECT_EQ(leaky[5], -inf);
  EXPECT_EQ(mx[5], 1.f);
  EXPECT_EQ(mn[5], -inf);
}

}  // namespace
}  // namespace sdx::jit
