// Cast, CastLike and BitCast: element type conversion between every ONNX type
// (numbers, bool, strings, 16-bit floats, float8/float4/e8m0, packed int4/int2).
#include <cstring>
#include <memory>

#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/quant/quant_util.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {

namespace {

// Converts n elements between two numeric element types (packed outputs zeroed first).
using CastLoop = void (*)(const void* src, void* dst, int64_t n, const CastOptions& opts);

template <typename S, typename D>
void cast_elements(const void* src, void* dst, int64_t n, const CastOptions& opts) {
  for (int64_t i = 0; i < n; ++i) D::store(dst, i, S::load(src, i), opts);
}

Result<CastLoop> find_cast_loop(DType from, DType to) {
  CastLoop loop = nullptr;
  SDX_RETURN_IF_ERROR(visit_numeric_dtype(
                          from,
                          [&](auto s) -> Status {
                            using S = decltype(s);
                            return visit_numeric_dtype(
                                to,
                                [&](auto d) -> Status {
                                  loop = &cast_elements<S, decltype(d)>;
                                  return Status::ok();
                                },
                                "Cast");
                          },
                          "Cast"),
                      "");
  return loop;
}

}  // namespace

Status cast_tensor(const Tensor& in, Tensor& out, const CastOptions& opts) {
  const int64_t n = in.numel();
  if (out.numel() != n)
    return internal_error("cast: output holds " + std::to_string(out.numel()) + " elements, input " + std::to_string(n));
  if (in.dtype() == DType::kString && out.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i) out.data<std::string>()[i] = in.data<std::string>()[i];
    return Status::ok();
  }
  if (out.dtype() == DType::kString) return cast_to_string(in, out);
  if (in.dtype() == DType::kString) return cast_from_string(in, out, opts);
  if (in.dtype() == out.dtype()) {
    if (n > 0) std::memcpy(out.raw_data(), in.raw_data(), in.nbytes());
    return Status::ok();
  }
  zero_packed_output(out);
  SDX_ASSIGN_OR_RETURN(CastLoop loop, find_cast_loop(in.dtype(), out.dtype()), "");
  loop(in.raw_data(), out.raw_data(), n, opts);
  return Status::ok();
}

namespace {

bool castable(DType t) {
  return t != DType::kUndefined && t != DType::kComplex64 && t != DType::kComplex128;
}

Result<CastOptions> parse_cast_options(const ir::Node& node) {
  CastOptions o;
  o.saturate = node.attr_int("saturate", 1) != 0;
  const std::string mode = node.attr_string("round_mode", "up");
  if (mode == "up") o.round_mode = E8M0Rounding::kUp;
  else if (mode == "down") o.round_mode = E8M0Rounding::kDown;
  else if (mode == "nearest") o.round_mode = E8M0Rounding::kNearest;
  else return invalid_argument("attribute 'round_mode' is '" + mode + "', expected 'up', 'down' or 'nearest'");
  return o;
}

Status run_cast(backend::KernelContext& ctx, const Tensor& x, DType to, const CastOptions& opts) {
  if (x.dtype() == to) return ctx.set_output(0, x);  // identity: publish the input as is
  if (!castable(x.dtype()))
    return unimplemented(std::string("Cast does not support input element type ") + dtype_name(x.dtype()));
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, to, x.shape()), "Cast output");
  return cast_tensor(x, y, opts);
}

