// Bound forms (Kernel::prepare) of the CPU kernels: each case runs the node through a
// Session and through its bound call (twice, the second time with changed input values)
// and compares bitwise; the bound call must not allocate (see bound_test_util.h).
//
// Heap allocations are counted by tests/testing/heap_counter.h.
#include <gtest/gtest-spi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backend/cpu/tensor/broadcast.h"
#include "bound_test_util.h"

namespace sdx::test {

namespace {

// n deterministic values in [-scale, scale] (no zeros, few repeats).
std::vector<float> wave(int64_t n, float scale = 2.f, float phase = 0.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * std::sin(0.7f * static_cast<float>(i) + phase + 0.3f);
  return v;
}
int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}
Tensor fw(const std::vector<int64_t>& dims, float phase = 0.f) { return f32(wave(count(dims), 2.f, phase), dims); }
Tensor f64w(const std::vector<int64_t>& dims, float phase = 0.f) {
  std::vector<double> v;
  for (float x : wave(count(dims), 2.f, phase)) v.push_back(x);
  return make(DType::kFloat64, v, dims);
}
Tensor f16w(const std::vector<int64_t>& dims, float phase = 0.f) {
  std::vector<Float16> v;
  for (float x : wave(count(dims), 2.f, phase)) v.push_back(Float16::from_float(x));
  return make(DType::kFloat16, v, dims);
}
Tensor iw(const std::vector<int64_t>& dims, int phase = 0) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < count(dims); ++i) v.push_back(static_cast<int32_t>((i * 7 + phase) % 11) - 5);
  return i32(v, dims);
}
Tensor bw(const std::vector<int64_t>& dims, int phase = 0) {
  std::vector<bool> v;
  for (int64_t i = 0; i < count(dims); ++i) v.push_back(((i + phase) % 3) == 0);
  return bools(v, dims);
}

NodeSpec node(const std::string& op, std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}, int opset = 21,
              int num_outputs = 1) {
  return NodeSpec{
      .op = op, .opset = opset, .inputs = std::move(inputs), .attrs = std::move(attrs), .num_outputs = num_outputs};
}

// ---- The harness itself ----------------------------------------------------------------

TEST(BoundKernels, CounterSeesHeapAllocations) {
  const uint64_t before = thread_heap_allocations();
  std::vector<int64_t> v(100, 1);
  // An allocation inside libsdx (the Status keeps its message on the heap).
  const Status st = invalid_argument("a message long enough to need the heap: " + std::to_string(v.size()));
  EXPECT_FALSE(st.is_ok());
  EXPECT_GE(thread_heap_allocations() - before, 2u);
}

TEST(BoundKernels, HarnessRejectsAllocatingBoundRuns) {
  static std::vector<std::unique_ptr<int>> kept;  // visible side effect: the allocation cannot be elided
  auto bound = backend::bind_call([] {
    kept.push_back(std::make_unique<int>(1));
    return Status::ok();
  });
  EXPECT_NONFATAL_FAILURE(run_bound_once(*bound, "allocating call"), "allocated on the heap");
}

// ---- BroadcastPlan ----------------------------------------------------------------------

TEST(BoundKernels, BroadcastWalkDoesNotAllocate) {
  auto plan = cpu::BroadcastPlan::make({Shape{2, 1, 3, 1, 4}, Shape{7, 3, 1, 4}, Shape{}});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  int64_t sum = 0;
  const uint64_t before = thread_heap_allocations();
  plan.value().for_each_run([&](int64_t o, const int64_t* in, const int64_t* step, int64_t n) {
    sum += o + in[0] + in[1] + in[2] + step[0] + step[1] + n;
  });
  plan.value().for_each([&](int64_t o, const int64_t* in) { sum += o + in[1]; });
  EXPECT_EQ(thread_heap_allocations() - before, 0u);
  EXPECT_GT(sum, 0);
}

// ---- Element-wise binary / compare ------------------------------------------------------

