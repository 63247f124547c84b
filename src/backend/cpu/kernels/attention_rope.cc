// RotaryEmbedding (ONNX opset 23): rotates pairs of features of every head by a
// position-dependent angle, given as cos/sin caches. Pairs are the two halves of the
// rotated dims (default) or adjacent features (interleaved=1). Inputs are
// [B, H, S, D] (4-D) or [B, S, H*D] (3-D, num_heads required).
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {


class RotaryEmbeddingKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    interleaved_ = node.attr_int("interleaved", 0) != 0;
    rotary_dim_ = node.attr_int("rotary_embedding_dim", 0);
    num_heads_ = node.attr_int("num_heads", 0);
    if (rotary_dim_ < 0 || num_heads_ < 0) return invalid_argument("rotary_embedding_dim and num_heads must be nonnegative");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& cos = ctx.input(1);
    const Tensor& sin = ctx.input(2);
    if (x.rank() != 3 && x.rank() != 4) return invalid_argument("X must be rank 3 or 4, got " + x.shape().to_string());
    if (cos.dtype() != x.dtype() || sin.dtype() != x.dtype()) return invalid_argument("cos_cache/sin_cache must have the type of X");
    const int64_t B = x.shape()[0];
    int64_t H, S, D;
    // Element (b, s, h, d) of X lives at b*sb + s*ss + h*sh + d.
    int64_t sb, ss, sh;
    if (x.rank() == 4) {
      H = x.shape()[1], S = x.shape()[2], D = x.shape()[3];
      sb = H * S * D, sh = S * D, ss = D;
    } else {
      if (num_heads_ <= 0) return invalid_argument("3-D input needs the num_heads attribute");
      H = num_heads_, S = x.shape()[1];
      if (x.shape()[2] % H) return invalid_argument("hidden size " + std::to_string(x.shape()[2]) + " not divisible by num_heads");
      D = x.shape()[2] / H;
      sb = S * H * D, ss = H * D, sh = D;
    }
    const int64_t rd = rotary_dim_ == 0 ? D : rotary_dim_;
    if (rd > D || rd % 2) return invalid_argument("rotary_embedding_dim " + std::to_string(rd) + " must be even and <= head size " + std::to_string(D));
    const int64_t half = rd / 2;
    std::vector<int64_t> pos;
    const bool has_pos = ctx.has_input(3);
    if (has_pos) {
      Result<std::vector<int64_t>> p = read_int64s(ctx.input(3), "position_ids", IntTypes::kInt32Or64);
      if (!p.is_ok() || ctx.input(3).shape() != Shape{B, S})
        return invalid_argument("position_ids must be an integer tensor of shape [batch, seq]");
      pos = std::move(p).value();
      if (cos.rank() != 2 || sin.shape() != cos.shape() || cos.shape()[1] != half)
        return invalid_argument("with position_ids, cos/sin caches must be [max_position, " + std::to_string(half) + "], got " +
                                cos.shape().to_string());
      for (int64_t p : pos)
        if (p < 0 || p >= cos.shape()[0]) return out_of_range("position id " + std::to_string(p) + " outside the cache");
    } else if (cos.shape() != Shape{B, S, half} || sin.shape() != cos.shape()) {
      return invalid_argument("without position_ids, cos/sin caches must be [batch, seq, " + std::to_string(half) + "], got " +
                              cos.shape().to_string());
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
    return dispatch<SDX_FLOAT_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t row = has_pos ? pos[static_cast<size_t>(b * S + s)] : b * S + s;
          const T* cr = cos.data<T>() + row * half;
          const T* sr = sin.data<T>() + row * half;
          for (int64_t h = 0; h < H; ++h) {
            const int64_t base = b * sb + s * ss + h * sh;
            for (int64_t i = 0; i < half; ++i) {
              const int64_t i1 = interleaved_ ? 2 * i : i;
              const int64_t i2 = interleaved_ ? 2 * i + 1 : i + half;
              const C x1 = load_as<C>(xd[base + i1]), x2 = load_as<C>(xd[base + i2]);
              const C c = load_as<C>(cr[i]), sn = load_as<C>(sr[i]);
              yd[base + i1] = store_as<T, C>(round_as<T, C>(c * x1) - round_as<T, C>(sn * x2));
              yd[base + i2] = store_as<T, C>(round_as<T, C>(sn * x1) + round_as<T, C>(c * x2));
            }
            for (int64_t d = rd; d < D; ++d) yd[base + d] = xd[base + d];
          }
        }
      return Status::ok();
    }, "RotaryEmbedding");
  }

 private:
  bool interleaved_ = false;
  int64_t rotary_dim_ = 0, num_heads_ = 0;
};

const backend::KernelRegistrar kRotaryEmbedding(
    {"RotaryEmbedding", "", 23, backend::kAnyOpset, backend::kernel_factory<RotaryEmbeddingKernel>()});

}  // namespace
}  // namespace sdx::cpu
