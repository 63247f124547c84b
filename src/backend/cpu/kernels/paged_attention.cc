// sdx.PagedAttention (schema and semantics in ir/schemas/paged_attention.cc): a decoder step's attention
// over a KV cache that is not one tensor per sequence but slots of a shared pool, read through a slot map
// (the block table of a paged cache, one entry per past token), followed by the step's own new keys.
//
// Per (batch, head, block of query rows) the keys are folded into a streamed softmax
// (kernels/util/attention_fold.h): the past in runs of consecutive slots (one run per contiguous stretch of
// the pool, at most kAttentionBlockKv keys: a sequence whose pages were handed out in order is read in long
// runs straight from the pool, nothing gathered), then the new keys with the causal limit among them.
// Empty past entries (-1) are zero keys and values, as the zero padding of a bucketed past tensor (the mask
// is what gives them no weight), so the op is exactly attention over sdx.PagedConcat's tensors. An entry
// -2 - j is this call's new token j (kernels/util/paged_slots.h: the tokens of a packed prefill see their
// sequence's earlier tokens so); when a slot map has any, K_new / V_new are laid out by token once per call
// ([H_kv, B * S, D]) so a run of them is read in place as a pool run is.
//
// Float32. Threads: tasks are split over the session's pool as in sdx.Attention, one scratch per thread,
// so the result does not depend on the thread count. The bound form allocates its scratch once; the slot
// map is checked against the pool's size on every call (it is an input).
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/kernels/fused_attention.h"
#include "backend/cpu/kernels/util/attention_fold.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/kernels/util/paged_slots.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using attention::MaskKind;

struct PagedShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, s = 0, d = 0, dv = 0, past = 0, slots = 0;
  attention::MaskLayout mask;  // the mask broadcast to the scores
};

struct Params {
  float scale = 1.f;
  bool causal = true;
  float mask_value = -std::numeric_limits<float>::infinity();
};

struct Scratch {
  explicit Scratch(const PagedShape& s)
      : scores(static_cast<size_t>(rows(s) * kAttentionBlockKv)),
        row_max(static_cast<size_t>(rows(s))),
        row_sum(static_cast<size_t>(rows(s))),
        workspace(static_cast<size_t>(std::max(gemm_workspace_size(kAttentionBlockKv, s.d),
                                               gemm_workspace_size(s.dv, kAttentionBlockKv)))),
        zeros(static_cast<size_t>(kAttentionBlockKv * std::max(s.d, s.dv))),
        q_rows(static_cast<size_t>(s.s == 1 ? rows(s) * s.d : 0)),
        y_rows(static_cast<size_t>(s.s == 1 ? rows(s) * s.dv : 0)) {
    std::fill(zeros.data(), zeros.data() + zeros.size(), 0.f);
  }
  // Query rows a block takes: of one sequence's S, or (S = 1) of a RowBlock's rows.
  static int64_t bq(const PagedShape& s) { return std::min(s.s, kAttentionBlockQ); }
  static int64_t rows(const PagedShape& s) { return s.s == 1 ? std::min(s.batch, kAttentionBlockQ) : bq(s); }
  ScratchBuffer<float> scores, row_max;
  ScratchBuffer<double> row_sum;
  ScratchBuffer<float> workspace;
  ScratchBuffer<float> zeros;           // the keys and values of empty slots
  ScratchBuffer<float> q_rows, y_rows;  // a RowBlock's query and output rows of one head, contiguous
};

// Rows b0 .. b0 + rows - 1 (S = 1) that fold as one block of queries: the tokens of a packed prefill, row
// b + 1 being row b's sequence one token on (plan_row_blocks).
struct RowBlock {
  int64_t b0 = 0, rows = 1;
  int64_t keys = 0;  // the slot map entries of its last row (keys_of_row)
};

