#include "backend/cpu/jit/fused_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/threading/thread_pool.h"
#include "backend/cpu/jit/jit_engine.h"
#include "jit_test_util.h"

namespace sdx::jit {
namespace {

// A bound segment over a domain large enough to split over the thread pool gives the same bits
// as one pass on the calling thread (odd size: uneven chunks and tails).
TEST(FusedKernel, SplitOverThePoolMatchesOnePass) {
  if (!find_compiler("").is_ok()) GTEST_SKIP() << "no C++ compiler";
  test::TempDir tmp;
  JitOptions o;
  o.cache_dir = tmp.path();
  JitEngine jit(o);
  SegmentIR ir;
  const int64_t n = 100003;
  ir.domain = Shape{n};
  ir.inputs = {SegmentInput::broadcast(ir.domain, ir.domain).value(), SegmentInput::broadcast(Shape{}, ir.domain).value()};
  ir.instrs = {{JitOp::kDiv, {0, 1}, 0.f}, {JitOp::kNeg, {2, -1}, 0.f}, {JitOp::kLeakyRelu, {3, -1}, 0.2f}};
  ir.outputs = {4, 2};
  std::shared_ptr<CompiledSegment> k = jit.request(ir);
  ASSERT_TRUE(jit.wait_idle(120));
  ASSERT_EQ(k->state(), JitState::kReady) << k->failure();
  std::vector<float> x(static_cast<size_t>(n)), d = {3.0f}, a(static_cast<size_t>(n)), b(static_cast<size_t>(n)),
      a2(static_cast<size_t>(n)), b2(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = std::sin(static_cast<float>(i)) * 4.f;
  const float* in[] = {x.data(), d.data()};
  float* one[] = {a.data(), b.data()};
  run_segment(*k, in, one);
  auto bound = bind_segment(k, {x.data(), d.data()}, {a2.data(), b2.data()});
  cpu::ThreadPool pool(3);
  {
    cpu::ScopedThreadPool scope(&pool);
    ASSERT_TRUE(bound->run().is_ok());
  }
  EXPECT_EQ(std::memcmp(a.data(), a2.data(), a.size() * 4), 0);
  EXPECT_EQ(std::memcmp(b.data(), b2.data(), b.size() * 4), 0);
  EXPECT_EQ(b[7], x[7] / 3.0f);
}

}  // namespace
}  // namespace sdx::jit
