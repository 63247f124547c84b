// Checks a CPU kernel's bound form (Kernel::prepare, see backend/kernel.h) against its run():
//
//   using namespace sdx::test;
//   expect_bound_matches({.op = "Add", .inputs = {f32({1, 2, 3}, {3}), f32({10}, {1})}});
//   expect_bound_matches({.op = "MatMul", .inputs = {a, w}}, /*constant_inputs=*/{1});  // w is an initializer
//   expect_no_bound_form({.op = "Cast", .inputs = {x}, .attrs = {attr_i("to", 8)}});       // prepare() declines
//
// expect_bound_matches runs the node once through a Session for the reference outputs,
// creates the node's kernel from the registry, prepares it over private copies of the
// inputs and fresh output buffers of the reference types and shapes (filled with junk),
// runs the bound call, then changes every non-constant input in place, runs it again and
// compares with a new Session run each time: bitwise, every output. Each bound run must
// make no heap allocation (global operator new) and no tensor allocation; kernels on oneDNN pass
// HeapCheck::kLibraryMayAllocate, because oneDNN's execute builds its argument map on the heap on
// every call (no tensor allocation is still checked). It also checks
// that prepare() declines (returns null) when output 0 has a wrong shape or element type.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/kernel_registry.h"
#include "core/allocator.h"
#include "core/float16.h"
#include "kernel_test_util.h"
#include "../../../testing/heap_counter.h"

namespace sdx::test {

inline uint64_t thread_heap_allocations() { return heap_allocations(); }

// A PrepareContext over plain tensors (what the runtime gives prepare() at capture).
class TestPrepareContext final : public backend::PrepareContext {
 public:
  TestPrepareContext(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant,
                     const std::vector<Tensor>& outputs)
      : node_(node), inputs_(inputs), constant_(constant), outputs_(outputs) {}
  const ir::Node& node() const override { return node_; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const override { return i < num_inputs() && inputs_[static_cast<size_t>(i)].defined(); }
  const Tensor& input(int i) const override { return inputs_[static_cast<size_t>(i)]; }
  bool input_is_constant(int i) const override { return constant_[static_cast<size_t>(i)]; }
  int num_outputs() const override { return static_cast<int>(outputs_.size()); }
  bool wants_output(int i) const override { return outputs_[static_cast<size_t>(i)].defined(); }
  const Tensor& output(int i) const override { return outputs_[static_cast<size_t>(i)]; }

 private:
  const ir::Node& node_;
  const std::vector<Tensor>& inputs_;
  const std::vector<bool>& constant_;
  const std::vector<Tensor>& outputs_;
};

// A tensor of dtype/shape with its own storage, every byte set to `fill` (or elements copied from src).
inline Tensor fresh_tensor(DType dtype, const Shape& shape, uint8_t fill) {
  Tensor t = Tensor::allocate(dtype, shape, cpu_allocator()).value();
  if (dtype != DType::kString && t.nbytes() > 0) std::memset(t.raw_data(), fill, t.nbytes());
  return t;
}
inline Tensor deep_copy(const Tensor& src) {
  if (!src.defined()) return Tensor();
  Tensor t = Tensor::allocate(src.dtype(), src.shape(), cpu_allocator()).value();
  if (src.dtype() == DType::kString) {
    for (int64_t i = 0; i < src.numel(); ++i) t.data<std::string>()[i] = src.data<std::string>()[i];
  } else if (src.nbytes() > 0) {
    std::memcpy(t.raw_data(), src.raw_data(), src.nbytes());
  }
  return t;
}

// Changes t's values in place, keeping signs (floats: 1.5 x +- 0.25; integers: + 1, wrapping;
// bools: flipped). Other element types are left alone.
inline void perturb(Tensor& t) {
  const int64_t n = t.numel();
  auto floats = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) p[i] = p[i] * 1.5 + (p[i] >= 0 ? 0.25 : -0.25);
  };
  auto halves = [&](auto* p) {
    using H = std::remove_pointer_t<decltype(p)>;
    for (int64_t i = 0; i < n; ++i) {
      const float v = p[i].to_float();
      p[i] = H::from_float(v * 1.5f + (v >= 0 ? 0.25f : -0.25f));
    }
  };
  auto ints = [&](auto* p) {
    using I = std::remove_pointer_t<decltype(p)>;
    using U = std::make_unsigned_t<I>;
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<I>(static_cast<U>(static_cast<U>(p[i]) + 1u));
  };
  switch (t.dtype()) {
    case DType::kFloat32:
      floats(t.data<float>());
      break;
    case DType::kFloat64:
      floats(t.data<double>());
      break;
    case DType::kFloat16:
      halves(t.data<Float16>());
      break;
    case DType::kBFloat16:
      halves(t.data<BFloat16>());
      break;
    case DType::kInt8:
      ints(t.data<int8_t>());
      break;
    case DType::kInt16:
      ints(t.data<int16_t>());
      break;
    case DType::kInt32:
      ints(t.data<int32_t>());
      break;
    case DType::kInt64:
      ints(t.data<int64_t>());
      break;
    case DType::kUint8:
      ints(t.data<uint8_t>());
      break;
    case DType::kUint16:
      ints(t.data<uint16_t>());
      break;
    case DType::kUint32:
      ints(t.data<uint32_t>());
      break;
    case DType::kUint64:
      ints(t.data<uint64_t>());
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = !t.data<bool>()[i];
      break;
    default:
      break;
  }
}