TEST(BoundKernels, BinaryBroadcastShapes) {
  expect_bound_matches(node("Add", {fw({2, 3}), fw({3}, 1.f)}));           // bias over the last dim
  expect_bound_matches(node("Add", {fw({1, 16}), fw({16}, 1.f)}));         // same element count, other rank
  expect_bound_matches(node("Mul", {fw({2, 3}), f32({1.5f}, {})}));        // scalar on the right
  expect_bound_matches(node("Sub", {f32({0.25f}, {1}), fw({4, 5})}));      // single element on the left
  expect_bound_matches(node("Div", {fw({4, 5}), fw({4, 5}, 2.f)}));        // same shapes
  expect_bound_matches(node("Add", {fw({3, 1, 4}), fw({1, 5, 1}, 1.f)}));  // both broadcast
  expect_bound_matches(node("Add", {fw({0, 3}), fw({3})}));                // empty output
}

// The bound integer Div / Mod fail on a zero divisor or MIN / -1 as run() does, on every call (the check
// is per call, on the current values), and succeed again once the values are fine.
TEST(BoundKernels, IntegerDivisionFaultsFailTheBoundCall) {
  for (const char* op : {"Div", "Mod"}) {
    SCOPED_TRACE(op);
    const NodeSpec spec = node(op, {iw({3, 4}), i32({2, -3, 5, 7}, {4})});
    KernelUnderTest k = make_kernel(spec);
    ASSERT_NE(k.kernel, nullptr);
    std::vector<Tensor> inputs = {deep_copy(spec.inputs[0]), deep_copy(spec.inputs[1])};
    std::vector<Tensor> outputs = {fresh_tensor(DType::kInt32, Shape({3, 4}), 0)};
    auto prepared = k.kernel->prepare(TestPrepareContext(*k.node, inputs, {false, false}, outputs));
    ASSERT_TRUE(prepared.is_ok() && prepared.value());
    const backend::BoundKernel& bound = *prepared.value();
    const uint64_t heap_before = thread_heap_allocations();
    EXPECT_TRUE(bound.run().is_ok());
    EXPECT_EQ(thread_heap_allocations() - heap_before, 0u);
    for (int p = 0; p < 4; ++p) {
      inputs[1].data<int32_t>()[p] = 0;
      const Status st = bound.run();
      ASSERT_FALSE(st.is_ok()) << "zero at " << p;
      EXPECT_NE(st.message().find(std::string(op) == "Div" ? "integer division by zero (int32)"
                                                           : "integer modulo by zero (int32)"),
                std::string::npos)
          << st.to_string();
      inputs[1].data<int32_t>()[p] = 3;
    }
    EXPECT_TRUE(bound.run().is_ok());
    inputs[0].data<int32_t>()[5] = INT32_MIN;
    inputs[1].data<int32_t>()[1] = -1;
    const Status st = bound.run();
    if (std::string(op) == "Div") {
      ASSERT_FALSE(st.is_ok());
      EXPECT_NE(st.message().find("integer division overflow"), std::string::npos) << st.to_string();
    } else {
      EXPECT_TRUE(st.is_ok()) << st.to_string();  // MIN mod -1 is 0
      EXPECT_EQ(outputs[0].data<int32_t>()[5], 0);
    }
  }
}

TEST(BoundKernels, BinaryTypesAndAttributes) {
  expect_bound_matches(node("Sub", {iw({2, 3}), iw({3}, 4)}));
  expect_bound_matches(node("Div", {iw({3, 4}), i32({2, -3, 5, 7}, {4})}));
  expect_bound_matches(node("Div", {iw({3, 4}), i32({-3}, {})}));  // one divisor for every element
  expect_bound_matches(node("Mul", {f16w({2, 8}), f16w({8}, 1.f)}));
  expect_bound_matches(node("Add", {f64w({5}), f64w({}, 1.f)}));
  expect_bound_matches(node("Mod", {fw({2, 3}), f32({0.7f, -1.1f, 1.3f}, {3})}, {attr_i("fmod", 1)}));
  expect_bound_matches(node("Mod", {iw({2, 3}), i32({3, -4, 5}, {3})}));
  expect_bound_matches(node("Pow", {fw({2, 3}), i32({2}, {1})}));
  expect_bound_matches(node("PRelu", {fw({2, 3, 4}), fw({3, 1}, 1.f)}));
  expect_bound_matches(node("And", {bw({2, 3}), bw({3}, 1)}));
  expect_bound_matches(node("BitShift",
                            {make(DType::kUint32, std::vector<uint32_t>{1, 2, 3, 4, 5, 6}, {2, 3}),
                             make(DType::kUint32, std::vector<uint32_t>{1}, {1})},
                            {attr_s("direction", "LEFT")}));
  // Before opset 7: broadcast=1 aligns B at `axis`.
  expect_bound_matches(node("Add", {fw({2, 3}), fw({2}, 1.f)}, {attr_i("broadcast", 1), attr_i("axis", 0)}, 6));
}

