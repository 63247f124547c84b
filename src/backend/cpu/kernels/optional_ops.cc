// Optional, OptionalHasElement, OptionalGetElement. An optional that holds a
// value is represented by the value itself; an empty one by Datum::none().
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

Status optional_make(KernelContext& ctx) {
  if (ctx.num_inputs() > 0 && ctx.has_input(0)) return ctx.set_output_datum(0, ctx.input_datum(0));
  return ctx.set_output_datum(0, Datum::none());
}

Status optional_has_element(KernelContext& ctx) {
  bool has = ctx.num_inputs() > 0 && ctx.has_input(0) && !ctx.input_datum(0).is_none();
  SDX_ASSIGN_OR_RETURN(Tensor out, ctx.allocate_output(0, DType::kBool, Shape{}), "");
  *out.data<uint8_t>() = has ? 1 : 0;
  return Status::ok();
}

Status optional_get_element(KernelContext& ctx) {
  if (!ctx.has_input(0) || ctx.input_datum(0).is_none()) return invalid_argument("the optional input is empty");
  return ctx.set_output_datum(0, ctx.input_datum(0));
}

using backend::function_kernel;
using backend::KernelRegistrar;
const KernelRegistrar kOptional({"Optional", "", 15, backend::kAnyOpset, function_kernel(optional_make)});
const KernelRegistrar kOptionalHasElement({"OptionalHasElement", "", 15, backend::kAnyOpset, function_kernel(optional_has_element)});
const KernelRegistrar kOptionalGetElement({"OptionalGetElement", "", 15, backend::kAnyOpset, function_kernel(optional_get_element)});

}  // namespace
}  // namespace sdx::cpu
