// See onednn_matmul.h.
#include "backend/cpu/onednn/onednn_matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/onednn/onednn.h"
#if SDX_WITH_ONEDNN
#include "backend/cpu/onednn/kept_packs.h"
#include "backend/cpu/onednn/onednn_util.h"
#endif
#include "backend/cpu/threading/thread_pool.h"
#include "core/fnv1a.h"

namespace sdx::cpu {

#if SDX_WITH_ONEDNN

namespace {

using dnnl::memory;
constexpr memory::data_type kF32 = memory::data_type::f32;

// A thread's share is cut into pieces of at most this many output elements (but at least
// kMinPieceRows rows), so an epilogue sdx applies itself finds its piece in cache (256 KB of floats).
constexpr int64_t kPieceElements = int64_t{1} << 16;
constexpr int64_t kMinPieceRows = 16;
// At least this many multiply-adds per thread, or the split costs more than it saves (as in cpu::gemm).
constexpr int64_t kMinMacsPerThread = int64_t{1} << 18;

// Rows [m0, m0 + rows) of X and Y: the primitive for that row count and the piece's own memory
// objects (handles set per call) and scratchpad.
struct Piece {
  int64_t m0 = 0, rows = 0;
  size_t prim = 0;  // index into Primitives::prims
  memory src, weights, bias, dst, scratch;
  AlignedBuffer scratch_buf;
};

// What make() derives from (M, K, N, epilogue, bias, threads) alone: the piece geometry and one matmul
// primitive per distinct piece row count, with the packed weight layout they share. Shared by every
// OneDnnMatMul of that key in the process (shared_primitives): a primitive is stateless and may run on
// several threads at once (scratchpads are the pieces' own). Creating a primitive descriptor takes oneDNN
// ~100 us (it tries its implementations in turn; its primitive cache only skips the code generation after
// that), so a BERT-style encoder whose layers repeat four products paid it 16 times on every load; now 4.
struct Primitives {
  int64_t pieces_per_chunk = 1, num_pieces = 0;
  std::vector<dnnl::matmul> prims;
  std::vector<int64_t> prim_rows;
  std::vector<memory::desc> scratchpads;  // parallel to prims
  memory::desc w_packed_md;
};

// What the primitives of one OneDnnMatMul depend on besides M, K, N: the operand types, the epilogue
// oneDNN computes (post-ops, bias) and, for the u8 x s8 form, the source zero point and per-column scales.
}  // namespace

struct OneDnnMatMul::Spec {
  int64_t M = 0, K = 0, N = 0, threads = 1;
  bool u8s8 = false;
  int32_t x_zero_point = 0;
  std::vector<float> scales;  // u8s8: N output scales
  dnnl::post_ops ops;
  bool has_bias = false;
  std::string epilogue_key;  // what of the activation the post-ops hold
};

namespace {

using Spec = OneDnnMatMul::Spec;

std::shared_ptr<const Primitives> build_primitives(const Spec& sp) {
  const int64_t M = sp.M, K = sp.K, N = sp.N;
  const memory::data_type src_t = sp.u8s8 ? memory::data_type::u8 : kF32;
  const memory::data_type wei_t = sp.u8s8 ? memory::data_type::s8 : kF32;
  dnnl::primitive_attr attr;
  attr.set_post_ops(sp.ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (sp.u8s8) {
    attr.set_output_scales(2, sp.scales);
    if (sp.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {sp.x_zero_point});
  }
  auto out = std::make_shared<Primitives>();
  Primitives& c = *out;
  // Pieces: `threads` chunks of equal row counts (within one), each cut into pieces_per_chunk pieces,
  // so parallel_for hands every thread the same number of pieces.
  const int64_t chunk_rows = (M + sp.threads - 1) / sp.threads;
  const int64_t piece_rows = std::min(chunk_rows, std::max(kMinPieceRows, kPieceElements / N));
  c.pieces_per_chunk = (chunk_rows + piece_rows - 1) / piece_rows;
  c.num_pieces = std::min(M, sp.threads * c.pieces_per_chunk);
  const memory::desc w_any({K, N}, wei_t, memory::format_tag::any);
  const memory::desc b_md = sp.has_bias ? memory::desc({1, N}, kF32, memory::format_tag::ab) : memory::desc();
  for (int64_t j = 0; j < c.num_pieces; ++j) {
    const int64_t rows = M * (j + 1) / c.num_pieces - M * j / c.num_pieces;
    if (std::find(c.prim_rows.begin(), c.prim_rows.end(), rows) != c.prim_rows.end()) continue;
    const memory::desc src_md({rows, K}, src_t, memory::format_tag::ab);
    const memory::desc dst_md({rows, N}, kF32, memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_any, b_md, dst_md), attr, onednn_engine());
    // Only oneDNN's brgemm kernel reads prepacked weights; its gemm-based and reference kernels
    // would be no faster than OpenBLAS. u8 x s8 only on VNNI or AMX: before VNNI, oneDNN's int8 kernels
    // add pairs of products in 16 bits with saturation, which breaks the exact sums.
    const std::string impl = pd.impl_info_str();
    if (impl.rfind("brg", 0) != 0) return nullptr;
    if (sp.u8s8 && impl.find("vnni") == std::string::npos && impl.find("amx") == std::string::npos) return nullptr;
    // One packed W serves every piece: their primitives must agree on its layout.
    if (c.prims.empty()) c.w_packed_md = pd.weights_desc();
    if (!(pd.weights_desc() == c.w_packed_md)) return nullptr;
    c.prims.emplace_back(pd);
    c.prim_rows.push_back(rows);
    c.scratchpads.push_back(pd.scratchpad_desc());
  }
  return out;
}

// The process's primitive sets by key (null: oneDNN has no usable kernel for the key). The mutex
// publishes an entry to the threads that find it. Bounded: past kMaxEntries the oldest key is dropped
// (OneDnnMatMuls built from it keep their shared_ptr). Never destroyed: at exit oneDNN's own statics may
// be gone before these would be.
std::shared_ptr<const Primitives> shared_primitives(const Spec& sp) {
  constexpr size_t kMaxEntries = 256;
  static std::mutex& mu = *new std::mutex;
  static auto& entries = *new std::map<std::string, std::shared_ptr<const Primitives>>;
  static auto& order = *new std::deque<std::string>;
  std::string key = std::to_string(sp.M) + "," + std::to_string(sp.K) + "," + std::to_string(sp.N) + "," +
                    std::to_string(sp.has_bias) + "," + std::to_string(sp.threads) + "," + sp.epilogue_key;
  if (sp.u8s8)
    key += ",u8s8," + std::to_string(sp.x_zero_point) + "," +
           hex64(fnv1a64(std::string_view(reinterpret_cast<const char*>(sp.scales.data()), sp.scales.size() * sizeof(float))));
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = entries.find(key); it != entries.end()) return it->second;
  }
  std::shared_ptr<const Primitives> built = build_primitives(sp);
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = entries.emplace(key, built);
  if (inserted) {
    order.push_back(key);
    if (order.size() > kMaxEntries) {
      entries.erase(order.front());
      order.pop_front();
    }
  }
  return it->second;
}

}  // namespace

