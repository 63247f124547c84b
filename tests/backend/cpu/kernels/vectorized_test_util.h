// Helpers for the tests of the vectorized, multi-threaded CPU kernels (simd/vector_ops.h +
// cpu::parallel_for): run a node at a chosen instruction-set level and thread count, and check
// that the thread count never changes a bit.
//
//   using namespace sdx::test;
//   for (simd::Isa isa : isa_levels()) {
//     simd::ScopedIsa scope(isa);
//     expect_same_bits_at_1_and_2_threads({.op = "Gelu", .inputs = {x}});
//   }
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/simd/isa.h"
#include "kernel_test_util.h"
#include "runtime/session.h"

namespace sdx::test {

// Every level this CPU runs, the portable fallback first.
inline std::vector<cpu::simd::Isa> isa_levels() {
  std::vector<cpu::simd::Isa> out;
  for (cpu::simd::Isa isa : {cpu::simd::Isa::kScalar, cpu::simd::Isa::kAvx2, cpu::simd::Isa::kAvx512})
    if (static_cast<int>(isa) <= static_cast<int>(cpu::simd::detected_isa())) out.push_back(isa);
  return out;
}

// Element counts around the vector widths (8, 16) and a long odd one.
inline std::vector<int64_t> odd_sizes() { return {1, 7, 15, 17, 33, 1003}; }

// Runs the one-node model through a Session with `threads` intra-op threads.
inline Result<std::vector<Tensor>> run_node_threads(const NodeSpec& spec, int threads) {
  std::vector<std::pair<std::string, Datum>> feeds;
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].defined()) feeds.emplace_back("x" + std::to_string(i), Datum::tensor(spec.inputs[i]));
  runtime::SessionOptions options;
  options.intra_op_num_threads = threads;
  SDX_ASSIGN_OR_RETURN(auto session, runtime::Session::create(one_node_model(spec), options), "create");
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> res, session->run(feeds), "run");
  std::vector<Tensor> out;
  for (const Datum& d : res) out.push_back(d.as_tensor());
  return out;
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.nbytes())) == 0;
}

// Session runs with 1 and with 2 threads give the same bits (the inputs should be large
// enough for the kernel to split, e.g. 1 << 16 elements or more).
inline void expect_same_bits_at_1_and_2_threads(const NodeSpec& spec) {
  SCOPED_TRACE(spec.op);
  auto one = run_node_threads(spec, 1);
  auto two = run_node_threads(spec, 2);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
  ASSERT_EQ(one->size(), two->size());
  for (size_t i = 0; i < one->size(); ++i) EXPECT_TRUE(same_bytes((*one)[i], (*two)[i])) << "output " << i;
}

// n floats, normal-ish with occasional large values (both signs).
inline std::vector<float> random_floats(int64_t n, uint32_t seed, float scale = 3.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  for (size_t i = 0; i < v.size(); i += 97) v[i] *= 12.f;
  return v;
}

// |got - want| within ulps units of float ulp of want (plus an absolute floor).
inline void expect_close_ulps(const std::vector<float>& got, const std::vector<double>& want, double ulps,
                              double abs_floor = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i];
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::fabs(w) + 1e-300), -126) - 23);
    ASSERT_LE(std::fabs(got[i] - w), ulps * ulp + abs_floor) << "element " << i << ": got " << got[i] << ", want " << w;
  }
}

}  // namespace sdx::test
