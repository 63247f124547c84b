// TensorScatter (ONNX opset 24): writes an update block into a KV-cache tensor along
// the sequence axis at a per-batch write index (linear, or modulo the cache length
// in circular mode). The output is a copy of the cache with the block written.
#include <cstring>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

class TensorScatterKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const std::string mode = node.attr_string("mode", "linear");
    if (mode != "linear" && mode != "circular") return invalid_argument("mode must be 'linear' or 'circular', got '" + mode + "'");
    circular_ = mode == "circular";
    axis_ = node.attr_int("axis", -2);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& cache = ctx.input(0);
    const Tensor& update = ctx.input(1);
    if (cache.dtype() != update.dtype()) return invalid_argument("past_cache and update must have the same element type");
    if (!dtype_is_byte_addressable(cache.dtype()))
      return unimplemented(std::string("TensorScatter does not support element type ") + dtype_name(cache.dtype()));
    const int r = cache.rank();
    if (r < 2 || update.rank() != r) return invalid_argument("past_cache and update must have the same rank >= 2");
    SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, r), "axis");
    if (axis == 0) return invalid_argument("axis must not be the batch axis");
    for (int i = 0; i < r; ++i)
      if (i != axis ? update.shape()[i] != cache.shape()[i] : update.shape()[i] > cache.shape()[i])
        return invalid_argument("update" + update.shape().to_string() + " does not fit past_cache" + cache.shape().to_string());
    const int64_t B = cache.shape()[0];
    std::vector<int64_t> widx(static_cast<size_t>(B), 0);
    if (ctx.has_input(2)) {
      Result<std::vector<int64_t>> w = read_int64s(ctx.input(2), "write_indices", IntTypes::kInt32Or64);
      if (!w.is_ok() || static_cast<int64_t>(w.value().size()) != B)
        return invalid_argument("write_indices must be an integer tensor of shape [batch]");
      widx = std::move(w).value();
    }
    const int64_t max_len = cache.shape()[axis], len = update.shape()[axis];
    for (int64_t w : widx)
      if (w < 0 || (!circular_ && w + len > max_len))
        return out_of_range("write index " + std::to_string(w) + " with update length " + std::to_string(len) +
                            " does not fit the cache length " + std::to_string(max_len));
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, cache.dtype(), cache.shape()), "");
    const size_t esize = dtype_storage_bytes(cache.dtype(), 1);
    if (cache.numel() == 0) return Status::ok();
    std::memcpy(y.raw_data(), cache.raw_data(), cache.nbytes());
    const int64_t inner = cache.shape().size_between(axis + 1, r) * static_cast<int64_t>(esize);
    const int64_t mid = cache.shape().size_between(1, axis);
    const auto* src = static_cast<const char*>(update.raw_data());
    auto* dst = static_cast<char*>(y.raw_data());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t m = 0; m < mid; ++m)
        for (int64_t s = 0; s < len; ++s) {
          int64_t t = widx[static_cast<size_t>(b)] + s;
          if (circular_) t %= max_len;
          std::memcpy(dst + ((b * mid + m) * max_len + t) * inner, src + ((b * mid + m) * len + s) * inner, static_cast<size_t>(inner));
        }
    return Status::ok();
  }

 private:
  bool circular_ = false;
  int64_t axis_ = -2;
};

const backend::KernelRegistrar kTensorScatter(
    {"TensorScatter", "", 24, backend::kAnyOpset, backend::kernel_factory<TensorScatterKernel>()});

}  // namespace
}  // namespace sdx::cpu
