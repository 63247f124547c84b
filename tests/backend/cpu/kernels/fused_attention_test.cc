// sdx.Attention (backend/cpu/kernels/fused_attention.cc) against a naive reference in double (full
// score matrix, two-pass softmax): plain, scaled, bool and additive masks with broadcasting, causal with
// S_q == S_kv, S_q < S_kv (decode) and S_q > S_kv, shared K/V heads, several query and key blocks (so
// the online softmax rescales), NaN for a fully masked row, the bound form, the scratch bound and errors.
// Tolerance: |got - want| <= 1e-6 + 1e-5 |want| (float32).
#include "backend/cpu/kernels/fused_attention.h"
#include "backend/cpu/threading/thread_pool.h"

#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

Tensor randn(const std::vector<int64_t>& dims, unsigned seed, float amp = 1.f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, amp);
  Tensor t = Tensor::allocate(DType::kFloat32, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

Tensor random_bool(const std::vector<int64_t>& dims, unsigned seed, double p_keep = 0.7) {
  std::mt19937 gen(seed);
  std::bernoulli_distribution dist(p_keep);
  Tensor t = Tensor::allocate(DType::kBool, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = dist(gen);
  return t;
}

struct RefOptions {
  std::optional<double> scale{};
  bool causal = false;
  double mask_value = -std::numeric_limits<double>::infinity();
};

// Index of element (b, h, i, j) of a tensor broadcast (numpy rules) to [B, H, Sq, Skv].
int64_t broadcast_index(const Shape& s, const int64_t idx[4]) {
  int64_t off = 0, stride = 1;
  for (int a = 3; a >= 0; --a) {
    const int md = a - (4 - s.rank());
    if (md < 0) break;
    if (s[md] != 1) off += idx[a] * stride;
    stride *= s[md];
  }
  return off;
}

// Y = softmax(scale Q K^T (+ mask)) V in double, with the kernel's conventions.
std::vector<float> reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                             const RefOptions& o) {
  const int64_t B = q.shape()[0], H = q.shape()[1], Sq = q.shape()[2], D = q.shape()[3];
  const int64_t Skv = k.shape()[2], Dv = v.shape()[3];
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<float> y(static_cast<size_t>(B * H * Sq * Dv), 0.f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        std::vector<double> s;
        for (int64_t j = 0; j < Skv; ++j) {
          if (o.causal && j > i + Skv - Sq) break;
          double acc = 0;
          for (int64_t c = 0; c < D; ++c) {
            const int64_t kidx[4] = {b, h, j, c};
            const int64_t qidx[4] = {b, h, i, c};
            acc +=
                q.data<float>()[broadcast_index(q.shape(), qidx)] * k.data<float>()[broadcast_index(k.shape(), kidx)];
          }
          acc *= scale;
          if (mask) {
            const int64_t midx[4] = {b, h, i, j};
            const int64_t mi = broadcast_index(mask->shape(), midx);
            if (mask->dtype() == DType::kBool) {
              if (!mask->data<bool>()[mi]) acc = o.mask_value;
            } else {
              acc += mask->data<float>()[mi];
            }
          }
          s.push_back(acc);
        }
        if (s.empty()) continue;  // no key visible: zeros
        double mx = -std::numeric_limits<double>::infinity();
        for (double x : s) mx = std::max(mx, x);
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t c = 0; c < Dv; ++c) {
          double acc = 0;
          for (size_t j = 0; j < s.size(); ++j) {
            const int64_t vidx[4] = {b, h, static_cast<int64_t>(j), c};
            acc += s[j] / sum * v.data<float>()[broadcast_index(v.shape(), vidx)];
          }
          y[static_cast<size_t>(((b * H + h) * Sq + i) * Dv + c)] = static_cast<float>(acc);
        }
      }
  return y;
}

std::vector<ir::Attribute> attrs_of(const RefOptions& o) {
  std::vector<ir::Attribute> a;
  if (o.scale) a.push_back(attr_f("scale", static_cast<float>(*o.scale)));
  if (o.causal) a.push_back(attr_i("causal", 1));
  if (!std::isinf(o.mask_value)) a.push_back(attr_f("mask_value", static_cast<float>(o.mask_value)));
  return a;
}

NodeSpec spec_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const RefOptions& o) {
  NodeSpec s{.op = "Attention", .domain = "sdx", .opset = 1, .inputs = {q, k, v}, .attrs = attrs_of(o)};
  if (mask) s.inputs.push_back(*mask);
  return s;
}

