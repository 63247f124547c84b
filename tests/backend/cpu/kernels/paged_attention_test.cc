// sdx.PagedAttention and sdx.PagedConcat (backend/cpu/kernels/paged_attention.cc, paged_concat.cc):
// PagedConcat against a gather written out here; PagedAttention against sdx.Attention over PagedConcat's
// tensors (what the fusion replaces), for decode and prefill steps, pages scattered over the pool (runs of
// several lengths, more keys than one key block), empty slots masked or not, an additive and a bool mask,
// shared K/V heads; a packed prefill (a sequence's tokens as rows of their own, seeing the earlier ones
// through -2 - j entries) against the same prefill as one row; the bound forms; errors naming a slot
// outside the pool, a new token the call does not have, and mismatched shapes.
#include <algorithm>
#include <numeric>
#include <random>

#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

Tensor randn(const std::vector<int64_t>& dims, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  Tensor t = Tensor::allocate(DType::kFloat32, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// [B, P] slot map: each sequence's tokens in pages of `page` slots, the pages shuffled over the pool; the
// last `empty` positions of sequence b (b odd) are empty (-1). Slots stay below `slots` - 1.
Tensor slot_map(int64_t B, int64_t P, int64_t page, int64_t slots, int64_t empty, unsigned seed) {
  const int64_t pages = slots / page - 1;
  std::vector<int64_t> order(static_cast<size_t>(pages));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  Tensor t = Tensor::allocate(DType::kInt64, Shape{B, P}).value();
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b) {
    int64_t base = 0;
    for (int64_t p = 0; p < P; ++p) {
      if (p % page == 0) base = order[next++ % order.size()] * page;
      t.data<int64_t>()[b * P + p] = (b % 2 == 1 && p >= P - empty) ? -1 : base + p % page;
    }
  }
  return t;
}

// Additive [B, 1, S, P + S] mask: 0, and the float32 minimum at each sequence's empty slots.
Tensor padding_mask(const Tensor& map, int64_t S) {
  const int64_t B = map.shape()[0], P = map.shape()[1];
  Tensor m = Tensor::allocate(DType::kFloat32, Shape{B, 1, S, P + S}).value();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < P + S; ++j)
        m.data<float>()[(b * S + i) * (P + S) + j] =
            j < P && map.data<int64_t>()[b * P + j] < 0 ? -3.4028234663852886e38f : 0.f;
  return m;
}

NodeSpec paged_concat(const Tensor& cache, const Tensor& map, const Tensor& fresh) {
  return NodeSpec{.op = "PagedConcat", .domain = "sdx", .opset = 1, .inputs = {cache, map, fresh}};
}

TEST(PagedConcat, GathersThePastFromItsSlotsThenAppendsTheNewRows) {
  const int64_t B = 3, H = 2, P = 9, S = 2, D = 5, slots = 40;
  Tensor cache = randn({H, slots, D}, 1), fresh = randn({B, H, S, D}, 2), map = slot_map(B, P, 4, slots, 3, 3);
  auto y = run_single(paged_concat(cache, map, fresh));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  ASSERT_EQ(y.value().shape(), (Shape{B, H, P + S, D}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < P + S; ++t)
        for (int64_t d = 0; d < D; ++d) {
          const int64_t slot = t < P ? map.data<int64_t>()[b * P + t] : 0;
          const float want = t >= P      ? fresh.data<float>()[((b * H + h) * S + t - P) * D + d]
                             : slot < 0 ? 0.f
                                        : cache.data<float>()[(h * slots + slot) * D + d];
          ASSERT_EQ(y.value().data<float>()[((b * H + h) * (P + S) + t) * D + d], want) << b << h << t << d;
        }
  expect_bound_matches(paged_concat(cache, map, fresh));
}

TEST(PagedConcat, AnEntryBelowMinusOneIsANewTokenOfTheCall) {
  const int64_t B = 2, H = 2, S = 2, D = 3, slots = 8;
  Tensor cache = randn({H, slots, D}, 1), fresh = randn({B, H, S, D}, 2);
  Tensor map = i64({5, -2 - 3, -1, -2 - 0}, {2, 2});  // row 1 reads token 3 (row 1, position 1), row 2 token 0
  auto y = run_single(paged_concat(cache, map, fresh));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const float* f = fresh.data<float>();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) {
      const float* out = y.value().data<float>();
      EXPECT_EQ(out[((0 * H + h) * 4 + 0) * D + d], cache.data<float>()[(h * slots + 5) * D + d]);
      EXPECT_EQ(out[((0 * H + h) * 4 + 1) * D + d], f[((1 * H + h) * S + 1) * D + d]);
      EXPECT_EQ(out[((1 * H + h) * 4 + 0) * D + d], 0.f);
      EXPECT_EQ(out[((1 * H + h) * 4 + 1) * D + d], f[((0 * H + h) * S + 0) * D + d]);
    }
  expect_bound_matches(paged_concat(cache, map, fresh));
  auto bad = run_single(paged_concat(cache, i64({5, -2 - 4, -1, -1}, {2, 2}), fresh));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("slot_map[0, 1] = -6 names new token 4 of the call, which has 4"),
            std::string::npos) << bad.status().to_string();
}

