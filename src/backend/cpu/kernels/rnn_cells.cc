// RNN, GRU and LSTM (ONNX opsets 7..22): one recurrent engine with a per-op cell.
//
// Shared layout (layout=0; layout=1 swaps the sequence and batch axes of X, Y, Y_h, Y_c):
//   X [seq, batch, input], W [dirs, G*H, input], R [dirs, G*H, H], B [dirs, 2*G*H],
//   sequence_lens [batch], initial_h / initial_c [dirs, batch, H], P [dirs, 3*H] (LSTM)
//   Y [seq, dirs, batch, H], Y_h / Y_c [dirs, batch, H].
// Gates are ordered i,o,f,c (LSTM), z,r,h (GRU), single (RNN). Steps past a batch
// entry's sequence length leave its state unchanged and write zeros to Y.
//
// com.microsoft.DynamicQuantizeLSTM (onnxruntime's quantize_dynamic of an LSTM) is the LSTM with
// W [dirs, input, 4*H] and R [dirs, H, 4*H] int8/uint8 (inputs 8..11: their scales and zero points, per
// direction or per gate column), whose two products quantize their left operand on every call as
// onnxruntime does (uint8_dynamic_product.h): X once over the rows of the steps that run, h at every
// step over the whole batch. Like onnxruntime, which quantizes the previous step's rows of Y, an entry
// finished before the previous step counts as 0 when Y is an output, and as its last h when it is not.
// It has no layout attribute (layout 0).
#include <algorithm>
#include <cmath>
#include <array>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/small_m_gemm.h"
#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/onednn/onednn_matmul.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "backend/cpu/quant/uint8_dynamic_product.h"
#include "backend/cpu/tensor/permute.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/cpu/simd/vector_ops.h"
#include "core/tensor_values.h"
#include "backend/frozen_step_context.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// y[j] = a[j] op b[j] (vv) or a op b[j] (sv) for j < n: float on the vector kernels (exact IEEE
// operations, so the bits of a plain loop; the project's -O2 leaves these loops scalar), double per
// element. y may be a or b.
template <typename C>
void vv(simd::BinaryOp op, const C* a, const C* b, C* y, int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    simd::binary_vv(op, a, b, y, n);
  } else {
    for (int64_t j = 0; j < n; ++j)
      y[j] = op == simd::BinaryOp::kAdd ? a[j] + b[j] : op == simd::BinaryOp::kSub ? a[j] - b[j]
           : op == simd::BinaryOp::kMul ? a[j] * b[j] : a[j] / b[j];
  }
}

template <typename C>
void sv(simd::BinaryOp op, C a, const C* b, C* y, int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    simd::binary_sv(op, a, b, y, n);
  } else {
    for (int64_t j = 0; j < n; ++j)
      y[j] = op == simd::BinaryOp::kAdd ? a + b[j] : op == simd::BinaryOp::kSub ? a - b[j]
           : op == simd::BinaryOp::kMul ? a * b[j] : a / b[j];
  }
}

constexpr simd::BinaryOp kAdd = simd::BinaryOp::kAdd, kSub = simd::BinaryOp::kSub, kMul = simd::BinaryOp::kMul;


// An activation from the RNN activations list, with its alpha/beta.
struct Activation {
  enum Kind { kSigmoid, kTanh, kRelu, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus, kAffine };
  Kind kind = kTanh;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case kSigmoid: return 1.0 / (1.0 + std::exp(-x));
      case kTanh: return std::tanh(x);
      case kRelu: return std::max(x, 0.0);
      case kLeakyRelu: return x >= 0 ? x : alpha * x;
      case kThresholdedRelu: return x > alpha ? x : 0.0;
      case kScaledTanh: return alpha * std::tanh(beta * x);
      case kHardSigmoid: return std::clamp(alpha * x + beta, 0.0, 1.0);
      case kElu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
      case kSoftsign: return x / (1.0 + std::fabs(x));
      case kSoftplus: return std::log1p(std::exp(x));
      case kAffine: return alpha * x + beta;
    }
    return x;
  }
};

Status parse_activations(const ir::Node& node, const std::vector<std::string>& defaults, int dirs, std::vector<Activation>* out) {
  std::vector<std::string> names;
  if (const ir::Attribute* a = node.attr("activations")) names = a->strings;
  if (names.empty()) names = defaults;
  const size_t per_dir = defaults.size();
  if (names.size() == per_dir && dirs == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    return invalid_argument("activations needs " + std::to_string(per_dir * static_cast<size_t>(dirs)) + " names, got " +
                            std::to_string(names.size()));
  const std::vector<float> alphas = node.attr_floats("activation_alpha");
  const std::vector<float> betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& raw : names) {
    std::string n = raw;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    Activation act;
    bool uses_alpha = false, uses_beta = false;
    double da = 0, db = 0;
    if (n == "sigmoid") act.kind = Activation::kSigmoid;
    else if (n == "tanh") act.kind = Activation::kTanh;
    else if (n == "relu") act.kind = Activation::kRelu;
    else if (n == "leakyrelu") act.kind = Activation::kLeakyRelu, uses_alpha = true, da = 0.01;
    else if (n == "thresholdedrelu") act.kind = Activation::kThresholdedRelu, uses_alpha = true, da = 1.0;
    else if (n == "scaledtanh") act.kind = Activation::kScaledTanh, uses_alpha = uses_beta = true, da = 1.0, db = 1.0;
    else if (n == "hardsigmoid") act.kind = Activation::kHardSigmoid, uses_alpha = uses_beta = true, da = 0.2, db = 0.5;
    else if (n == "elu") act.kind = Activation::kElu, uses_alpha = true, da = 1.0;
    else if (n == "softsign") act.kind = Activation::kSoftsign;
    else if (n == "softplus") act.kind = Activation::kSoftplus;
    else if (n == "affine") act.kind = Activation::kAffine, uses_alpha = uses_beta = true, da = 1.0, db = 0.0;
    else return invalid_argument("unknown activation '" + raw + "'");
    act.alpha = uses_alpha && ai < alphas.size() ? alphas[ai++] : da;
    act.beta = uses_beta && bi < betas.size() ? betas[bi++] : db;
    out->push_back(act);
  }
  return Status::ok();
}