// One call's scratch: a Scratch per thread, and K_new / V_new by token, [H_kv, B * S, D] (what -2 - j slot
// map entries read).
struct Work {
  // The by-token layout is allocated here for S = 1 (decode steps and packed prompts: rows of one token);
  // a prefill run alone (S > 1) never reads new tokens through its slot map, so it holds none, and a slot
  // map that does name one with S > 1 (sdx's loops make none) allocates it on its first call.
  explicit Work(const PagedShape& s) {
    if (s.s == 1) allocate_tokens(s);
    for (int u = 0; u < std::max(1, current_num_threads()); ++u) threads.push_back(std::make_unique<Scratch>(s));
    blocks.reserve(static_cast<size_t>(s.batch));
  }
  void allocate_tokens(const PagedShape& s) {
    tokens_k = ScratchBuffer<float>(static_cast<size_t>(s.kv_heads * s.batch * s.s * s.d));
    tokens_v = ScratchBuffer<float>(static_cast<size_t>(s.kv_heads * s.batch * s.s * s.dv));
  }
  std::vector<std::unique_ptr<Scratch>> threads;
  ScratchBuffer<float> tokens_k, tokens_v;
  std::vector<RowBlock> blocks;  // this call's (plan_row_blocks), capacity B: filled without allocating
};

struct Pointers {
  const float *q, *k_new, *v_new, *k_cache, *v_cache;
  const int64_t* slots;
  const void* mask;
  float* y;
  const float *k_tokens = nullptr, *v_tokens = nullptr;  // Work::tokens_k / tokens_v, once filled
};

// Whether the mask hides key positions [t, t + n) from query rows [i0, i0 + mq) of head h of batch b (as
// hidden() below: a bool false with a mask_value that leaves no weight, or an additive value whose exp() is 0).
// A run of empty slots it hides gives those rows no weight: compute_block skips it (a decode step's row padded
// to its KV bucket folds only the keys it has).
bool run_hidden(const PagedShape& s, const Params& p, const Pointers& x, int64_t b, int64_t h, int64_t i0, int64_t mq,
                int64_t t, int64_t n) {
  if (s.mask.kind == MaskKind::kNone || (s.mask.kind == MaskKind::kBool && p.mask_value > -1e30f)) return false;
  const int64_t base = b * s.mask.sb + h * s.mask.sh + t * s.mask.sk;
  for (int64_t r = 0; r < mq; ++r) {
    const int64_t at = base + (i0 + r) * s.mask.sq;
    for (int64_t j = 0; j < n; ++j) {
      const bool hides = s.mask.kind == MaskKind::kBool ? !static_cast<const bool*>(x.mask)[at + j * s.mask.sk]
                                                        : static_cast<const float*>(x.mask)[at + j * s.mask.sk] <= -1e30f;
      if (!hides) return false;
    }
  }
  return true;
}