// Bitwise equality of two tensors (strings compare by value).
inline ::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "got " << got.type_string() << ", want " << want.type_string();
  if (want.dtype() == DType::kString) {
    for (int64_t i = 0; i < want.numel(); ++i)
      if (got.data<std::string>()[i] != want.data<std::string>()[i])
        return ::testing::AssertionFailure() << "string element " << i << " differs";
    return ::testing::AssertionSuccess();
  }
  const auto* g = static_cast<const uint8_t*>(got.raw_data());
  const auto* w = static_cast<const uint8_t*>(want.raw_data());
  for (size_t i = 0; i < want.nbytes(); ++i) {
    if (g[i] != w[i]) {
      auto f = ::testing::AssertionFailure() << "byte " << i << " of " << want.nbytes() << " differs";
      if (want.dtype() == DType::kFloat32)
        f << " (element " << i / 4 << ": got " << got.data<float>()[i / 4] << ", want " << want.data<float>()[i / 4]
          << ")";
      return f;
    }
  }
  return ::testing::AssertionSuccess();
}

// same_bits for float32, except that two NaNs match whatever their sign and payload: which NaN an
// operation returns when several meet (NaN + -NaN, a NaN times inf - inf's default NaN) depends on the
// order of the operands, which may differ between a fused op and the unfused ops, or between a vector
// kernel's main loop and its tail. NaN positions must still match exactly.
inline ::testing::AssertionResult same_bits_nan_as_nan(const Tensor& got, const Tensor& want) {
  if (got.dtype() != DType::kFloat32 || want.dtype() != DType::kFloat32 || got.shape() != want.shape())
    return same_bits(got, want);
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::memcmp(&g, &w, sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

// Equality for results of GEMMs of different shapes: float32 GEMMs run on a BLAS whose blocking (and so
// the summation order) depends on M, so a fused [B*S, K] product may differ from B separate [S, K]
// products in the last bits. float32 within rtol (relative to the larger magnitude, plus 1e-6
// absolute); every other type bitwise (they use the reference GEMM).
inline ::testing::AssertionResult same_up_to_gemm_order(const Tensor& got, const Tensor& want, double rtol = 1e-5,
                                                        double atol = 1e-6) {
  if (want.dtype() != DType::kFloat32 || got.dtype() != want.dtype() || got.shape() != want.shape())
    return same_bits(got, want);
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (!(std::fabs(g - w) <= atol + rtol * std::max(std::fabs(g), std::fabs(w))))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

// A kernel of the spec's node plus the model that owns the node.
struct KernelUnderTest {
  ir::Model model;
  const ir::Node* node = nullptr;
  std::unique_ptr<backend::Kernel> kernel;
};

inline KernelUnderTest make_kernel(const NodeSpec& spec) {
  KernelUnderTest k;
  k.model = one_node_model(spec);
  k.node = k.model.graph->nodes().at(0).get();
  const backend::KernelDef* def = backend::KernelRegistry::cpu().find(*k.node);
  EXPECT_NE(def, nullptr) << "no CPU kernel for " << spec.op;
  if (!def) return k;
  auto created = def->create(*k.node);
  EXPECT_TRUE(created.is_ok()) << created.status().to_string();
  if (created.is_ok()) k.kernel = std::move(created).value();
  return k;
}

// Whether a bound run may allocate on the heap inside a library (oneDNN's primitive execute does).
enum class HeapCheck { kNone, kLibraryMayAllocate };

// Runs the bound call once, checking it succeeds without heap or tensor allocations.
inline void run_bound_once(const backend::BoundKernel& bound, const std::string& what,
                           HeapCheck heap = HeapCheck::kNone) {
  const uint64_t tensors_before = cpu_allocation_count();
  const uint64_t heap_before = thread_heap_allocations();
  const Status st = bound.run();
  const uint64_t heap_after = thread_heap_allocations();
  const uint64_t tensors_after = cpu_allocation_count();
  EXPECT_TRUE(st.is_ok()) << what << ": " << st.to_string();
  if (heap == HeapCheck::kNone) {
    EXPECT_EQ(heap_after - heap_before, 0u) << what << ": the bound run allocated on the heap";
  }
  EXPECT_EQ(tensors_after - tensors_before, 0u) << what << ": the bound run allocated tensors";
}

inline void expect_bound_matches(const NodeSpec& spec, const std::vector<int>& constant_inputs = {},
                                 HeapCheck heap = HeapCheck::kNone) {
  SCOPED_TRACE(spec.op + " opset " + std::to_string(spec.opset));
  auto ref = run_node(spec);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  KernelUnderTest k = make_kernel(spec);
  ASSERT_NE(k.kernel, nullptr);

  std::vector<Tensor> inputs;
  for (const Tensor& t : spec.inputs) inputs.push_back(deep_copy(t));
  std::vector<bool> constant(inputs.size(), false);
  for (int i : constant_inputs) constant.at(static_cast<size_t>(i)) = true;
  std::vector<Tensor> outputs;
  for (const Tensor& r : *ref) outputs.push_back(fresh_tensor(r.dtype(), r.shape(), 0xA5));

  TestPrepareContext ctx(*k.node, inputs, constant, outputs);
  auto prepared = k.kernel->prepare(ctx);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  std::unique_ptr<backend::BoundKernel> bound = std::move(prepared).value();
  ASSERT_NE(bound, nullptr) << "prepare() gave no bound form";

  run_bound_once(*bound, "first run", heap);
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_TRUE(same_bits(outputs[i], (*ref)[i])) << "output " << i;

  // New values at the same addresses (constant inputs keep theirs).
  NodeSpec changed = spec;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || constant[i]) continue;
    perturb(inputs[i]);
    changed.inputs[i] = deep_copy(inputs[i]);
  }
  auto ref2 = run_node(changed);
  ASSERT_TRUE(ref2.is_ok()) << ref2.status().to_string();
  run_bound_once(*bound, "second run", heap);
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_TRUE(same_bits(outputs[i], (*ref2)[i])) << "output " << i << " (changed inputs)";

  // Output buffers that do not match what run() produces: no bound form.
  const Tensor& y = (*ref)[0];
  std::vector<int64_t> dims = y.shape().dims();
  if (dims.empty())
    dims.push_back(2);
  else
    dims[0] += 1;
  std::vector<Tensor> wrong = outputs;
  wrong[0] = fresh_tensor(y.dtype(), Shape(dims), 0);
  auto declined = k.kernel->prepare(TestPrepareContext(*k.node, inputs, constant, wrong));
  ASSERT_TRUE(declined.is_ok()) << declined.status().to_string();
  EXPECT_EQ(declined.value(), nullptr) << "prepare() accepted output 0 with shape " << Shape(dims).to_string();
  wrong[0] = fresh_tensor(y.dtype() == DType::kFloat32 ? DType::kFloat64 : DType::kFloat32, y.shape(), 0);
  declined = k.kernel->prepare(TestPrepareContext(*k.node, inputs, constant, wrong));
  ASSERT_TRUE(declined.is_ok()) << declined.status().to_string();
  EXPECT_EQ(declined.value(), nullptr) << "prepare() accepted output 0 of type " << wrong[0].type_string();
}

// The bound form's first run on a thread that has run no kernel before (so has no thread-local
// scratch yet) makes no heap allocation on that thread: whatever per-thread buffers the bound run
// uses are grown by prepare(). Runs on a new thread with no pool, where the thread runs every chunk.
inline void expect_first_bound_run_on_a_new_thread_allocates_nothing(const NodeSpec& spec,
                                                                     const std::vector<int>& constant_inputs = {}) {
  SCOPED_TRACE(spec.op + " on a new thread");
  auto ref = run_node(spec);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  std::vector<Tensor> outputs;
  for (const Tensor& r : *ref) outputs.push_back(fresh_tensor(r.dtype(), r.shape(), 0xA5));
  KernelUnderTest k = make_kernel(spec);
  ASSERT_NE(k.kernel, nullptr);
  std::vector<bool> constant(spec.inputs.size(), false);
  for (int i : constant_inputs) constant.at(static_cast<size_t>(i)) = true;
  std::thread([&] {
    TestPrepareContext ctx(*k.node, spec.inputs, constant, outputs);
    auto prepared = k.kernel->prepare(ctx);
    ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
    ASSERT_NE(prepared.value(), nullptr) << "prepare() gave no bound form";
    run_bound_once(*prepared.value(), "first run on a new thread");
  }).join();
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_TRUE(same_bits(outputs[i], (*ref)[i])) << "output " << i;
}

// prepare() declines this case (returns null, not an error).
inline void expect_no_bound_form(const NodeSpec& spec, const std::vector<int>& constant_inputs = {}) {
  SCOPED_TRACE(spec.op + " opset " + std::to_string(spec.opset));
  auto ref = run_node(spec);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  KernelUnderTest k = make_kernel(spec);
  ASSERT_NE(k.kernel, nullptr);
  std::vector<Tensor> inputs = spec.inputs;
  std::vector<bool> constant(inputs.size(), false);
  for (int i : constant_inputs) constant.at(static_cast<size_t>(i)) = true;
  std::vector<Tensor> outputs;
  for (const Tensor& r : *ref) outputs.push_back(fresh_tensor(r.dtype(), r.shape(), 0));
  auto prepared = k.kernel->prepare(TestPrepareContext(*k.node, inputs, constant, outputs));
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  EXPECT_EQ(prepared.value(), nullptr);
}

}  // namespace sdx::test