enum class Cell { kRnn, kGru, kLstm };

// One direction's buffers (the two directions of a bidirectional layer run at once, on two threads).
template <typename C>
struct DirectionScratch {
  std::vector<C> xw, hr, gated, gated_r, tmp, rt;  // rt: run()'s R^T of the direction
  // DynamicQuantizeLSTM: the products' scratch, and h with finished entries' rows zeroed.
  std::vector<char> qscratch;
  std::vector<C> h_active;
};

// Buffers of one compute() call, sized on first use: a bound call keeps its own, sized by prepare(), and
// so allocates nothing.
template <typename C>
struct RnnScratch {
  std::vector<C> x_copy, w_copy, r_copy, b_copy, p_copy, state_copy;
  std::vector<C> hs, cs, ys;
  std::vector<C> rt;  // prepare()'s R^T of every direction
  // prepare()'s R^T per direction packed for the small-M kernel (float32, batch <= kSmallMMaxRows, and
  // not a GRU that multiplies r * h by R_h^T, which reads rt): then rt stays empty.
  std::vector<SmallMPackedWeights> rt_packed;
  std::array<DirectionScratch<C>, 2> dir;
  std::vector<int64_t> lens;
  Shape y_shape, state_shape;  // of the outputs (kept: building a Shape allocates)
  // float32: each direction's input projection X W^T on oneDNN with W^T packed once (null where the
  // product is too small for it); made by prepare() for the bound call, per call by run().
  std::vector<std::unique_ptr<OneDnnMatMul>> proj;
};

// Direction d's W [G*H, I] as W^T [I, G*H] packed by oneDNN for `rows` rows of X, or null (a product below
// OneDnnMatMul::kMinMacs, or no oneDNN): then the blocked gemm, which packed W^T on every call (a third of
// romanizer_gru_encoder's time). kept: W is an initializer, its packing shared with the other plans'
// (OneDnnMatMul::pack_kept_weights, variant 1: transposed; W^T is made only when nothing packed it yet).
std::unique_ptr<OneDnnMatMul> input_projection(const float* w, int64_t rows, int64_t I, int64_t GH, bool kept,
                                               const backend::PackedWeightsRef& packed) {
  std::unique_ptr<OneDnnMatMul> mm = OneDnnMatMul::make(rows, I, GH, FusedActivation(), /*has_bias=*/false);
  if (!mm) return nullptr;
  std::vector<float> wt;
  auto transposed = [&] {
    wt.resize(static_cast<size_t>(I * GH));
    permute(PermutePlan::make({I, GH}, {1, I}), w, wt.data());
    return static_cast<const float*>(wt.data());
  };
  const Status st = kept ? mm->pack_kept_weights(w, /*variant=*/1, transposed, packed)
                         : mm->pack_weights(transposed(), packed);
  return st.is_ok() ? std::move(mm) : nullptr;
}

// s has exactly these dims (no Shape built, so no allocation).
bool has_dims(const Shape& s, std::span<const int64_t> dims) {
  if (s.rank() != static_cast<int>(dims.size())) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (s[static_cast<int>(i)] != dims[i]) return false;
  return true;
}

// `kept` holding these dims, rebuilt only when it does not.
const Shape& kept_shape(Shape& kept, std::span<const int64_t> dims) {
  if (!has_dims(kept, dims)) kept = Shape(std::vector<int64_t>(dims.begin(), dims.end()));
  return kept;
}

template <size_t K>
using Dims = std::array<int64_t, K>;

// DynamicQuantizeLSTM's products per direction: X W (w[d]) and h R (r[d]).
struct QuantizedWeights {
  std::vector<Uint8DynamicProduct> w, r;
};

// The weights of DynamicQuantizeLSTM (inputs 1, 2 and 8..11) for D directions of G*H gate columns, checked.
// Ctx: a KernelContext or a PrepareContext.
template <typename Ctx>
Result<QuantizedWeights> quantized_weights(const Ctx& ctx, int64_t D, int64_t GH, int64_t I, int64_t H) {
  QuantizedWeights q;
  auto one = [&](int wi, int si, int64_t K, const char* name, std::vector<Uint8DynamicProduct>& out) -> Status {
    const Tensor& w = ctx.input(wi);
    if (w.dtype() != DType::kInt8 && w.dtype() != DType::kUint8)
      return invalid_argument(std::string(name) + " must be int8 or uint8, got " + dtype_name(w.dtype()));
    if (!has_dims(w.shape(), Dims<3>{D, K, GH}))
      return invalid_argument(std::string(name) + " must be " + Shape{D, K, GH}.to_string() + ", got " + w.shape().to_string());
    if (!ctx.has_input(si) || !ctx.has_input(si + 1))
      return invalid_argument(std::string(name) + " needs its scale and zero point (inputs " + std::to_string(si) + ", " +
                              std::to_string(si + 1) + ")");
    const Tensor& scale = ctx.input(si);
    const Tensor& zero = ctx.input(si + 1);
    const bool per_column = scale.rank() == 2;
    if (scale.dtype() != DType::kFloat32 || !(has_dims(scale.shape(), Dims<1>{D}) || has_dims(scale.shape(), Dims<2>{D, GH})))
      return invalid_argument(std::string(name) + "'s scale must be float32 " + Shape{D}.to_string() + " or " +
                              Shape{D, GH}.to_string() + ", got " + scale.shape().to_string());
    if (zero.dtype() != w.dtype() || zero.shape() != scale.shape())
      return invalid_argument(std::string(name) + "'s zero point must be " + dtype_name(w.dtype()) + " of its scale's shape " +
                              scale.shape().to_string() + ", got " + dtype_name(zero.dtype()) + " " + zero.shape().to_string());
    std::vector<float> sc(static_cast<size_t>(GH));
    std::vector<uint8_t> zp(static_cast<size_t>(GH));
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t c = 0; c < GH; ++c) {
        const int64_t i = per_column ? d * GH + c : d;
        sc[static_cast<size_t>(c)] = scale.data<float>()[i];
        zp[static_cast<size_t>(c)] = static_cast<const uint8_t*>(zero.raw_data())[i];
      }
      out.push_back(Uint8DynamicProduct::make(w.dtype(), static_cast<const uint8_t*>(w.raw_data()) + d * K * GH, K, GH,
                                              sc.data(), zp.data()));
    }
    return Status::ok();
  };
  SDX_RETURN_IF_ERROR(one(1, 8, I, "W", q.w), "");
  SDX_RETURN_IF_ERROR(one(2, 10, H, "R", q.r), "");
  return q;
}