// Query rows [i0, i0 + block) of head h of batch b.
void compute_block(const PagedShape& s, const Params& p, const Pointers& x, Scratch& scratch, int64_t b, int64_t h,
                   int64_t i0) {
  const int64_t mq = std::min(Scratch::bq(s), s.s - i0);
  const int64_t hk = h / (s.heads / s.kv_heads);
  const float* q = x.q + ((b * s.heads + h) * s.s + i0) * s.d;
  float* y = x.y + ((b * s.heads + h) * s.s + i0) * s.dv;
  float* const mx = scratch.row_max.data();
  double* const sum = scratch.row_sum.data();
  const bool* mask_b = s.mask.kind == MaskKind::kBool ? static_cast<const bool*>(x.mask) : nullptr;
  const float* mask_a = s.mask.kind == MaskKind::kAdditive ? static_cast<const float*>(x.mask) : nullptr;
  const int64_t mask_bh = b * s.mask.sb + h * s.mask.sh;
  // Applies the mask at logical key positions [j0, j0 + visible) to row r's scores.
  auto apply_mask = [&](int64_t r, float* row, int64_t j0, int64_t visible) {
    const int64_t at = mask_bh + (i0 + r) * s.mask.sq + j0 * s.mask.sk;
    if (mask_b) {
      for (int64_t j = 0; j < visible; ++j)
        if (!mask_b[at + j * s.mask.sk]) row[j] = p.mask_value;
    } else if (mask_a) {
      if (s.mask.sk == 1) simd::binary_vv(simd::BinaryOp::kAdd, row, mask_a + at, row, visible);
      else
        for (int64_t j = 0; j < visible; ++j) row[j] += mask_a[at + j * s.mask.sk];
    }
  };
  attention::begin_rows(y, mq, s.dv, mx, sum);
  const int64_t* map = x.slots + b * s.past;
  for (int64_t t = 0; t < s.past;) {
    const int64_t slot = map[t];
    int64_t n = 1;  // a run: empty slots, consecutive pool slots, or consecutive new tokens
    const int64_t step = slot < paged::kEmpty ? -1 : slot == paged::kEmpty ? 0 : 1;
    while (t + n < s.past && n < kAttentionBlockKv && map[t + n] == slot + step * n) ++n;
    if (slot == paged::kEmpty && run_hidden(s, p, x, b, h, i0, mq, t, n)) {  // no weight for these rows
      t += n;
      continue;
    }
    auto prepare = [&](int64_t r, float* row) -> int64_t {
      apply_mask(r, row, t, n);
      return n;
    };
    const float *kr = scratch.zeros.data(), *vr = scratch.zeros.data();
    if (slot >= 0) {
      kr = x.k_cache + (hk * s.slots + slot) * s.d;
      vr = x.v_cache + (hk * s.slots + slot) * s.dv;
    } else if (slot < paged::kEmpty) {
      const int64_t j = hk * s.batch * s.s + paged::new_token(slot);
      kr = x.k_tokens + j * s.d;
      vr = x.v_tokens + j * s.dv;
    }
    attention::fold_chunk(q, mq, s.d, s.dv, kr, vr, n, p.scale, prepare, scratch.scores.data(), mx, sum,
                          scratch.workspace.data(), y);
    t += n;
  }
  const float* kn = x.k_new + (b * s.kv_heads + hk) * s.s * s.d;
  const float* vn = x.v_new + (b * s.kv_heads + hk) * s.s * s.dv;
  const int64_t new_end = p.causal ? i0 + mq : s.s;  // new keys any row of this block may see
  for (int64_t j0 = 0; j0 < new_end; j0 += kAttentionBlockKv) {
    const int64_t nk = std::min(kAttentionBlockKv, new_end - j0);
    auto prepare = [&](int64_t r, float* row) -> int64_t {
      const int64_t visible = p.causal ? std::clamp<int64_t>(i0 + r + 1 - j0, 0, nk) : nk;
      apply_mask(r, row, s.past + j0, visible);
      return visible;
    };
    attention::fold_chunk(q, mq, s.d, s.dv, kn + j0 * s.d, vn + j0 * s.dv, nk, p.scale, prepare,
                          scratch.scores.data(), mx, sum, scratch.workspace.data(), y);
  }
  attention::finish_rows(y, mq, s.dv, sum, [](int64_t) { return false; });
}

// The mask's value at (batch b, head h, query row 0, key position t) hides the key: a bool false (with a
// mask_value that leaves no weight) or an additive value so low that exp() of it is 0, for every head.
bool hidden(const PagedShape& s, const Params& p, const Pointers& x, int64_t b, int64_t t) {
  for (int64_t h = 0; h < (s.mask.sh ? s.heads : 1); ++h) {
    const int64_t at = b * s.mask.sb + h * s.mask.sh + t * s.mask.sk;
    const bool hides = s.mask.kind == MaskKind::kBool ? !static_cast<const bool*>(x.mask)[at] && p.mask_value <= -1e30f
                       : s.mask.kind == MaskKind::kAdditive ? static_cast<const float*>(x.mask)[at] <= -1e30f
                                                             : false;
    if (!hides) return false;
  }
  return true;
}

// Entries of slot map row b before its first empty one when every later one is empty and hidden by the
// mask (then the row's keys are those entries and its own: nothing else gets weight); else -1.
int64_t keys_of_row(const PagedShape& s, const Params& p, const Pointers& x, int64_t b) {
  const int64_t* row = x.slots + b * s.past;
  int64_t n = 0;
  while (n < s.past && row[n] != paged::kEmpty) ++n;
  for (int64_t t = n; t < s.past; ++t)
    if (row[t] != paged::kEmpty || !hidden(s, p, x, b, t)) return -1;
  return n;
}