// Bound form of run_cast (none for strings, whose conversions allocate).
std::unique_ptr<backend::BoundKernel> prepare_cast(const backend::PrepareContext& ctx, DType to,
                                                   const CastOptions& opts) {
  if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return no_bound_form();
  const Tensor& x = ctx.input(0);
  if (x.dtype() == DType::kString || to == DType::kString || !castable(x.dtype()) ||
      !output_matches(ctx, 0, to, x.shape()))
    return no_bound_form();
  const void* src = x.raw_data();
  void* dst = ctx.output(0).raw_data();
  const size_t out_bytes = ctx.output(0).nbytes();
  if (x.dtype() == to) {
    // run() publishes x itself as the output: nothing to do when the frozen output is that
    // buffer, else copy the values.
    if (src == dst || out_bytes == 0) return backend::bind_call([] { return Status::ok(); });
    return backend::bind_call([src, dst, out_bytes] {
      std::memcpy(dst, src, out_bytes);
      return Status::ok();
    });
  }
  Result<CastLoop> loop = find_cast_loop(x.dtype(), to);
  if (!loop.is_ok()) return no_bound_form();
  const bool packed = dtype_is_packed(to) && out_bytes > 0;
  if (!packed && !dtype_is_packed(x.dtype())) {
    // Whole elements on both sides: split over the pool (a one-hot Cast(bool -> float) of 526,336
    // elements is 0.5 ms on one core).
    const size_t in_size = static_cast<size_t>(dtype_bits(x.dtype()) / 8), out_size = static_cast<size_t>(dtype_bits(to) / 8);
    return backend::bind_call([loop = loop.value(), src, dst, n = x.numel(), opts, in_size, out_size] {
      parallel_for(n, int64_t{1} << 15, [&](int64_t b, int64_t e) {
        loop(static_cast<const char*>(src) + static_cast<size_t>(b) * in_size,
             static_cast<char*>(dst) + static_cast<size_t>(b) * out_size, e - b, opts);
      });
      return Status::ok();
    });
  }
  return backend::bind_call([loop = loop.value(), src, dst, n = x.numel(), opts, packed, out_bytes] {
    if (packed) std::memset(dst, 0, out_bytes);
    loop(src, dst, n, opts);
    return Status::ok();
  });
}

class CastKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* a = node.attr("to");
    if (!a) return invalid_argument("Cast needs the attribute 'to'");
    auto to = dtype_from_onnx(static_cast<int>(a->i));
    if (!to) return invalid_argument("attribute 'to' = " + std::to_string(a->i) + " is not an element type");
    if (!castable(*to)) return unimplemented(std::string("Cast to ") + dtype_name(*to) + " is not supported");
    to_ = *to;
    SDX_ASSIGN_OR_RETURN(opts_, parse_cast_options(node), "Cast");
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override { return run_cast(ctx, ctx.input(0), to_, opts_); }
  BoundResult prepare(const backend::PrepareContext& ctx) const override { return prepare_cast(ctx, to_, opts_); }

 private:
  DType to_ = DType::kFloat32;
  CastOptions opts_;
};

class CastLikeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(opts_, parse_cast_options(node), "CastLike");
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const DType to = ctx.input(1).dtype();
    if (!castable(to)) return unimplemented(std::string("CastLike to ") + dtype_name(to) + " is not supported");
    return run_cast(ctx, ctx.input(0), to, opts_);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(1)) return no_bound_form();
    const DType to = ctx.input(1).dtype();
    if (!castable(to)) return no_bound_form();
    return prepare_cast(ctx, to, opts_);
  }

 private:
  CastOptions opts_;
};

class BitCastKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* a = node.attr("to");
    if (!a) return invalid_argument("BitCast needs the attribute 'to'");
    auto to = dtype_from_onnx(static_cast<int>(a->i));
    if (!to) return invalid_argument("attribute 'to' = " + std::to_string(a->i) + " is not an element type");
    if (*to == DType::kString || !castable(*to))
      return invalid_argument(std::string("BitCast cannot produce element type ") + dtype_name(*to));
    to_ = *to;
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kString || dtype_bits(x.dtype()) != dtype_bits(to_))
      return invalid_argument(std::string("BitCast needs input and output types of the same bit width: ") +
                              dtype_name(x.dtype()) + " (" + std::to_string(dtype_bits(x.dtype())) + " bits) to " +
                              dtype_name(to_) + " (" + std::to_string(dtype_bits(to_)) + " bits)");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, to_, x.shape()), "BitCast output");
    if (x.nbytes() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return Status::ok();
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kString || dtype_bits(x.dtype()) != dtype_bits(to_) ||
        !output_matches(ctx, 0, to_, x.shape()))
      return no_bound_form();
    return backend::bind_call([src = x.raw_data(), dst = ctx.output(0).raw_data(), bytes = x.nbytes()] {
      if (bytes > 0) std::memcpy(dst, src, bytes);
      return Status::ok();
    });
  }

 private:
  DType to_ = DType::kUint8;
};

const backend::KernelRegistrar kCast({"Cast", "", 1, backend::kAnyOpset, backend::kernel_factory<CastKernel>()});
const backend::KernelRegistrar kCastLike({"CastLike", "", 15, backend::kAnyOpset,
                                          backend::kernel_factory<CastLikeKernel>()});
const backend::KernelRegistrar kBitCast({"BitCast", "", 26, backend::kAnyOpset,
                                         backend::kernel_factory<BitCastKernel>()});

}  // namespace
}  // namespace sdx::cpu