class RecurrentKernel final : public backend::Kernel {
 public:
  // quantized: com.microsoft.DynamicQuantizeLSTM (cell kLstm).
  RecurrentKernel(Cell cell, bool quantized) : cell_(cell), quantized_(quantized) {}

  Status init(const ir::Node& node) override {
    gates_ = cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 3 : 4;
    const std::string dir = node.attr_string("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
      return invalid_argument("direction must be forward, reverse or bidirectional; got '" + dir + "'");
    dirs_ = dir == "bidirectional" ? 2 : 1;
    reverse_ = dir == "reverse";
    hidden_ = node.attr_int("hidden_size", 0);
    layout_ = node.attr_int("layout", 0);
    if (layout_ != 0 && layout_ != 1) return invalid_argument("layout must be 0 or 1");
    clip_ = node.attr_float("clip", 0.0f);
    if (node.attr("clip") && clip_ <= 0) return invalid_argument("clip must be positive");
    linear_before_reset_ = node.attr_int("linear_before_reset", 0) != 0;
    input_forget_ = node.attr_int("input_forget", 0) != 0;
    const std::vector<std::string> defaults = cell_ == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
                                              : cell_ == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                    : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    return parse_activations(node, defaults, dirs_, &acts_);
  }

  Status run(backend::KernelContext& ctx) const override {
    return dispatch<SDX_FLOAT_TYPES>(ctx.input(0).dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      if (quantized_ && !std::is_same_v<T, float>)
        return invalid_argument(std::string("DynamicQuantizeLSTM takes float32 X, got ") + dtype_name(ctx.input(0).dtype()));
      RnnScratch<C> scratch;
      return compute<T, C>(ctx, scratch, nullptr, nullptr, nullptr);
    }, ctx.node().op_type());
  }

  // float32 with constant W and R: R^T made once here, buffers sized once; the call then runs compute() on
  // the frozen buffers with the same arithmetic as run() (bitwise its results). sequence_lens, when given,
  // is read on every call.
  Result<std::unique_ptr<backend::BoundKernel>> prepare(const backend::PrepareContext& p) const override {
    using Declined = std::unique_ptr<backend::BoundKernel>;
    if (!p.has_input(0) || !p.has_input(1) || !p.has_input(2)) return Declined();
    if (!p.input_is_constant(1) || !p.input_is_constant(2)) return Declined();
    if (quantized_)
      for (int i = 8; i < 12; ++i)
        if (!p.has_input(i) || !p.input_is_constant(i)) return Declined();
    const Tensor& x = p.input(0);
    const Tensor& r = p.input(2);
    if (x.dtype() != DType::kFloat32 || x.rank() != 3 || r.rank() != 3) return Declined();
    if (!quantized_ && r.dtype() != DType::kFloat32) return Declined();
    const int64_t S = layout_ ? x.shape()[1] : x.shape()[0], N = layout_ ? x.shape()[0] : x.shape()[1];
    const int64_t H = r.shape()[quantized_ ? 1 : 2], G = gates_, D = dirs_;
    if (!quantized_ && r.shape() != Shape{D, G * H, H}) return Declined();  // run() names what is wrong
    // The frozen outputs must be what run() makes.
    const Shape y_shape = layout_ ? Shape{N, S, D, H} : Shape{S, D, N, H}, state = layout_ ? Shape{N, D, H} : Shape{D, N, H};
    for (int i = 0; i < p.num_outputs(); ++i) {
      if (!p.wants_output(i)) continue;
      if (i > (cell_ == Cell::kLstm ? 2 : 1)) return Declined();
      if (p.output(i).dtype() != DType::kFloat32 || p.output(i).shape() != (i == 0 ? y_shape : state)) return Declined();
    }
    struct Bound {
      backend::FrozenStepContext ctx;
      RnnScratch<float> scratch;
      QuantizedWeights quantized;
      explicit Bound(const backend::PrepareContext& p) : ctx(p) {}
    };
    auto b = std::make_shared<Bound>(p);
    const int64_t I = x.shape()[2];
    if (quantized_) {
      Result<QuantizedWeights> q = quantized_weights(p, D, G * H, I, H);
      if (!q.is_ok()) return Declined();  // run() names what is wrong
      b->quantized = std::move(q).value();
      size_scratch(b->scratch, S, N, H, p.has_input(3));
      for (DirectionScratch<float>& ds : b->scratch.dir) ds.qscratch.resize(quantized_scratch_bytes(b->quantized, S, N));
      b->scratch.y_shape = y_shape;
      b->scratch.state_shape = state;
      return backend::bind_call(
          [this, b] { return compute<float, float>(b->ctx, b->scratch, nullptr, &b->ctx, &b->quantized); });
    }
    b->scratch.rt.resize(static_cast<size_t>(D * G * H * H));
    const PermutePlan transpose_r = PermutePlan::make({H, G * H}, {1, H});
    for (int64_t d = 0; d < D; ++d)
      permute(transpose_r, r.data<float>() + d * G * H * H, b->scratch.rt.data() + d * G * H * H);
    if (packs_recurrence(N, H)) {
      for (int64_t d = 0; d < D; ++d)
        b->scratch.rt_packed.emplace_back(
            SmallMWeights{WeightType::kFloat32, b->scratch.rt.data() + d * G * H * H, G * H, nullptr}, H, G * H);
      b->scratch.rt = {};
    }
    size_scratch(b->scratch, S, N, H, p.has_input(3));
    const Tensor& w = p.input(1);
    if (w.dtype() != DType::kFloat32 || w.shape() != Shape{D, G * H, I}) return Declined();  // run() names what is wrong
    const ir::Value* wv = p.node().input(1);
    const bool w_kept = wv && wv->is_initializer() && !wv->is_graph_input();
    for (int64_t d = 0; d < D; ++d)
      b->scratch.proj.push_back(input_projection(w.data<float>() + d * G * H * I, S * N, I, G * H, w_kept,
                                                 {p.packed_weights(), p.packed_key_prefix() + "/direction" + std::to_string(d)}));
    b->scratch.y_shape = y_shape;
    b->scratch.state_shape = state;
    return backend::bind_call(
        [this, b] { return compute<float, float>(b->ctx, b->scratch, b->scratch.rt.data(), &b->ctx, nullptr); });
  }