// Splits the rows (S = 1) into RowBlocks: row b joins row b - 1's block when both have keys_of_row, row b's
// entries are row b - 1's followed by -2 - (b - 1) (its sequence one token on, in this call), and the block
// has fewer than kAttentionBlockQ rows. A packed prompt of n tokens becomes ceil(n / 64) blocks whose keys
// are folded once per block, as a prefill's are, instead of once per row.
void plan_row_blocks(const PagedShape& s, const Params& p, const Pointers& x, std::vector<RowBlock>& blocks) {
  blocks.clear();
  int64_t prev = -1;
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t n = keys_of_row(s, p, x, b);
    const int64_t* row = x.slots + b * s.past;
    const bool joins = n > 0 && prev >= 0 && n == prev + 1 && row[prev] == -2 - (b - 1) &&
                       std::equal(row, row + prev, row - s.past) && blocks.back().rows < kAttentionBlockQ;
    if (joins) ++blocks.back().rows;
    else blocks.push_back(RowBlock{b, 1, n});
    blocks.back().keys = n;
    prev = n;
  }
}

// Head h of a RowBlock: its rows' queries gathered, the keys of its last row (its entries, then its own new
// key) folded once, row r seeing the first (its entries + 1) of them; the mask of row r applies at its own
// positions (its own key: the mask's new-key position P).
void compute_rows(const PagedShape& s, const Params& p, const Pointers& x, Scratch& scratch, const RowBlock& blk,
                  int64_t h) {
  const int64_t m = blk.rows, last = blk.b0 + m - 1, hk = h / (s.heads / s.kv_heads);
  const int64_t n_last = blk.keys, n_first = n_last - (m - 1);
  float *q = scratch.q_rows.data(), *y = scratch.y_rows.data();
  for (int64_t r = 0; r < m; ++r) std::copy_n(x.q + ((blk.b0 + r) * s.heads + h) * s.d, s.d, q + r * s.d);
  float* const mx = scratch.row_max.data();
  double* const sum = scratch.row_sum.data();
  // Row r's scores for block keys [t, t + n): its keys are block keys [0, n_first + r] (the last one its
  // own); returns how many of the n it sees, masked.
  auto prepare_at = [&](int64_t t, int64_t n) {
    return [&, t, n](int64_t r, float* row) -> int64_t {
      const int64_t own = n_first + r, b = blk.b0 + r;
      const int64_t visible = std::clamp<int64_t>(own + 1 - t, 0, n);
      const int64_t base = b * s.mask.sb + h * s.mask.sh;
      for (int64_t j = 0; j < visible && s.mask.kind != MaskKind::kNone; ++j) {
        const int64_t at = base + (t + j == own ? s.past : t + j) * s.mask.sk;
        if (s.mask.kind == MaskKind::kBool) {
          if (!static_cast<const bool*>(x.mask)[at]) row[j] = p.mask_value;
        } else {
          row[j] += static_cast<const float*>(x.mask)[at];
        }
      }
      return visible;
    };
  };
  attention::begin_rows(y, m, s.dv, mx, sum);
  const int64_t* map = x.slots + last * s.past;
  for (int64_t t = 0; t < n_last;) {
    const int64_t slot = map[t];
    const int64_t step = slot < paged::kEmpty ? -1 : 1;
    int64_t n = 1;
    while (t + n < n_last && n < kAttentionBlockKv && map[t + n] == slot + step * n) ++n;
    const int64_t j = hk * s.batch + paged::new_token(slot);
    const float* kr = slot >= 0 ? x.k_cache + (hk * s.slots + slot) * s.d : x.k_tokens + j * s.d;
    const float* vr = slot >= 0 ? x.v_cache + (hk * s.slots + slot) * s.dv : x.v_tokens + j * s.dv;
    attention::fold_chunk(q, m, s.d, s.dv, kr, vr, n, p.scale, prepare_at(t, n), scratch.scores.data(), mx, sum,
                          scratch.workspace.data(), y);
    t += n;
  }
  attention::fold_chunk(q, m, s.d, s.dv, x.k_new + (last * s.kv_heads + hk) * s.d,
                        x.v_new + (last * s.kv_heads + hk) * s.dv, 1, p.scale, prepare_at(n_last, 1),
                        scratch.scores.data(), mx, sum, scratch.workspace.data(), y);
  attention::finish_rows(y, m, s.dv, sum, [](int64_t) { return false; });
  for (int64_t r = 0; r < m; ++r) std::copy_n(y + r * s.dv, s.dv, x.y + ((blk.b0 + r) * s.heads + h) * s.dv);
}