void check(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const RefOptions& o) {
  auto y = run_single(spec_of(q, k, v, mask, o));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const int64_t B = q.shape()[0], H = q.shape()[1], Sq = q.shape()[2], Dv = v.shape()[3];
  ASSERT_EQ(y->shape(), (Shape{B, H, Sq, Dv}));
  const std::vector<float> want = reference(q, k, v, mask, o);
  const std::vector<float> got = values<float>(*y);
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-6 + 1e-5 * std::fabs(want[i])) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
}

TEST(FusedAttention, MatchesReferenceWithDefaultAndExplicitScale) {
  const Tensor q = randn({2, 3, 5, 8}, 1), k = randn({2, 3, 7, 8}, 2), v = randn({2, 3, 7, 6}, 3);
  check(q, k, v, nullptr, {});
  check(q, k, v, nullptr, {.scale = 0.7});
}

TEST(FusedAttention, BoolMaskBroadcastWithInfiniteAndFiniteMaskValue) {
  const Tensor q = randn({2, 2, 4, 8}, 4), k = randn({2, 2, 9, 8}, 5), v = randn({2, 2, 9, 8}, 6);
  const Tensor full = random_bool({2, 2, 4, 9}, 7);
  const Tensor per_batch = random_bool({2, 1, 1, 9}, 8);
  const Tensor two_d = random_bool({4, 9}, 9);
  for (const Tensor* m : {&full, &per_batch, &two_d}) {
    check(q, k, v, m, {});
    check(q, k, v, m, {.mask_value = -3.4028234663852886e38});  // Where(mask, s, finfo(float32).min)
    check(q, k, v, m, {.mask_value = -1.0});
  }
}

TEST(FusedAttention, AdditiveMaskBroadcast) {
  const Tensor q = randn({2, 2, 4, 8}, 10), k = randn({2, 2, 9, 8}, 11), v = randn({2, 2, 9, 5}, 12);
  // HF BERT: (1 - attention_mask) * -10000 as [B, 1, 1, S].
  Tensor pad = f32({}, {2, 1, 1, 9});
  for (int j = 6; j < 9; ++j) pad.data<float>()[9 + j] = -10000.f;
  check(q, k, v, &pad, {});
  const Tensor bias = randn({4, 9}, 13);
  check(q, k, v, &bias, {.scale = 0.25});
  const Tensor full = randn({2, 2, 4, 9}, 14);
  check(q, k, v, &full, {});
}

TEST(FusedAttention, CausalSquareDecodeAndMoreQueriesThanKeys) {
  const Tensor k = randn({1, 2, 10, 8}, 15), v = randn({1, 2, 10, 8}, 16);
  check(randn({1, 2, 10, 8}, 17), k, v, nullptr, {.causal = true});  // S_q == S_kv
  check(randn({1, 2, 1, 8}, 18), k, v, nullptr, {.causal = true});   // decode: sees every key
  check(randn({1, 2, 3, 8}, 19), k, v, nullptr, {.causal = true});   // chunked prefill, end-aligned
  check(randn({1, 2, 13, 8}, 20), k, v, nullptr, {.causal = true});  // 3 rows see no key: zeros
  const Tensor pad = random_bool({1, 1, 1, 10}, 21, 0.8);
  check(randn({1, 2, 4, 8}, 22), k, v, &pad, {.causal = true, .mask_value = -1e4});
}

TEST(FusedAttention, SharedKvHeadsBroadcast) {
  // K and V with one head (multi-query attention) and one batch broadcast over Q's.
  check(randn({2, 4, 3, 8}, 23), randn({1, 1, 6, 8}, 24), randn({1, 1, 6, 4}, 25), nullptr, {});
  check(randn({2, 4, 3, 8}, 26), randn({2, 1, 6, 8}, 27), randn({2, 4, 6, 4}, 28), nullptr, {});
}

TEST(FusedAttention, ManyBlocksStreamTheSoftmax) {
  // 70 query rows (two blocks of at most 64) over 300 keys (three blocks of at most 128); scores of a
  // wide range, so the running maximum grows from block to block and earlier partial sums get rescaled.
  const int64_t Sq = 70, Skv = 300;
  ASSERT_GT(Sq, cpu::kAttentionBlockQ);
  ASSERT_GT(Skv, 2 * cpu::kAttentionBlockKv);
  const Tensor q = randn({1, 2, Sq, 16}, 29, 2.f), k = randn({1, 2, Skv, 16}, 30, 2.f), v = randn({1, 2, Skv, 12}, 31);
  check(q, k, v, nullptr, {});
  check(q, k, v, nullptr, {.causal = true});
  const Tensor m = random_bool({1, 2, Sq, Skv}, 32, 0.5);
  check(q, k, v, &m, {.causal = true, .mask_value = -5.0});
  const Tensor add = randn({Sq, Skv}, 33, 3.f);
  check(q, k, v, &add, {});
}

