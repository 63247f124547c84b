// FrozenStepContext: a KernelContext over one bound step's frozen buffers, for a kernel whose bound form
// (Kernel::prepare) runs the same code as its run(), with what prepare() made once (pre-transposed
// weights, sized scratch). Inputs are the step's frozen input tensors (their values change from call to
// call, their addresses do not); allocate_output hands out the frozen output of exactly the asked type
// and shape and fails otherwise, so the bound call writes in place and allocates nothing.
//
//   auto ctx = std::make_shared<backend::FrozenStepContext>(prepare_ctx);
//   return backend::bind_call([this, ctx] { return compute(*ctx); });
#pragma once

#include <string>
#include <vector>

#include "backend/kernel.h"

namespace sdx::backend {

class FrozenStepContext final : public KernelContext {
 public:
  // Snapshots p's inputs and wanted outputs (tensors share their buffers).
  explicit FrozenStepContext(const PrepareContext& p);

  const ir::Node& node() const override { return node_; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const override;
  const Tensor& input(int i) const override { return input_datum(i).as_tensor(); }
  const Datum& input_datum(int i) const override;
  int num_outputs() const override { return static_cast<int>(outputs_.size()); }
  bool wants_output(int i) const override;
  Result<Tensor> allocate_output(int i, DType dtype, const Shape& shape) override;
  // The frozen output's data after allocate_output's check, without copying the Tensor (a copy
  // allocates its shape): what a bound call that must not allocate writes through.
  Result<void*> output_data(int i, DType dtype, const Shape& shape) const;
  // Copies t into the frozen output (same type and shape), unless it is that tensor already.
  Status set_output(int i, Tensor t) override;
  Status set_output_datum(int i, Datum d) override;
  Result<std::vector<Datum>> run_subgraph(const ir::Graph& graph, std::vector<Datum> inputs) override;

 private:
  Status check_output(int i, DType dtype, const Shape& shape) const;

  const ir::Node& node_;
  std::vector<Datum> inputs_;    // empty Datum: absent
  std::vector<Tensor> outputs_;  // undefined: not wanted
};

}  // namespace sdx::backend