// K_new / V_new [B, H_kv, S, D] -> Work's [H_kv, B * S, D].
void lay_out_by_token(const PagedShape& s, const Pointers& x, Work& work) {
  if (work.tokens_k.size() == 0) work.allocate_tokens(s);  // S > 1 (see Work)
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t hk = 0; hk < s.kv_heads; ++hk) {
      const int64_t from = (b * s.kv_heads + hk) * s.s, to = hk * s.batch * s.s + b * s.s;
      std::copy_n(x.k_new + from * s.d, s.s * s.d, work.tokens_k.data() + to * s.d);
      std::copy_n(x.v_new + from * s.dv, s.s * s.dv, work.tokens_v.data() + to * s.dv);
    }
}

Status compute(const PagedShape& s, const Params& p, Pointers x, Work& work) {
  bool names_new = false;
  SDX_RETURN_IF_ERROR(
      paged::check_slot_map("sdx.PagedAttention", x.slots, s.batch, s.past, s.slots, s.batch * s.s, &names_new), "");
  work.blocks.clear();
  if (names_new) {
    lay_out_by_token(s, x, work);
    x.k_tokens = work.tokens_k.data();
    x.v_tokens = work.tokens_v.data();
    if (s.s == 1) plan_row_blocks(s, p, x, work.blocks);
  }
  // Tasks: (RowBlock, head) when the rows were blocked, else (batch, head, block of query rows).
  const bool by_rows = !work.blocks.empty();
  const int64_t q_blocks = (s.s + Scratch::bq(s) - 1) / Scratch::bq(s);
  const int64_t tasks = by_rows ? static_cast<int64_t>(work.blocks.size()) * s.heads : s.batch * s.heads * q_blocks;
  const int64_t units = std::min<int64_t>(static_cast<int64_t>(work.threads.size()), tasks);
  const bool split = units > 1 && s.batch * s.heads * (s.past + s.s) * s.d * s.s >= 32 * 1024;
  parallel_for(split ? units : 1, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      Scratch& scratch = *work.threads[static_cast<size_t>(u)];
      const int64_t t0 = tasks * u / (split ? units : 1), t1 = tasks * (u + 1) / (split ? units : 1);
      for (int64_t t = t0; t < t1; ++t) {
        if (by_rows) {
          const RowBlock& blk = work.blocks[static_cast<size_t>(t / s.heads)];
          if (blk.rows > 1) compute_rows(s, p, x, scratch, blk, t % s.heads);
          else compute_block(s, p, x, scratch, blk.b0, t % s.heads, 0);
          continue;
        }
        const int64_t bh = t / q_blocks;
        compute_block(s, p, x, scratch, bh / s.heads, bh % s.heads, (t % q_blocks) * Scratch::bq(s));
      }
    }
  });
  return Status::ok();
}

class PagedAttentionKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    has_scale_ = node.attr("scale") != nullptr;
    params_.scale = node.attr_float("scale", 1.0f);
    const int64_t causal = node.attr_int("causal", 1);
    if (causal != 0 && causal != 1) return invalid_argument("sdx.PagedAttention attribute 'causal' must be 0 or 1");
    params_.causal = causal != 0;
    params_.mask_value = node.attr_float("mask_value", -std::numeric_limits<float>::infinity());
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor* mask = ctx.num_inputs() > 6 && ctx.has_input(6) ? &ctx.input(6) : nullptr;
    SDX_ASSIGN_OR_RETURN(PagedShape s, shape_of(ctx, mask), ctx.where());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kFloat32, Shape{s.batch, s.heads, s.s, s.dv}),
                         "sdx.PagedAttention");
    if (y.numel() == 0) return Status::ok();
    Work work(s);
    return compute(s, params_for(s), pointers(ctx, mask, y.data<float>()), work);
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    for (int i = 0; i < 6; ++i)
      if (i >= ctx.num_inputs() || !ctx.has_input(i)) return no_bound_form();
    const Tensor* mask = ctx.num_inputs() > 6 && ctx.has_input(6) ? &ctx.input(6) : nullptr;
    Result<PagedShape> shape = shape_of(ctx, mask);
    if (!shape.is_ok()) return no_bound_form();
    const PagedShape s = shape.value();
    if (!output_matches(ctx, 0, DType::kFloat32, Shape{s.batch, s.heads, s.s, s.dv})) return no_bound_form();
    if (ctx.output(0).numel() == 0) return backend::bind_call([] { return Status::ok(); });
    const Pointers x = pointers(ctx, mask, ctx.output(0).data<float>());
    return backend::bind_call([s, p = params_for(s), x, work = std::make_shared<Work>(s)] {
      return compute(s, p, x, *work);
    });
  }

 private:
  Params params_for(const PagedShape& s) const {
    Params p = params_;
    if (!has_scale_) p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.d)));
    return p;
  }

  template <typename Ctx>
  static Pointers pointers(const Ctx& ctx, const Tensor* mask, float* y) {
    return Pointers{ctx.input(0).template data<float>(), ctx.input(1).template data<float>(),
                    ctx.input(2).template data<float>(), ctx.input(3).template data<float>(),
                    ctx.input(4).template data<float>(), ctx.input(5).template data<int64_t>(),
                    mask ? mask->raw_data() : nullptr, y};
  }

  template <typename Ctx>
  static Result<PagedShape> shape_of(const Ctx& ctx, const Tensor* mask) {
    const Tensor &q = ctx.input(0), &kn = ctx.input(1), &vn = ctx.input(2), &kc = ctx.input(3), &vc = ctx.input(4),
                 &map = ctx.input(5);
    auto shapes = [&] {
      return "Q" + q.shape().to_string() + " K_new" + kn.shape().to_string() + " V_new" + vn.shape().to_string() +
             " K_cache" + kc.shape().to_string() + " V_cache" + vc.shape().to_string() + " slot_map" +
             map.shape().to_string();
    };
    for (const Tensor* t : {&q, &kn, &vn, &kc, &vc})
      if (t->dtype() != DType::kFloat32) return invalid_argument("sdx.PagedAttention takes float32 Q, K, V and caches");
    if (map.dtype() != DType::kInt64) return invalid_argument("sdx.PagedAttention: slot_map must be int64");
    if (q.rank() != 4 || kn.rank() != 4 || vn.rank() != 4 || kc.rank() != 3 || vc.rank() != 3 || map.rank() != 2)
      return invalid_argument("sdx.PagedAttention needs Q, K_new, V_new [B, H, S, D], caches [H_kv, slots, D] and "
                              "slot_map [B, past]; got " + shapes());
    PagedShape s;
    s.batch = q.shape()[0];
    s.heads = q.shape()[1];
    s.s = q.shape()[2];
    s.d = q.shape()[3];
    s.kv_heads = kn.shape()[1];
    s.dv = vn.shape()[3];
    s.slots = kc.shape()[1];
    s.past = map.shape()[1];
    const bool ok = s.kv_heads > 0 && s.heads % s.kv_heads == 0 && kn.shape()[0] == s.batch && kn.shape()[2] == s.s &&
                    kn.shape()[3] == s.d && vn.shape()[0] == s.batch && vn.shape()[1] == s.kv_heads &&
                    vn.shape()[2] == s.s && kc.shape()[0] == s.kv_heads && kc.shape()[2] == s.d &&
                    vc.shape()[0] == s.kv_heads && vc.shape()[1] == s.slots && vc.shape()[2] == s.dv &&
                    map.shape()[0] == s.batch;
    if (!ok) return invalid_argument("sdx.PagedAttention: shapes do not match: " + shapes());
    if (mask) {
      const int64_t full[4] = {s.batch, s.heads, s.s, s.past + s.s};
      SDX_ASSIGN_OR_RETURN(s.mask, attention::mask_layout(*mask, DType::kFloat32, full, "sdx.PagedAttention"), "");
    }
    return s;
  }

  Params params_;
  bool has_scale_ = false;
};

const backend::KernelRegistrar kPagedAttention({"PagedAttention", "sdx", 1, backend::kAnyOpset,
                                                backend::kernel_factory<PagedAttentionKernel>()});

}  // namespace
}  // namespace sdx::cpu