 private:
  // Whether the bound call packs R^T for the small-M kernel: the step products h R^T take it (what
  // cpu::gemm gives them, so the bits are run()'s), and no GRU reset product reads R^T unpacked.
  bool packs_recurrence(int64_t N, int64_t H) const {
    return small_m_gemm_applies(N, gates_ * H, H) && !(cell_ == Cell::kGru && !linear_before_reset_);
  }

  // Every buffer compute() sizes, at its size for these dimensions (a bound call's first run then
  // allocates nothing either).
  template <typename C>
  void size_scratch(RnnScratch<C>& s, int64_t S, int64_t N, int64_t H, bool has_b) const {
    const int64_t G = gates_, D = dirs_;
    s.lens.reserve(static_cast<size_t>(N));
    if (!has_b) s.b_copy.reserve(static_cast<size_t>(D * 2 * G * H));
    s.hs.reserve(static_cast<size_t>(D * N * H));
    if (cell_ == Cell::kLstm) s.cs.reserve(static_cast<size_t>(D * N * H));
    s.ys.reserve(static_cast<size_t>(S * D * N * H));
    for (int64_t d = 0; d < D; ++d) {
      DirectionScratch<C>& ds = s.dir[static_cast<size_t>(d)];
      ds.xw.reserve(static_cast<size_t>(S * N * G * H));
      ds.hr.reserve(static_cast<size_t>(N * G * H));
      if (cell_ == Cell::kGru) {
        ds.gated.reserve(static_cast<size_t>(N * H));
        ds.gated_r.reserve(static_cast<size_t>(N * H));
      }
      ds.tmp.reserve(static_cast<size_t>((G + 1) * H));
      if (quantized_) ds.h_active.reserve(static_cast<size_t>(N * H));
    }
  }

  // Scratch bytes of DynamicQuantizeLSTM's products for S steps of N entries.
  static size_t quantized_scratch_bytes(const QuantizedWeights& q, int64_t S, int64_t N) {
    size_t bytes = 0;
    for (const Uint8DynamicProduct& p : q.w) bytes = std::max(bytes, p.scratch_bytes(S * N));
    for (const Uint8DynamicProduct& p : q.r) bytes = std::max(bytes, p.scratch_bytes(N));
    return bytes;
  }