TEST(BoundKernels, Compare) {
  expect_bound_matches(node("Less", {fw({2, 3}), fw({3}, 1.f)}));
  expect_bound_matches(node("GreaterOrEqual", {iw({4, 4}), i32({0}, {})}));
  expect_bound_matches(node("Equal", {iw({2, 3}), iw({2, 3}, 3)}));
  expect_bound_matches(node("Equal", {strs({"a", "b", "c", "b"}, {2, 2}), strs({"b"}, {1})}));
}

// ---- Element-wise unary -------------------------------------------------------------------

TEST(BoundKernels, UnaryAndActivations) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Softsign", "Mish", "Erf", "Floor"})
    expect_bound_matches(node(op, {fw({3, 7})}));
  expect_bound_matches(node("Gelu", {fw({4, 5})}, {attr_s("approximate", "tanh")}, 20));
  expect_bound_matches(node("Gelu", {f16w({4, 5})}, {}, 20));
  expect_bound_matches(node("LeakyRelu", {fw({2, 9})}, {attr_f("alpha", 0.2f)}));
  expect_bound_matches(node("HardSigmoid", {f64w({6})}, {attr_f("alpha", 0.3f)}));
  expect_bound_matches(node("Relu", {iw({5})}));
  expect_bound_matches(node("Abs", {iw({2, 2})}));
  expect_bound_matches(node("IsNaN", {fw({3})}));
  expect_bound_matches(node("IsInf", {f32({1.f, INFINITY, -INFINITY}, {3})}, {attr_i("detect_negative", 0)}));
  expect_bound_matches(node("Not", {bw({7})}));
}

// ---- Variadic, Where, Clip ----------------------------------------------------------------

TEST(BoundKernels, VariadicWhereClip) {
  expect_bound_matches(node("Sum", {fw({2, 3}), fw({3}, 1.f), fw({2, 1}, 2.f)}));
  expect_bound_matches(node("Mean", {fw({4, 4}), fw({4, 4}, 1.f)}));
  expect_bound_matches(node("Max", {f16w({2, 5}), f16w({5}, 1.f)}));
  expect_bound_matches(node("Min", {iw({3, 3}), iw({1}, 5), iw({3, 1}, 2)}));
  expect_bound_matches(node("Sum", {fw({6})}));
  expect_bound_matches(node("Where", {bw({2, 1}), fw({2, 3}), fw({3}, 1.f)}));
  expect_bound_matches(node("Where", {bw({2, 3}), iw({2, 3}), iw({2, 3}, 1)}));
  expect_bound_matches(node("Clip", {fw({3, 4}), f32({-0.5f}, {}), f32({0.75f}, {})}));
  expect_bound_matches(node("Clip", {iw({3, 4}), Tensor(), i32({2}, {})}));
  expect_bound_matches(node("Clip", {fw({8})}, {attr_f("min", -1.f), attr_f("max", 1.f)}, 6));
}

// ---- MatMul / Gemm -----------------------------------------------------------------------