struct OneDnnMatMul::Impl {
  int64_t M = 0, K = 0, N = 0;
  bool act_in_dnnl = true;
  FusedActivation act;
  std::shared_ptr<const Primitives> p;
  std::vector<Piece> pieces;
  // W as the caller stores it, its packed copy (one for every piece) and the reorder between them
  // (created when W is packed here, not when a bundle's packed bytes are adopted).
  AlignedBuffer w_buf;
  std::shared_ptr<const AlignedBuffer> w_shared;  // the packed W when shared (pack_kept_weights)
  memory w_user, w_packed;
  std::optional<dnnl::reorder> pack;
  // w_user reordered into w_packed (the reorder made on first use); false when oneDNN fails.
  bool reorder_weights() {
    try {
      if (!pack) pack.emplace(w_user, w_packed);
    } catch (const dnnl::error&) {
      return false;
    }
    return execute(*pack, {{DNNL_ARG_FROM, w_user.get()}, {DNNL_ARG_TO, w_packed.get()}});
  }
};

OneDnnMatMul::OneDnnMatMul(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnMatMul::~OneDnnMatMul() = default;

int OneDnnMatMul::num_pieces() const { return static_cast<int>(impl_->pieces.size()); }
const void* OneDnnMatMul::packed_weights_data() const { return impl_->w_packed.get_data_handle(); }

std::unique_ptr<OneDnnMatMul> OneDnnMatMul::make(int64_t M, int64_t K, int64_t N, const FusedActivation& act,
                                                 bool has_bias) {
  Spec sp;
  sp.M = M;
  sp.K = K;
  sp.N = N;
  sp.has_bias = has_bias;
  bool act_in_dnnl = false;
  try {
    act_in_dnnl = append_exact_post_op(act, sp.ops);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  // The post-ops are the activation's only part in the primitive; LeakyRelu's alpha is its one parameter.
  float alpha = 0;
  if (act_in_dnnl && act.kind() == FusedActivation::Kind::kLeakyRelu)
    act.visit([&](auto f) {
      if constexpr (std::is_same_v<decltype(f), LeakyReluOp>) alpha = f.alpha;
    });
  sp.epilogue_key = std::to_string(act_in_dnnl ? static_cast<int>(act.kind()) : -1) + "," + std::to_string(alpha);
  std::unique_ptr<OneDnnMatMul> mm = make_from(std::move(sp));
  if (mm) {
    mm->impl_->act = act;
    mm->impl_->act_in_dnnl = act_in_dnnl;
  }
  return mm;
}

std::unique_ptr<OneDnnMatMul> OneDnnMatMul::make_u8s8(int64_t M, int64_t K, int64_t N, int32_t x_zero_point,
                                                      const float* scales) {
  Spec sp;
  sp.M = M;
  sp.K = K;
  sp.N = N;
  sp.u8s8 = true;
  sp.x_zero_point = x_zero_point;
  if (N > 0) sp.scales.assign(scales, scales + N);
  return make_from(std::move(sp));
}

std::unique_ptr<OneDnnMatMul> OneDnnMatMul::make_from(Spec sp) {
  if (!onednn_enabled() || sp.M <= 0 || sp.K <= 0 || sp.N <= 0 || sp.M * sp.K * sp.N < kMinMacs) return nullptr;
  OneDnnSingleThread one;
  try {
    return make_checked(std::move(sp));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::unique_ptr<OneDnnMatMul> OneDnnMatMul::make_checked(Spec sp) {
  const int64_t M = sp.M, K = sp.K, N = sp.N;
  sp.threads = std::clamp<int64_t>(M * K * N / kMinMacsPerThread, 1, current_num_threads());
  auto impl = std::make_unique<Impl>();
  Impl& c = *impl;
  c.M = M;
  c.K = K;
  c.N = N;
  c.p = shared_primitives(sp);
  if (!c.p) return nullptr;
  const memory::data_type src_t = sp.u8s8 ? memory::data_type::u8 : kF32;
  const memory::desc b_md = sp.has_bias ? memory::desc({1, N}, kF32, memory::format_tag::ab) : memory::desc();
  for (int64_t j = 0; j < c.p->num_pieces; ++j) {
    Piece p;
    p.m0 = M * j / c.p->num_pieces;
    p.rows = M * (j + 1) / c.p->num_pieces - p.m0;
    p.prim = static_cast<size_t>(std::find(c.p->prim_rows.begin(), c.p->prim_rows.end(), p.rows) -
                                 c.p->prim_rows.begin());
    const memory::desc& scratchpad = c.p->scratchpads[p.prim];
    p.scratch_buf = AlignedBuffer(scratchpad.get_size());
    if (!p.scratch_buf.ok_for(scratchpad.get_size())) return nullptr;
    p.src = memory(memory::desc({p.rows, K}, src_t, memory::format_tag::ab), onednn_engine(), DNNL_MEMORY_NONE);
    p.dst = memory(memory::desc({p.rows, N}, kF32, memory::format_tag::ab), onednn_engine(), DNNL_MEMORY_NONE);
    if (sp.has_bias) p.bias = memory(b_md, onednn_engine(), DNNL_MEMORY_NONE);
    p.scratch = memory(scratchpad, onednn_engine(), p.scratch_buf.data());
    c.pieces.push_back(std::move(p));
  }
  // The packed W's memory is set by pack_weights (a buffer of its own, or bytes a bundle holds).
  c.w_packed = memory(c.p->w_packed_md, onednn_engine(), DNNL_MEMORY_NONE);
  for (Piece& p : c.pieces) p.weights = memory(c.p->w_packed_md, onednn_engine(), DNNL_MEMORY_NONE);
  c.w_user = memory(memory::desc({K, N}, sp.u8s8 ? memory::data_type::s8 : kF32, memory::format_tag::ab),
                    onednn_engine(), DNNL_MEMORY_NONE);
  return std::unique_ptr<OneDnnMatMul>(new OneDnnMatMul(std::move(impl)));
}

Status OneDnnMatMul::pack_weights(const float* w, const backend::PackedWeightsRef& packed) const {
  return pack(w, packed);
}
Status OneDnnMatMul::pack_weights(const int8_t* w, const backend::PackedWeightsRef& packed) const {
  return pack(w, packed);
}

Status OneDnnMatMul::pack(const void* w, const backend::PackedWeightsRef& packed) const {
  Impl& c = *impl_;
  OneDnnSingleThread one;
  c.w_user.set_data_handle(const_cast<void*>(w));
  const std::string key = packed.store ? packed_weights_key(packed.prefix, "matmul", 0, c.w_packed.get_desc()) : "";
  if (!pack_or_adopt(packed.store, key, c.w_packed, c.w_buf, [&] { return c.reorder_weights(); }))
    return internal_error("oneDNN weight reorder failed");
  // Every piece reads the one packed W, wherever it now lives.
  for (Piece& p : c.pieces) p.weights.set_data_handle(c.w_packed.get_data_handle());
  return Status::ok();
}

Status OneDnnMatMul::pack_kept_weights(const float* w, const backend::PackedWeightsRef& packed) const {
  return pack_kept_weights(w, 0, [w] { return w; }, packed);
}

Status OneDnnMatMul::pack_kept_weights(const void* kept_as, int64_t variant, const std::function<const float*()>& w,
                                       const backend::PackedWeightsRef& packed) const {
  Impl& c = *impl_;
  const std::string key = packed.store ? packed_weights_key(packed.prefix, "matmul", 0, c.w_packed.get_desc()) : "";
  if (!adopt_or_kept_pack(packed.store, key, kept_as, variant, c.w_packed, c.w_shared, [&] {
        OneDnnSingleThread one;
        c.w_user.set_data_handle(const_cast<float*>(w()));
        return c.reorder_weights();
      }))
    return internal_error("oneDNN weight reorder failed");
  for (Piece& p : c.pieces) p.weights.set_data_handle(c.w_packed.get_data_handle());
  return Status::ok();
}

Status OneDnnMatMul::run(const float* x, const float* bias, float* y) const { return run_on(x, bias, y); }
Status OneDnnMatMul::run(const uint8_t* x, float* y) const { return run_on(x, nullptr, y); }

Status OneDnnMatMul::run_on(const void* x, const float* bias, float* y) const {
  Impl& c = *impl_;
  const size_t x_bytes = c.w_user.get_desc().data_type() == memory::data_type::s8 ? 1 : sizeof(float);
  // Handles are set here, on the calling thread, before the chunks that read them start
  // (parallel_for publishes everything written before it to the workers).
  for (Piece& p : c.pieces) {
    p.src.set_data_handle(static_cast<char*>(const_cast<void*>(x)) + p.m0 * c.K * x_bytes);
    p.dst.set_data_handle(y + p.m0 * c.N);
    if (bias) p.bias.set_data_handle(const_cast<float*>(bias));
  }
  // Set by any failing chunk; read after parallel_for returns, which makes the chunks' writes visible.
  std::atomic<bool> ok{true};
  parallel_for(static_cast<int64_t>(c.pieces.size()), c.p->pieces_per_chunk, [&](int64_t b, int64_t e) {
    OneDnnSingleThread one;
    for (int64_t j = b; j < e; ++j) {
      Piece& p = c.pieces[static_cast<size_t>(j)];
      const dnnl::matmul& prim = c.p->prims[p.prim];
      const bool done = bias ? execute(prim, {{DNNL_ARG_SRC, p.src.get()},
                                              {DNNL_ARG_WEIGHTS, p.weights.get()},
                                              {DNNL_ARG_BIAS, p.bias.get()},
                                              {DNNL_ARG_DST, p.dst.get()},
                                              {DNNL_ARG_SCRATCHPAD, p.scratch.get()}})
                             : execute(prim, {{DNNL_ARG_SRC, p.src.get()},
                                              {DNNL_ARG_WEIGHTS, p.weights.get()},
                                              {DNNL_ARG_DST, p.dst.get()},
                                              {DNNL_ARG_SCRATCHPAD, p.scratch.get()}});
      if (!done) ok.store(false, std::memory_order_relaxed);
      if (!c.act_in_dnnl) {
        float* yp = y + p.m0 * c.N;
        c.act.visit([&](auto f) { epilogue_row(f, yp, static_cast<const float*>(nullptr), p.rows * c.N); });
      }
    }
  });
  return ok.load(std::memory_order_relaxed) ? Status::ok() : internal_error("oneDNN matmul failed");
}

#else  // !SDX_WITH_ONEDNN

struct OneDnnMatMul::Impl {};
OneDnnMatMul::OneDnnMatMul(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnMatMul::~OneDnnMatMul() = default;
std::unique_ptr<OneDnnMatMul> OneDnnMatMul::make(int64_t, int64_t, int64_t, const FusedActivation&, bool) {
  return nullptr;
}
Status OneDnnMatMul::pack_weights(const float*, const backend::PackedWeightsRef&) const {
  return unimplemented("built without oneDNN");
}
Status OneDnnMatMul::pack_kept_weights(const float*, const backend::PackedWeightsRef&) const {
  return unimplemented("built without oneDNN");
}
Status OneDnnMatMul::pack_kept_weights(const void*, int64_t, const std::function<const float*()>&,
                                       const backend::PackedWeightsRef&) const {
  return unimplemented("built without oneDNN");
}
Status OneDnnMatMul::run(const float*, const float*, float*) const { return unimplemented("built without oneDNN"); }
std::unique_ptr<OneDnnMatMul> OneDnnMatMul::make_u8s8(int64_t, int64_t, int64_t, int32_t, const float*) { return nullptr; }
Status OneDnnMatMul::pack_weights(const int8_t*, const backend::PackedWeightsRef&) const {
  return unimplemented("built without oneDNN");
}
Status OneDnnMatMul::run(const uint8_t*, float*) const { return unimplemented("built without oneDNN"); }
int OneDnnMatMul::num_pieces() const { return 0; }
const void* OneDnnMatMul::packed_weights_data() const { return nullptr; }

#endif

bool onednn_matmul_weight(const ir::Node& node, int i) {
  const ir::Value* v = node.input(i);
  return v && v->is_initializer() && !v->is_graph_input();
}

std::optional<Status> run_onednn_matmul(int64_t M, int64_t K, int64_t N, const FusedActivation& act, const float* x,
                                        const float* w, bool w_kept, const float* bias, float* y) {
  std::unique_ptr<OneDnnMatMul> mm = OneDnnMatMul::make(M, K, N, act, bias != nullptr);
  if (!mm) return std::nullopt;
  SDX_RETURN_IF_ERROR(w_kept ? mm->pack_kept_weights(w) : mm->pack_weights(w), "");
  return mm->run(x, bias, y);
}

std::optional<std::unique_ptr<backend::BoundKernel>> bind_onednn_matmul(int64_t M, int64_t K, int64_t N,
                                                                        const FusedActivation& act, const float* x,
                                                                        const float* w, bool w_constant, bool w_kept,
                                                                        const float* bias, float* y,
                                                                        const backend::PackedWeightsRef& packed) {
  std::unique_ptr<OneDnnMatMul> mm = OneDnnMatMul::make(M, K, N, act, bias != nullptr);
  if (!mm) return std::nullopt;
  // A failed reorder: no bound form, so replay goes through run(), which takes the same path.
  if (w_constant &&
      !(w_kept ? mm->pack_kept_weights(w, packed) : mm->pack_weights(w, packed)).is_ok())
    return std::unique_ptr<backend::BoundKernel>();
  return backend::bind_call([mm = std::move(mm), w_constant, x, w, bias, y] {
    if (!w_constant) SDX_RETURN_IF_ERROR(mm->pack_weights(w), "");
    return mm->run(x, bias, y);
  });
}

}  // namespace sdx::cpu