  // rt_all: R^T per direction ([D][H, G*H]) made by prepare(), or null: made here. frozen: the bound
  // call's context (outputs written through output_data), or null.
  // qw: DynamicQuantizeLSTM's products made by prepare(), or null (made here when quantized_).
  template <typename T, typename C>
  Status compute(backend::KernelContext& ctx, RnnScratch<C>& sc, const C* rt_all, backend::FrozenStepContext* frozen,
                 const QuantizedWeights* qw) const {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& r = ctx.input(2);
    if (x.rank() != 3) return invalid_argument("X must be rank 3, got " + x.shape().to_string());
    const int64_t S = layout_ ? x.shape()[1] : x.shape()[0];
    const int64_t N = layout_ ? x.shape()[0] : x.shape()[1];
    const int64_t I = x.shape()[2];
    // R is [D, G*H, H], or DynamicQuantizeLSTM's [D, H, G*H].
    const int64_t H = r.rank() == 3 ? r.shape()[quantized_ ? 1 : 2] : 0;
    const int64_t G = gates_, D = dirs_;
    if (hidden_ > 0 && H != hidden_)
      return invalid_argument("R's " + std::string(quantized_ ? "middle" : "last") + " dim " + std::to_string(H) +
                              " differs from hidden_size " + std::to_string(hidden_));
    QuantizedWeights made;  // run()'s DynamicQuantizeLSTM products
    if (quantized_ && !qw) {
      SDX_ASSIGN_OR_RETURN(made, quantized_weights(ctx, D, G * H, I, H), "");
      qw = &made;
    } else if (!quantized_) {
      if (w.dtype() != x.dtype() || r.dtype() != x.dtype()) return invalid_argument("W and R must have the type of X");
      if (!has_dims(w.shape(), Dims<3>{D, G * H, I}))
        return invalid_argument("W must be " + Shape{D, G * H, I}.to_string() + ", got " + w.shape().to_string());
      if (!has_dims(r.shape(), Dims<3>{D, G * H, H}))
        return invalid_argument("R must be " + Shape{D, G * H, H}.to_string() + ", got " + r.shape().to_string());
    }
    auto check = [&](int i, std::span<const int64_t> want, const char* name) -> Status {
      if (!ctx.has_input(i)) return Status::ok();
      if (!has_dims(ctx.input(i).shape(), want) || ctx.input(i).dtype() != x.dtype())
        return invalid_argument(std::string(name) + " must be " + Shape(std::vector<int64_t>(want.begin(), want.end())).to_string() +
                                " of X's type, got " + ctx.input(i).shape().to_string());
      return Status::ok();
    };
    const Dims<3> state_dims = layout_ ? Dims<3>{N, D, H} : Dims<3>{D, N, H};
    SDX_RETURN_IF_ERROR(check(3, Dims<2>{D, 2 * G * H}, "B"), "");
    SDX_RETURN_IF_ERROR(check(5, state_dims, "initial_h"), "");
    if (cell_ == Cell::kLstm) {
      SDX_RETURN_IF_ERROR(check(6, state_dims, "initial_c"), "");
      SDX_RETURN_IF_ERROR(check(7, Dims<2>{D, 3 * H}, "P"), "");
    }
    std::vector<int64_t>& lens = sc.lens;
    lens.assign(static_cast<size_t>(N), S);
    if (ctx.has_input(4)) {
      // Read into lens' own storage (the bound call reads it on every call and allocates nothing).
      const Tensor& sl = ctx.input(4);
      if ((sl.dtype() != DType::kInt32 && sl.dtype() != DType::kInt64) || sl.numel() != N)
        return invalid_argument("sequence_lens must be an integer tensor of shape [batch]");
      for (int64_t n = 0; n < N; ++n) {
        const int64_t l = sl.dtype() == DType::kInt32 ? sl.data<int32_t>()[n] : sl.data<int64_t>()[n];
        if (l < 0 || l > S) return out_of_range("sequence length " + std::to_string(l) + " outside [0, " + std::to_string(S) + "]");
        lens[static_cast<size_t>(n)] = l;
      }
    }
    // X, W, R, B and P as C: read in place when they already are (float32, float64), copied otherwise.
    const C* xs = seq::widened<T, C>(x, sc.x_copy);
    const C* ws = qw ? nullptr : seq::widened<T, C>(w, sc.w_copy);
    const C* rs = qw ? nullptr : seq::widened<T, C>(r, sc.r_copy);
    if (!ctx.has_input(3)) sc.b_copy.assign(static_cast<size_t>(D * 2 * G * H), C(0));
    const C* bs = ctx.has_input(3) ? seq::widened<T, C>(ctx.input(3), sc.b_copy) : sc.b_copy.data();
    const bool has_p = cell_ == Cell::kLstm && ctx.has_input(7);
    const C* ps = has_p ? seq::widened<T, C>(ctx.input(7), sc.p_copy) : nullptr;
    // States in [dirs, batch, H] regardless of layout.
    auto load_state = [&](int i, std::vector<C>& s) {
      s.assign(static_cast<size_t>(D * N * H), C(0));
      if (!ctx.has_input(i)) return;
      const C* raw = seq::widened<T, C>(ctx.input(i), sc.state_copy);
      for (int64_t d = 0; d < D; ++d)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t h = 0; h < H; ++h)
            s[static_cast<size_t>((d * N + n) * H + h)] = raw[static_cast<size_t>(layout_ ? (n * D + d) * H + h : (d * N + n) * H + h)];
    };
    std::vector<C>& hs = sc.hs;
    std::vector<C>& cs = sc.cs;
    load_state(5, hs);
    if (cell_ == Cell::kLstm) load_state(6, cs);
    std::vector<C>& ys = sc.ys;  // [seq, dirs, batch, H]
    ys.assign(static_cast<size_t>(S * D * N * H), C(0));