TEST(BoundKernels, MatMul) {
  expect_bound_matches(node("MatMul", {fw({3, 4}), fw({4, 5}, 1.f)}));
  expect_bound_matches(node("MatMul", {fw({2, 3, 4}), fw({4, 5}, 1.f)}), {1});   // constant weights
  expect_bound_matches(node("MatMul", {fw({2, 1, 3, 4}), fw({3, 4, 2}, 1.f)}));  // batch broadcast
  expect_bound_matches(node("MatMul", {fw({4}), fw({2, 4, 5}, 1.f)}));           // 1-D A
  expect_bound_matches(node("MatMul", {fw({3, 4}), fw({4}, 1.f)}));              // 1-D B
  expect_bound_matches(node("MatMul", {fw({5, 300}), fw({300, 530}, 1.f)}));     // several gemm panels
  expect_bound_matches(node("MatMul", {iw({3, 4}), iw({4, 2}, 1)}));
  expect_bound_matches(node("MatMul", {f16w({2, 3, 8}), f16w({8, 4}, 1.f)}));
  expect_bound_matches(node("MatMul", {f64w({3, 3}), f64w({3, 3}, 1.f)}));
  expect_bound_matches(node("MatMul", {fw({0, 4}), fw({4, 5})}));
}

TEST(BoundKernels, Gemm) {
  expect_bound_matches(node("Gemm", {fw({3, 4}), fw({4, 5}, 1.f)}));
  expect_bound_matches(node("Gemm", {fw({4, 3}), fw({5, 4}, 1.f), fw({5}, 2.f)},
                            {attr_i("transA", 1), attr_i("transB", 1), attr_f("alpha", 0.5f), attr_f("beta", 2.f)}),
                       {1, 2});
  expect_bound_matches(node("Gemm", {fw({3, 4}), fw({5, 4}, 1.f), fw({3, 5}, 2.f)}, {attr_i("transB", 1)}));
  expect_bound_matches(node("Gemm", {fw({3, 4}), fw({4, 5}, 1.f), fw({3, 1}, 2.f)}, {attr_f("beta", 0.f)}));
  expect_bound_matches(node("Gemm", {fw({3, 4}), fw({4, 5}, 1.f), f32({0.5f}, {})}));
  expect_bound_matches(node("Gemm", {iw({3, 4}), iw({4, 5}, 1), iw({5}, 2)}, {attr_f("alpha", 2.f)}));
  expect_bound_matches(node("Gemm", {f16w({3, 4}), f16w({4, 5}, 1.f), f16w({3, 5}, 2.f)}));
}

// ---- Softmax family ----------------------------------------------------------------------

TEST(BoundKernels, Softmax) {
  expect_bound_matches(node("Softmax", {fw({3, 37})}, {}, 13));
  expect_bound_matches(node("Softmax", {fw({2, 3, 4})}, {attr_i("axis", 1)}, 13));  // strided (inner = 4)
  expect_bound_matches(node("Softmax", {fw({2, 3, 4})}, {attr_i("axis", 1)}, 11));  // coerced to 2-D
  expect_bound_matches(node("LogSoftmax", {fw({4, 9})}, {}, 13));
  expect_bound_matches(node("LogSoftmax", {fw({2, 5, 3})}, {attr_i("axis", -2)}, 13));
  expect_bound_matches(node("Hardmax", {fw({3, 6})}, {}, 13));
  expect_bound_matches(node("Softmax", {f16w({2, 3, 4})}, {attr_i("axis", 1)}, 13));
  expect_bound_matches(node("Softmax", {f16w({2, 11})}, {}, 13));
  expect_bound_matches(node("Softmax", {f64w({2, 11})}, {}, 13));
}

// ---- Normalization -----------------------------------------------------------------------

TEST(BoundKernels, LayerNorm) {
  expect_bound_matches(node("LayerNormalization", {fw({2, 3, 8}), fw({8}, 1.f), fw({8}, 2.f)}), {1, 2});
  expect_bound_matches(node("LayerNormalization", {fw({2, 3, 4}), fw({3, 4}, 1.f), fw({4}, 2.f)}, {attr_i("axis", 1)}));
  expect_bound_matches(
      node("LayerNormalization", {fw({4, 6}), fw({6}, 1.f), fw({6}, 2.f)}, {attr_f("epsilon", 1e-3f)}, 17, 3));
  expect_bound_matches(node("LayerNormalization", {fw({4, 6}), fw({6}, 1.f)}, {}, 17, 3), {1});  // no bias
  expect_bound_matches(
      node("LayerNormalization", {f16w({3, 8}), f16w({8}, 1.f), f16w({8}, 2.f)}, {attr_i("stash_type", 1)}, 17, 3));
  expect_bound_matches(node("RMSNormalization", {fw({3, 10}), fw({10}, 1.f)}, {}, 23));
}