TEST(FusedAttention, FullyMaskedRowIsNaNAsSoftmaxGives) {
  const Tensor q = randn({1, 1, 2, 4}, 34), k = randn({1, 1, 3, 4}, 35), v = randn({1, 1, 3, 2}, 36);
  const Tensor m = bools({false, false, false, true, false, true}, {1, 1, 2, 3});
  auto y = run_single(spec_of(q, k, v, &m, {}));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<float> got = values<float>(*y);
  EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1]));
  const std::vector<float> want = reference(q, k, v, &m, {});
  EXPECT_NEAR(got[2], want[2], 1e-5);
  EXPECT_NEAR(got[3], want[3], 1e-5);
}

TEST(FusedAttention, BoundFormMatchesRunWithoutAllocating) {
  const Tensor q = randn({1, 2, 70, 16}, 37), k = randn({1, 2, 140, 16}, 38), v = randn({1, 2, 140, 8}, 39);
  expect_bound_matches(spec_of(q, k, v, nullptr, {}));
  expect_bound_matches(spec_of(q, k, v, nullptr, {.scale = 0.5, .causal = true}));
  const Tensor m = random_bool({1, 1, 70, 140}, 40);
  expect_bound_matches(spec_of(q, k, v, &m, {.mask_value = -1e9}));
  const Tensor add = randn({1, 2, 1, 140}, 41);
  expect_bound_matches(spec_of(q, k, v, &add, {.causal = true}), /*constant_inputs=*/{3});
}

// The (batch, head, query block) tasks split over a pool: bitwise the single-threaded result, for run()
// and the bound form (whose per-thread scratch is made at prepare time).
TEST(FusedAttention, ThreadedMatchesSingleThreadedBitwise) {
  const Tensor q = randn({2, 3, 130, 16}, 51), k = randn({2, 3, 150, 16}, 52), v = randn({2, 3, 150, 8}, 53);
  const Tensor add = randn({2, 1, 130, 150}, 54);
  for (const RefOptions& o : {RefOptions{}, RefOptions{.causal = true}}) {
    auto one = run_single(spec_of(q, k, v, &add, o));
    ASSERT_TRUE(one.is_ok()) << one.status().to_string();
    cpu::ThreadPool pool(3);
    cpu::ScopedThreadPool scope(&pool);
    auto three = run_single(spec_of(q, k, v, &add, o));
    ASSERT_TRUE(three.is_ok()) << three.status().to_string();
    EXPECT_EQ(values<float>(*one), values<float>(*three));
    expect_bound_matches(spec_of(q, k, v, &add, o));
  }
}

TEST(FusedAttention, ScratchDoesNotGrowWithSequenceLength) {
  const int64_t small = cpu::fused_attention_scratch_bytes(4, 128, 128, 64, 64);
  const int64_t large = cpu::fused_attention_scratch_bytes(4, 8192, 8192, 64, 64);
  EXPECT_EQ(small, large);
  EXPECT_LT(large, 8192 * 8192 * 4 / 256);  // far below one S_q x S_kv score matrix
  // O(block * D): bigger heads need more packing space, the sequence lengths never.
  EXPECT_LT(small, 4 * (cpu::kAttentionBlockQ * cpu::kAttentionBlockKv + 4 * 64 * (cpu::kAttentionBlockKv + 64)));
}

TEST(FusedAttention, BadShapesAreErrors) {
  const Tensor k = randn({1, 2, 6, 8}, 42), v = randn({1, 2, 6, 8}, 43);
  EXPECT_FALSE(run_single(spec_of(randn({2, 5, 8}, 44), k, v, nullptr, {})).is_ok());     // 3-D Q
  EXPECT_FALSE(run_single(spec_of(randn({1, 2, 5, 4}, 45), k, v, nullptr, {})).is_ok());  // D differs
  EXPECT_FALSE(run_single(spec_of(randn({1, 3, 5, 8}, 46), k, v, nullptr, {})).is_ok());  // heads 3 vs 2
  const Tensor m = random_bool({1, 2, 5, 7}, 47);
  EXPECT_FALSE(run_single(spec_of(randn({1, 2, 5, 8}, 48), k, v, &m, {})).is_ok());  // mask S_kv 7
  const Tensor im = i64({}, {5, 6});
  EXPECT_FALSE(run_single(spec_of(randn({1, 2, 5, 8}, 49), k, v, &im, {})).is_ok());  // int mask
}

}  // namespace
}  // namespace sdx
