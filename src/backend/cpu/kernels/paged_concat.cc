// sdx.PagedConcat (schema in ir/schemas/paged_concat.cc): past rows gathered from a slot pool, then the new
// rows: Y[b, h] = [cache[h, slot_map[b, 0]], ..., cache[h, slot_map[b, P - 1]], new[b, h, 0..S)], zeros for
// an empty slot (-1), this call's new token j for an entry -2 - j (kernels/util/paged_slots.h). Any byte-addressable element type (rows are copied as bytes). The form of a paged
// past that AttentionFusionOptimizations removes where an sdx.Attention reads it; it runs only where something
// else reads the gathered tensor (a requested present.* output).
#include <cstring>
#include <string>

#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/kernels/util/paged_slots.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

struct ConcatShape {
  int64_t batch = 0, heads = 0, past = 0, s = 0, slots = 0;
  size_t row_bytes = 0;
};

Status gather(const ConcatShape& c, const char* cache, const int64_t* map, const char* fresh, char* y) {
  SDX_RETURN_IF_ERROR(paged::check_slot_map("sdx.PagedConcat", map, c.batch, c.past, c.slots, c.batch * c.s), "");
  const size_t rb = c.row_bytes;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      char* out = y + static_cast<size_t>((b * c.heads + h) * (c.past + c.s)) * rb;
      for (int64_t t = 0; t < c.past; ++t, out += rb) {
        const int64_t slot = map[b * c.past + t];
        if (slot == paged::kEmpty) {
          std::memset(out, 0, rb);
        } else if (slot < 0) {
          const int64_t j = paged::new_token(slot);
          std::memcpy(out, fresh + static_cast<size_t>(((j / c.s) * c.heads + h) * c.s + j % c.s) * rb, rb);
        } else {
          std::memcpy(out, cache + static_cast<size_t>(h * c.slots + slot) * rb, rb);
        }
      }
      std::memcpy(out, fresh + static_cast<size_t>((b * c.heads + h) * c.s) * rb, static_cast<size_t>(c.s) * rb);
    }
  return Status::ok();
}

class PagedConcatKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    SDX_ASSIGN_OR_RETURN(ConcatShape c, shape_of(ctx.input(0), ctx.input(1), ctx.input(2)), ctx.where());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, ctx.input(0).dtype(), out_shape(c, ctx.input(2))),
                         "sdx.PagedConcat");
    return gather(c, static_cast<const char*>(ctx.input(0).raw_data()), ctx.input(1).data<int64_t>(),
                  static_cast<const char*>(ctx.input(2).raw_data()), static_cast<char*>(y.raw_data()));
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) return no_bound_form();
    Result<ConcatShape> r = shape_of(ctx.input(0), ctx.input(1), ctx.input(2));
    if (!r.is_ok() || !output_matches(ctx, 0, ctx.input(0).dtype(), out_shape(r.value(), ctx.input(2))))
      return no_bound_form();
    return backend::bind_call([c = r.value(), cache = static_cast<const char*>(ctx.input(0).raw_data()),
                               map = ctx.input(1).data<int64_t>(), fresh = static_cast<const char*>(ctx.input(2).raw_data()),
                               y = static_cast<char*>(ctx.output(0).raw_data())] { return gather(c, cache, map, fresh, y); });
  }

 private:
  static Shape out_shape(const ConcatShape& c, const Tensor& fresh) {
    return Shape{c.batch, c.heads, c.past + c.s, fresh.shape()[3]};
  }

  static Result<ConcatShape> shape_of(const Tensor& cache, const Tensor& map, const Tensor& fresh) {
    if (cache.rank() != 3 || map.rank() != 2 || fresh.rank() != 4 || map.dtype() != DType::kInt64 ||
        fresh.dtype() != cache.dtype() || !dtype_is_byte_addressable(cache.dtype()) ||
        cache.shape()[0] != fresh.shape()[1] || cache.shape()[2] != fresh.shape()[3] || map.shape()[0] != fresh.shape()[0])
      return invalid_argument("sdx.PagedConcat needs cache [H, slots, D], int64 slot_map [B, P] and new [B, H, S, D] of "
                              "the cache's element type; got cache " + cache.shape().to_string() + " " +
                              dtype_name(cache.dtype()) + ", slot_map " + map.shape().to_string() + " " +
                              dtype_name(map.dtype()) + ", new " + fresh.shape().to_string() + " " +
                              dtype_name(fresh.dtype()));
    ConcatShape c;
    c.batch = fresh.shape()[0];
    c.heads = fresh.shape()[1];
    c.s = fresh.shape()[2];
    c.past = map.shape()[1];
    c.slots = cache.shape()[1];
    c.row_bytes = dtype_storage_bytes(cache.dtype(), cache.shape()[2]);
    return c;
  }
};

const backend::KernelRegistrar kPagedConcat({"PagedConcat", "sdx", 1, backend::kAnyOpset,
                                             backend::kernel_factory<PagedConcatKernel>()});

}  // namespace
}  // namespace sdx::cpu