// ---- Layout ------------------------------------------------------------------------------

TEST(BoundKernels, TransposeAndDepthToSpace) {
  expect_bound_matches(node("Transpose", {fw({2, 3, 4})}));
  expect_bound_matches(node("Transpose", {fw({2, 3, 4})}, {attr_ints("perm", {1, 0, 2})}));
  expect_bound_matches(node("Transpose", {iw({3, 5})}, {attr_ints("perm", {1, 0})}));
  expect_bound_matches(node("Transpose", {f16w({2, 2, 3, 2})}, {attr_ints("perm", {0, 2, 3, 1})}));
  expect_bound_matches(node("DepthToSpace", {fw({1, 8, 2, 3})}, {attr_i("blocksize", 2), attr_s("mode", "CRD")}));
  expect_bound_matches(node("SpaceToDepth", {fw({1, 2, 4, 6})}, {attr_i("blocksize", 2)}));
  expect_no_bound_form(node("Transpose", {strs({"a", "b"}, {1, 2})}));
}

// ---- Cast --------------------------------------------------------------------------------

TEST(BoundKernels, Cast) {
  const auto to = [](DType t) { return attr_i("to", static_cast<int64_t>(dtype_to_onnx(t))); };
  expect_bound_matches(node("Cast", {fw({3, 4})}, {to(DType::kInt32)}));
  expect_bound_matches(node("Cast", {fw({3, 4})}, {to(DType::kFloat16)}));
  expect_bound_matches(node("Cast", {iw({5})}, {to(DType::kFloat64)}));
  expect_bound_matches(node("Cast", {iw({5})}, {to(DType::kBool)}));
  expect_bound_matches(node("Cast", {fw({7})}, {to(DType::kInt4)}));  // packed output
  expect_bound_matches(node("Cast", {fw({6})}, {to(DType::kFloat8E4M3FN)}));
  expect_bound_matches(node("Cast", {fw({2, 2})}, {to(DType::kFloat32)}));  // identity
  expect_bound_matches(node("CastLike", {iw({4}), fw({1})}));
  expect_no_bound_form(node("Cast", {fw({2})}, {to(DType::kString)}));
}

// ---- Reductions --------------------------------------------------------------------------

TEST(BoundKernels, Reduce) {
  expect_bound_matches(node("ReduceMean", {fw({2, 3, 4})}, {attr_ints("axes", {1})}, 13));
  expect_bound_matches(node("ReduceSum", {fw({2, 3, 4}), i64({-1}, {1})}, {attr_i("keepdims", 0)}, 13), {1});
  expect_bound_matches(node("ReduceMean", {fw({2, 3, 4}), i64({0, 2}, {2})}, {}, 18), {1});
  expect_bound_matches(node("ReduceMax", {iw({3, 5})}, {}, 18));  // no axes: everything
  expect_bound_matches(node("ReduceMin", {bw({3, 5}), i64({1}, {1})}, {}, 18), {1});
  expect_bound_matches(node("ReduceLogSumExp", {fw({4, 6}), i64({1}, {1})}, {}, 18), {1});
  expect_bound_matches(node("ReduceSumSquare", {f16w({4, 6})}, {attr_ints("axes", {0})}, 13));
  expect_bound_matches(node("ReduceProd", {iw({2, 3})}, {attr_ints("axes", {1})}, 13));
  // Axes that may change between calls: no bound form.
  expect_no_bound_form(node("ReduceSum", {fw({2, 3}), i64({1}, {1})}, {}, 13));
}

}  // namespace
}  // namespace sdx::test