    // Steps at or past every entry's length do nothing (and DynamicQuantizeLSTM quantizes X over the
    // rows of the steps before).
    const int64_t max_len = N > 0 ? *std::max_element(lens.begin(), lens.end()) : 0;
    if constexpr (std::is_same_v<C, float>) {
      if (!qw && sc.proj.empty())  // run()'s projections, made here: the directions may run at once
        for (int64_t e = 0; e < D; ++e)
          sc.proj.push_back(input_projection(ws + e * G * H * I, S * N, I, G * H, /*kept=*/false, {}));
    }
    const Pass<C> pass{xs,     ws, rs, bs, ps, rt_all, sc.rt_packed.empty() ? nullptr : sc.rt_packed.data(),
                       qw,     max_len, S, N, I, H, ctx.num_outputs() > 0 && ctx.wants_output(0)};
    for (int64_t d = 0; d < D; ++d) {
      DirectionScratch<C>& ds = sc.dir[static_cast<size_t>(d)];
      ds.xw.resize(static_cast<size_t>(S * N * G * H));
      ds.hr.resize(static_cast<size_t>(N * G * H));
      ds.gated.resize(cell_ == Cell::kGru ? static_cast<size_t>(N * H) : 0);
      ds.gated_r.resize(ds.gated.size());
      ds.tmp.resize(static_cast<size_t>((G + 1) * H));
      if (!rt_all && !qw && sc.rt_packed.empty()) ds.rt.resize(static_cast<size_t>(G * H * H));
      if (qw) {
        ds.qscratch.resize(std::max(ds.qscratch.size(), quantized_scratch_bytes(*qw, max_len, N)));
        ds.h_active.resize(static_cast<size_t>(N * H));
      }
    }
    // The directions of a bidirectional layer are independent: one per thread when the pool has two
    // (the products inside then run single-threaded, as parallel_for does inside a chunk).
    Status status[2];
    parallel_for(D, 1, [&](int64_t d0, int64_t d1) {
      for (int64_t d = d0; d < d1; ++d) status[d] = run_direction<C>(d, pass, sc, sc.dir[static_cast<size_t>(d)]);
    });
    for (int64_t d = 0; d < D; ++d) SDX_RETURN_IF_ERROR(status[d], "direction " + std::to_string(d));
    return write_outputs<T, C>(ctx, frozen, sc, S, N, H);
  }

  // What every direction reads.
  template <typename C>
  struct Pass {
    const C *xs, *ws, *rs, *bs, *ps;
    const C* rt_all;
    const SmallMPackedWeights* rt_packed;  // [D], or null
    const QuantizedWeights* qw;
    int64_t max_len, S, N, I, H;
    bool with_y;
  };

  // Direction d of the layer: its input projection, then its steps, on its own buffers (ds) and its own
  // slices of the states and of Y in sc.
  template <typename C>
  Status run_direction(int64_t d, const Pass<C>& in, RnnScratch<C>& sc, DirectionScratch<C>& ds) const {
    const int64_t G = gates_, D = dirs_, S = in.S, N = in.N, I = in.I, H = in.H;
    const bool rev = reverse_ || d == 1;
    const Activation* act = acts_.data() + static_cast<size_t>(d) * (acts_.size() / static_cast<size_t>(D));
    const C* wb = in.bs + d * 2 * G * H;
    const C* rb = wb + G * H;
    const C* pd = in.ps ? in.ps + d * 3 * H : nullptr;
    C* hd = sc.hs.data() + d * N * H;
    C* cd = cell_ == Cell::kLstm ? sc.cs.data() + d * N * H : nullptr;
    std::vector<C>& xw = ds.xw;
    std::vector<C>& hr = ds.hr;
    bool projected = false;
    if constexpr (std::is_same_v<C, float>) {
      if (in.qw) {
        in.qw->w[static_cast<size_t>(d)].run(in.max_len * N, in.xs, I, xw.data(), ds.qscratch.data());
        projected = true;
      } else if (sc.proj[static_cast<size_t>(d)]) {
        SDX_RETURN_IF_ERROR(sc.proj[static_cast<size_t>(d)]->run(in.xs, nullptr, xw.data()), "input projection");
        projected = true;
      }
    }
    if (!projected) gemm(false, true, S * N, G * H, I, C(1), in.xs, I, in.ws + d * G * H * I, I, C(0), xw.data(), G * H);
    for (int64_t row = 0; row < S * N; ++row) vv(kAdd, xw.data() + row * G * H, wb, xw.data() + row * G * H, G * H);
    // R^T [H, G*H] of the direction: the step's R h is then a product with contiguous weight rows,
    // which at batch <= 8 is the small-M kernel's (gemm.h: one pass over R, accumulators in
    // registers), not one dot product per output element. The bound form (prepare) transposes R once;
    // run() transposes it on every call (about 13 steps' worth, romanizer_gru_encoder) so that its
    // results are bitwise the replay's.
    const SmallMPackedWeights* packed = in.rt_packed ? in.rt_packed + d : nullptr;
    const C* rt = in.rt_all ? in.rt_all + d * G * H * H : ds.rt.data();
    // The common LSTM (float, default activations, no peepholes, clip or coupled gates) takes one fused call
    // per step and entry (simd::lstm_cell: the bits of step_cell's op-by-op rows, a third of the calls).
    const bool fused = std::is_same_v<C, float> && cell_ == Cell::kLstm && !pd && !input_forget_ && clip_ <= 0 &&
                       act[0].kind == Activation::kSigmoid && act[1].kind == Activation::kTanh &&
                       act[2].kind == Activation::kTanh;
    if (!in.rt_all && !in.qw && !packed) permute(PermutePlan::make({H, G * H}, {1, H}), in.rs + d * G * H * H, ds.rt.data());
    for (int64_t step = 0; step < in.max_len; ++step) {
      if constexpr (std::is_same_v<C, float>) {
        if (in.qw) quantized_step(*in.qw, d, step, sc.lens, in.with_y, hd, N, H, ds, hr.data());
        if (packed) packed_recurrent_product(step, N, G * H, H, hd, *packed, hr.data());
      }
      if (!in.qw && !packed) recurrent_product(step, N, G * H, H, hd, rt, hr.data());
      if (!fused)  // the fused cell adds Rb itself
        for (int64_t n = 0; n < N; ++n) vv(kAdd, hr.data() + n * G * H, rb, hr.data() + n * G * H, G * H);
      if (cell_ == Cell::kGru && !linear_before_reset_) {
        // h-gate recurrence uses (r * h) R_h^T: compute r for the batch first.
        for (int64_t n = 0; n < N; ++n) {
          const int64_t len = sc.lens[static_cast<size_t>(n)];
          const int64_t t = rev ? len - 1 - step : step;
          C* gn = ds.gated.data() + n * H;
          if (step >= len) {
            std::fill(gn, gn + H, C(0));
            continue;
          }
          for (int64_t j = 0; j < H; ++j)
            gn[j] = xw[static_cast<size_t>(x_row(t, n, S, N) * G * H + H + j)] + hr[static_cast<size_t>(n * G * H + H + j)];
          apply_row(act[0], gn, H);
          for (int64_t j = 0; j < H; ++j) gn[j] *= hd[n * H + j];
        }
        gemm(false, false, N, H, H, C(1), ds.gated.data(), H, rt + 2 * H, G * H, C(0), ds.gated_r.data(), H);
      }
      for (int64_t n = 0; n < N; ++n) {
        const int64_t len = sc.lens[static_cast<size_t>(n)];
        if (step >= len) continue;
        const int64_t t = rev ? len - 1 - step : step;
        C* yt = sc.ys.data() + ((t * D + d) * N + n) * H;
        if constexpr (std::is_same_v<C, float>) {
          if (fused) {
            simd::lstm_cell(xw.data() + x_row(t, n, S, N) * G * H, hr.data() + n * G * H, rb, cd + n * H, hd + n * H, H);
            std::copy_n(hd + n * H, H, yt);
            continue;
          }
        }
        const C* reset_rec = ds.gated_r.empty() ? nullptr : ds.gated_r.data() + n * H;
        step_cell(act, xw.data() + x_row(t, n, S, N) * G * H, hr.data() + n * G * H, rb, reset_rec, pd, hd + n * H,
                  cd ? cd + n * H : nullptr, H, yt, ds.tmp.data());
      }
    }
    return Status::ok();
  }

  // hr [N, GH] = h [N, H] R^T [H, GH]. An R^T over 1 MiB is read in four column blocks, in reverse order
  // on odd steps: the blocks the previous step read last are then still in L2 (a 512-wide LSTM's R^T is
  // 4 MiB per direction, against a 2 MiB L2). Each column's sum is the same whatever the blocks.
  template <typename C>
  static void recurrent_product(int64_t step, int64_t N, int64_t GH, int64_t H, const C* h, const C* rt, C* hr) {
    const int64_t parts = GH * H * static_cast<int64_t>(sizeof(C)) > (int64_t{1} << 20) && GH % 64 == 0 ? 4 : 1;
    for (int64_t q = 0; q < parts; ++q) {
      const int64_t b = step % 2 == 1 ? parts - 1 - q : q;
      const int64_t c0 = GH / parts * b, width = GH / parts;
      gemm(false, false, N, width, H, C(1), h, H, rt + c0, GH, C(0), hr + c0, GH);
    }
  }

  // recurrent_product on R^T packed for the small-M kernel (the bound call's; bitwise the unpacked
  // product): each 64-column block is [H, 64] contiguous, so a step streams R sequentially instead of
  // 256-byte pieces of 8 KiB rows (a 512-wide LSTM node of 20 steps: 1.33 -> 0.89 ms at 1 thread). Odd
  // steps take the blocks backwards: those the previous step read last are still in L2.
  static void packed_recurrent_product(int64_t step, int64_t N, int64_t GH, int64_t H, const float* h,
                                       const SmallMPackedWeights& w, float* hr) {
    const int64_t blocks = (GH + kSmallMBlock - 1) / kSmallMBlock;
    parallel_for(blocks, detail::small_m_grain(H), [&](int64_t i0, int64_t i1) {
      if (step % 2 == 1)
        small_m_gemm_blocks(N, H, h, H, w, blocks - i1, blocks - i0, 1.f, 0.f, hr, GH, /*descending=*/true);
      else
        small_m_gemm_blocks(N, H, h, H, w, i0, i1, 1.f, 0.f, hr, GH);
    });
  }

  // hr [N, G*H] = direction d's h R for DynamicQuantizeLSTM; with Y an output (with_y), the rows of
  // entries finished before the previous step count as 0 (onnxruntime's zeroed rows of Y).
  static void quantized_step(const QuantizedWeights& qw, int64_t d, int64_t step, const std::vector<int64_t>& lens,
                             bool with_y, const float* h, int64_t N, int64_t H, DirectionScratch<float>& sc, float* hr) {
    const float* h_in = h;
    if (with_y && std::any_of(lens.begin(), lens.end(), [&](int64_t len) { return step > len; })) {
      for (int64_t n = 0; n < N; ++n) {
        float* row = sc.h_active.data() + n * H;
        if (step > lens[static_cast<size_t>(n)])
          std::fill(row, row + H, 0.f);
        else
          std::copy_n(h + n * H, H, row);
      }
      h_in = sc.h_active.data();
    }
    // Odd steps read R's column blocks backwards: the blocks the last step read last are still in L2.
    qw.r[static_cast<size_t>(d)].run(N, h_in, H, hr, sc.qscratch.data(), /*descending=*/step % 2 == 1);
  }

  template <typename C>
  C clip(C v) const {
    return clip_ > 0 ? std::clamp(v, static_cast<C>(-clip_), static_cast<C>(clip_)) : v;
  }

  int64_t x_row(int64_t t, int64_t n, int64_t S, int64_t N) const { return layout_ ? n * S + t : t * N + n; }

  // v[j] = act(clip(v[j])) for j < n, in place (no clip for LSTM's cell output: clipped false).
  // float32 Sigmoid and Tanh (the defaults of every cell) run on the vector kernels
  // (simd/vector_ops.h, within 1-3 ulp of the exact value, as the element-wise Sigmoid and Tanh
  // ops); the others, and double, per element in double.
  template <typename C>
  void apply_row(const Activation& a, C* v, int64_t n, bool clipped = true) const {
    if (clipped && clip_ > 0)
      for (int64_t j = 0; j < n; ++j) v[j] = clip(v[j]);
    if constexpr (std::is_same_v<C, float>) {
      if (a.kind == Activation::kSigmoid) return simd::sigmoid(v, v, n);
      if (a.kind == Activation::kTanh) return simd::tanh(v, v, n);
    }
    for (int64_t j = 0; j < n; ++j) v[j] = static_cast<C>(a(static_cast<double>(v[j])));
  }

  // One time step for one batch entry: pre = W x + Wb and rh = R h + Rb per gate row;
  // reset_rec (GRU without linear_before_reset) = (r * h) R_h^T. Updates h (and c) in
  // place and copies the new h to y. Gate by gate, as rows (apply_row); tmp: G * H + H values.
  template <typename C>
  void step_cell(const Activation* act, const C* pre, const C* rh, const C* rb, const C* reset_rec, const C* p, C* h, C* c,
                 int64_t H, C* y, C* tmp) const {
    // Each line is one IEEE operation per element, in the order of the formulas (so any vector width
    // gives the same bits). Without peepholes the gates skip the "+ 0" term: it can only turn a -0 into
    // +0, which the gate's activation maps to the same value.
    if (cell_ == Cell::kRnn) {
      vv(kAdd, pre, rh, h, H);
      apply_row(act[0], h, H);
    } else if (cell_ == Cell::kGru) {
      C* zr = tmp;  // z then r
      C* hh = tmp + 2 * H;
      C* t = tmp + 3 * H;
      vv(kAdd, pre, rh, zr, 2 * H);
      apply_row(act[0], zr, 2 * H);
      if (linear_before_reset_) {
        vv(kMul, zr + H, rh + 2 * H, hh, H);  // r * (R_h h + Rb_h)
      } else {
        vv(kAdd, reset_rec, rb + 2 * H, hh, H);  // (r * h) R_h^T + Rb_h
      }
      vv(kAdd, pre + 2 * H, hh, hh, H);
      apply_row(act[1], hh, H);
      // h = (1 - z) * hh + z * h
      sv(kSub, C(1), zr, t, H);
      vv(kMul, t, hh, t, H);
      vv(kMul, zr, h, hh, H);
      vv(kAdd, t, hh, h, H);
    } else {
      C* gi = tmp;  // i, f, g, then o
      C* gf = tmp + H;
      C* gg = tmp + 2 * H;
      C* go = tmp + 3 * H;
      C* cn = tmp + 4 * H;
      // gate = pre + rh (+ p * c)
      auto gate = [&](int64_t k, C* out, const C* peep) {
        vv(kAdd, pre + k * H, rh + k * H, out, H);
        if (!peep) return;
        vv(kMul, peep, c, cn, H);
        vv(kAdd, out, cn, out, H);
      };
      gate(0, gi, p);
      gate(2, gf, p ? p + 2 * H : nullptr);
      gate(3, gg, nullptr);
      apply_row(act[0], gi, input_forget_ ? H : 2 * H);
      if (input_forget_) sv(kSub, C(1), gi, gf, H);
      apply_row(act[1], gg, H);
      // c = f * c + i * g
      vv(kMul, gf, c, gf, H);
      vv(kMul, gi, gg, gi, H);
      vv(kAdd, gf, gi, c, H);
      gate(1, go, p ? p + H : nullptr);
      apply_row(act[0], go, H);
      std::copy_n(c, H, cn);
      apply_row(act[2], cn, H, /*clipped=*/false);
      vv(kMul, go, cn, h, H);
    }
    std::copy_n(h, H, y);
  }

  template <typename T, typename C>
  Status write_outputs(backend::KernelContext& ctx, const backend::FrozenStepContext* frozen, RnnScratch<C>& sc, int64_t S,
                       int64_t N, int64_t H) const {
    const std::vector<C>& ys = sc.ys;
    const std::vector<C>& hs = sc.hs;
    const std::vector<C>& cs = sc.cs;
    const int64_t D = dirs_;
    const DType dt = ctx.input(0).dtype();
    auto wants = [&](int i) { return i < ctx.num_outputs() && ctx.wants_output(i); };
    // Output i's elements: the frozen buffer (bound), or a new output.
    auto output = [&](int i, const Shape& shape) -> Result<T*> {
      if (frozen) {
        SDX_ASSIGN_OR_RETURN(void* p, frozen->output_data(i, dt, shape), "");
        return static_cast<T*>(p);
      }
      SDX_ASSIGN_OR_RETURN(Tensor t, ctx.allocate_output(i, dt, shape), "");
      return t.data<T>();
    };
    if (wants(0)) {
      const Shape& y_shape = kept_shape(sc.y_shape, layout_ ? Dims<4>{N, S, D, H} : Dims<4>{S, D, N, H});
      SDX_ASSIGN_OR_RETURN(T* y, output(0, y_shape), "Y");
      for (int64_t t = 0; t < S; ++t)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t n = 0; n < N; ++n)
            for (int64_t h = 0; h < H; ++h) {
              const int64_t dst = layout_ ? ((n * S + t) * D + d) * H + h : ((t * D + d) * N + n) * H + h;
              y[dst] = store_as<T, C>(ys[static_cast<size_t>(((t * D + d) * N + n) * H + h)]);
            }
    }
    auto write_state = [&](int i, const std::vector<C>& s, const char* name) -> Status {
      if (!wants(i)) return Status::ok();
      const Shape& shape = kept_shape(sc.state_shape, layout_ ? Dims<3>{N, D, H} : Dims<3>{D, N, H});
      SDX_ASSIGN_OR_RETURN(T* o, output(i, shape), name);
      for (int64_t d = 0; d < D; ++d)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t h = 0; h < H; ++h)
            o[layout_ ? (n * D + d) * H + h : (d * N + n) * H + h] = store_as<T, C>(s[static_cast<size_t>((d * N + n) * H + h)]);
      return Status::ok();
    };
    SDX_RETURN_IF_ERROR(write_state(1, hs, "Y_h"), "");
    if (cell_ == Cell::kLstm) SDX_RETURN_IF_ERROR(write_state(2, cs, "Y_c"), "");
    return Status::ok();
  }

  Cell cell_;
  bool quantized_ = false;
  int64_t gates_ = 1, dirs_ = 1, hidden_ = 0, layout_ = 0;
  bool reverse_ = false, linear_before_reset_ = false, input_forget_ = false;
  float clip_ = 0.0f;
  std::vector<Activation> acts_;
};

template <Cell kCell, bool kQuantized = false>
backend::KernelFactory recurrent_factory() {
  return [](const ir::Node& node) -> Result<std::unique_ptr<backend::Kernel>> {
    auto k = std::make_unique<RecurrentKernel>(kCell, kQuantized);
    SDX_RETURN_IF_ERROR(k->init(node), node.describe());
    return std::unique_ptr<backend::Kernel>(std::move(k));
  };
}

const backend::KernelRegistrar kRnn({"RNN", "", 7, backend::kAnyOpset, recurrent_factory<Cell::kRnn>()});
const backend::KernelRegistrar kGru({"GRU", "", 7, backend::kAnyOpset, recurrent_factory<Cell::kGru>()});
const backend::KernelRegistrar kLstm({"LSTM", "", 7, backend::kAnyOpset, recurrent_factory<Cell::kLstm>()});
const backend::KernelRegistrar kDynamicQuantizeLstm({"DynamicQuantizeLSTM", "com.microsoft", 1, backend::kAnyOpset,
                                                    recurrent_factory<Cell::kLstm, /*kQuantized=*/true>()});

}  // namespace
}  // namespace sdx::cpu
