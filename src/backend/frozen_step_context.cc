#include "backend/frozen_step_context.h"

#include <cstring>

namespace sdx::backend {

FrozenStepContext::FrozenStepContext(const PrepareContext& p) : node_(p.node()) {
  for (int i = 0; i < p.num_inputs(); ++i) inputs_.push_back(p.has_input(i) ? Datum::tensor(p.input(i)) : Datum());
  for (int i = 0; i < p.num_outputs(); ++i) outputs_.push_back(p.wants_output(i) ? p.output(i) : Tensor());
}

bool FrozenStepContext::has_input(int i) const {
  return i >= 0 && i < num_inputs() && !inputs_[static_cast<size_t>(i)].is_empty();
}

const Datum& FrozenStepContext::input_datum(int i) const {
  static const Datum kEmpty;
  return i >= 0 && i < num_inputs() ? inputs_[static_cast<size_t>(i)] : kEmpty;
}

bool FrozenStepContext::wants_output(int i) const {
  return i >= 0 && i < num_outputs() && outputs_[static_cast<size_t>(i)].defined();
}

Status FrozenStepContext::check_output(int i, DType dtype, const Shape& shape) const {
  if (!wants_output(i)) return internal_error(where() + ": bound call wrote output " + std::to_string(i) + ", which has no frozen buffer");
  const Tensor& o = outputs_[static_cast<size_t>(i)];
  if (o.dtype() != dtype || o.shape() != shape)
    return internal_error(where() + ": output " + std::to_string(i) + " is frozen as " + o.type_string() +
                          " but the bound call made " + dtype_name(dtype) + shape.to_string());
  return Status::ok();
}

Result<Tensor> FrozenStepContext::allocate_output(int i, DType dtype, const Shape& shape) {
  SDX_RETURN_IF_ERROR(check_output(i, dtype, shape), "");
  return outputs_[static_cast<size_t>(i)];
}

Result<void*> FrozenStepContext::output_data(int i, DType dtype, const Shape& shape) const {
  SDX_RETURN_IF_ERROR(check_output(i, dtype, shape), "");
  return outputs_[static_cast<size_t>(i)].raw_data();
}

Status FrozenStepContext::set_output(int i, Tensor t) {
  SDX_RETURN_IF_ERROR(check_output(i, t.dtype(), t.shape()), "");
  const Tensor& o = outputs_[static_cast<size_t>(i)];
  if (o.raw_data() == t.raw_data()) return Status::ok();
  if (!dtype_is_byte_addressable(o.dtype())) return internal_error(where() + ": output " + std::to_string(i) + " cannot be copied");
  if (o.nbytes()) std::memcpy(o.raw_data(), t.raw_data(), o.nbytes());
  return Status::ok();
}

Status FrozenStepContext::set_output_datum(int i, Datum d) {
  if (!d.is_tensor()) return internal_error(where() + ": a bound call set output " + std::to_string(i) + " to a non-tensor");
  return set_output(i, d.as_tensor());
}

Result<std::vector<Datum>> FrozenStepContext::run_subgraph(const ir::Graph& graph, std::vector<Datum> inputs) {
  (void)inputs;
  return unimplemented(where() + ": a bound call cannot run subgraph '" + graph.name() + "'");
}

}  // namespace sdx::backend