// [B, H, S, D] -> [S, H, B, D] (a sequence's S tokens as S rows of one token, or back).
Tensor swap_rows(const Tensor& x) {
  const int64_t B = x.shape()[0], H = x.shape()[1], S = x.shape()[2], D = x.shape()[3];
  Tensor t = Tensor::allocate(DType::kFloat32, Shape{S, H, B, D}).value();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        std::copy_n(x.data<float>() + ((b * H + h) * S + s) * D, D, t.data<float>() + ((s * H + h) * B + b) * D);
  return t;
}

struct Packed {
  int64_t past, fresh;  // a sequence's tokens in the pool and in this call
};

// Sequences packed as rows of one call (S = 1): token i of sequence q is a row with q's past slots, then
// -2 - k for q's earlier tokens k of the call, then empty positions up to the width; `pad` rows after them
// hold no sequence (all empty). The mask (kind "additive", "bool" or "none") hides every empty position.
// Each sequence's rows are compared with the same sequence as one row of S = fresh tokens (masked kinds: the
// empty positions get no weight either way), or (no mask: empty slots are zero keys) with sdx.Attention
// over sdx.PagedConcat's tensors.
void check_packed(const std::vector<Packed>& seqs, int64_t pad, const std::string& kind, int64_t H, int64_t Hkv,
                  unsigned seed) {
  SCOPED_TRACE(kind + " mask, " + std::to_string(seqs.size()) + " sequences");
  const int64_t D = 8, slots = 512;
  int64_t rows = pad, width = 1;
  for (const Packed& q : seqs) rows += q.fresh, width = std::max(width, q.past + q.fresh + 2);
  Tensor q = randn({rows, H, 1, D}, seed), kn = randn({rows, Hkv, 1, D}, seed + 1),
         vn = randn({rows, Hkv, 1, D}, seed + 2), kc = randn({Hkv, slots, D}, seed + 3),
         vc = randn({Hkv, slots, D}, seed + 4);
  Tensor map = Tensor::allocate(DType::kInt64, Shape{rows, width}).value();
  Tensor add = Tensor::allocate(DType::kFloat32, Shape{rows, 1, 1, width + 1}).value();
  Tensor keep = Tensor::allocate(DType::kBool, Shape{rows, 1, 1, width + 1}).value();
  std::vector<Tensor> pasts;
  int64_t r0 = 0;
  for (const Packed& sq : seqs) {
    pasts.push_back(slot_map(1, sq.past, 4, slots / 2, 0, seed + 5 + static_cast<unsigned>(r0)));
    for (int64_t i = 0; i < sq.fresh; ++i)
      for (int64_t t = 0; t <= width; ++t) {
        const int64_t e = t < sq.past ? pasts.back().data<int64_t>()[t] : t - sq.past < i ? -2 - (r0 + t - sq.past) : -1;
        if (t < width) map.data<int64_t>()[(r0 + i) * width + t] = e;
        add.data<float>()[(r0 + i) * (width + 1) + t] = t < width && e == -1 ? -3.4028234663852886e38f : 0.f;
        keep.data<bool>()[(r0 + i) * (width + 1) + t] = !(t < width && e == -1);
      }
    r0 += sq.fresh;
  }
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t t = 0; t <= width; ++t) {
      if (t < width) map.data<int64_t>()[r * width + t] = -1;
      add.data<float>()[r * (width + 1) + t] = t < width ? -3.4028234663852886e38f : 0.f;
      keep.data<bool>()[r * (width + 1) + t] = t == width;
    }
  NodeSpec packed{.op = "PagedAttention", .domain = "sdx", .opset = 1, .inputs = {q, kn, vn, kc, vc, map}};
  if (kind != "none") packed.inputs.push_back(kind == "bool" ? keep : add);
  auto got = run_single(packed);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_bound_matches(packed);
  if (kind == "none") {
    auto k = run_single(paged_concat(kc, map, kn));
    auto v = run_single(paged_concat(vc, map, vn));
    ASSERT_TRUE(k.is_ok() && v.is_ok());
    auto want = run_single(NodeSpec{.op = "Attention", .domain = "sdx", .opset = 1, .inputs = {q, k.value(), v.value()}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    for (int64_t i = 0; i < got.value().numel(); ++i)
      ASSERT_NEAR(got.value().data<float>()[i], want.value().data<float>()[i], 1e-5f) << i;
    return;
  }
  r0 = 0;
  for (size_t k = 0; k < seqs.size(); ++k) {
    const Packed& sq = seqs[k];
    auto rows_of = [&](const Tensor& x, int64_t heads) {  // rows r0 .. r0 + fresh of x as [1, heads, fresh, D]
      Tensor t = Tensor::allocate(DType::kFloat32, Shape{1, heads, sq.fresh, D}).value();
      for (int64_t i = 0; i < sq.fresh; ++i)
        for (int64_t h = 0; h < heads; ++h)
          std::copy_n(x.data<float>() + ((r0 + i) * heads + h) * D, D, t.data<float>() + (h * sq.fresh + i) * D);
      return t;
    };
    auto want = run_single(NodeSpec{.op = "PagedAttention", .domain = "sdx", .opset = 1,
                                    .inputs = {rows_of(q, H), rows_of(kn, Hkv), rows_of(vn, Hkv), kc, vc, pasts[k]}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    const Tensor mine = rows_of(got.value(), H);
    for (int64_t i = 0; i < mine.numel(); ++i) {
      const float w = want.value().data<float>()[i];
      ASSERT_NEAR(mine.data<float>()[i], w, 1e-6f + 1e-5f * std::fabs(w)) << "sequence " << k << " at " << i;
    }
    r0 += sq.fresh;
  }
}

TEST(PagedAttention, PackedPrefillsEqualEachPrefillAsOneRow) {
  // One prompt with a past (a block of 9 rows); three prompts and two decode rows in one call, then padding;
  // a prompt of 150 tokens (blocks of 64, 64 and 22 rows); the same with a bool mask; without a mask (no
  // row blocks: empty slots are zero keys with weight).
  check_packed({{40, 9}}, 0, "additive", 4, 2, 31);
  check_packed({{0, 5}, {17, 1}, {3, 12}, {30, 1}, {0, 1}}, 3, "additive", 4, 2, 41);
  check_packed({{8, 150}}, 2, "additive", 2, 2, 51);
  check_packed({{0, 5}, {17, 1}, {3, 70}}, 1, "bool", 4, 1, 61);
  check_packed({{6, 4}, {0, 3}}, 2, "none", 2, 2, 71);
}

struct Case {
  int64_t B, H, Hkv, S, P, D, page, empty;
  bool mask, causal;
};

NodeSpec paged_attention(const Case& c, const Tensor& q, const Tensor& kn, const Tensor& vn, const Tensor& kc,
                         const Tensor& vc, const Tensor& map, const Tensor& mask) {
  NodeSpec spec{.op = "PagedAttention", .domain = "sdx", .opset = 1, .inputs = {q, kn, vn, kc, vc, map}};
  if (c.mask) spec.inputs.push_back(mask);
  spec.attrs = {attr_i("causal", c.causal ? 1 : 0)};
  return spec;
}

TEST(PagedAttention, IsAttentionOverThePagedConcatTensors) {
  const Case cases[] = {
      {1, 4, 4, 1, 300, 16, 16, 0, false, true},   // decode, one sequence, keys over several blocks
      {3, 4, 4, 1, 37, 16, 4, 5, true, true},      // decode batch, short pages, masked empty slots
      {2, 4, 1, 5, 23, 8, 8, 4, true, true},       // prefill of 5 tokens, one shared K/V head
      {2, 2, 2, 3, 11, 8, 4, 2, false, false},     // not causal, empty slots unmasked (zero keys)
      {2, 4, 4, 70, 140, 16, 32, 9, true, true},   // two query blocks
      {2, 4, 4, 1, 400, 16, 16, 270, true, true},  // decode padded to its bucket: masked empty key blocks skipped
      {2, 4, 4, 1, 400, 16, 16, 270, false, true}, // the same unmasked: empty slots are zero keys with weight
  };
  unsigned seed = 10;
  for (const Case& c : cases) {
    const int64_t slots = 8 * c.P + 64;
    Tensor q = randn({c.B, c.H, c.S, c.D}, seed++), kn = randn({c.B, c.Hkv, c.S, c.D}, seed++),
           vn = randn({c.B, c.Hkv, c.S, c.D}, seed++), kc = randn({c.Hkv, slots, c.D}, seed++),
           vc = randn({c.Hkv, slots, c.D}, seed++);
    Tensor map = slot_map(c.B, c.P, c.page, slots, c.empty, seed++);
    Tensor mask = padding_mask(map, c.S);
    auto k = run_single(paged_concat(kc, map, kn));
    auto v = run_single(paged_concat(vc, map, vn));
    ASSERT_TRUE(k.is_ok() && v.is_ok());
    NodeSpec ref{.op = "Attention", .domain = "sdx", .opset = 1, .inputs = {q, k.value(), v.value()}};
    if (c.mask) ref.inputs.push_back(mask);
    ref.attrs = {attr_i("causal", c.causal ? 1 : 0)};
    auto want = run_single(ref);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    const NodeSpec spec = paged_attention(c, q, kn, vn, kc, vc, map, mask);
    auto got = run_single(spec);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_EQ(got.value().shape(), want.value().shape());
    for (int64_t i = 0; i < got.value().numel(); ++i) {
      const float w = want.value().data<float>()[i];
      ASSERT_NEAR(got.value().data<float>()[i], w, 1e-6f + 1e-5f * std::fabs(w)) << "case P=" << c.P << " at " << i;
    }
    expect_bound_matches(spec);
  }
}

TEST(PagedAttention, ASlotOutsideThePoolOrMismatchedShapesAreErrors) {
  const Case c{2, 2, 2, 1, 6, 4, 2, 0, false, true};
  Tensor q = randn({2, 2, 1, 4}, 1), kn = randn({2, 2, 1, 4}, 2), vn = randn({2, 2, 1, 4}, 3),
         kc = randn({2, 16, 4}, 4), vc = randn({2, 16, 4}, 5);
  Tensor map = i64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16}, {2, 6});
  auto r = run_single(paged_attention(c, q, kn, vn, kc, vc, map, Tensor()));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("slot_map[1, 5] = 16 is outside the KV cache's 16 slots"), std::string::npos)
      << r.status().to_string();
  auto g = run_single(paged_concat(kc, map, kn));
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("slot_map[1, 5] = 16"), std::string::npos) << g.status().to_string();
  Tensor short_cache = randn({2, 16, 3}, 6);
  auto bad = run_single(paged_attention(c, q, kn, vn, short_cache, vc, i64(std::vector<int64_t>(12, 0), {2, 6}), Tensor()));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("shapes do not match"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace sdx
