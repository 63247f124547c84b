// Scan (opset 9+): iterates `body` over slices of the scan inputs along their
// scan axes, threading state variables and stacking per-iteration scan outputs.
//   body(state..., scan_slices...) -> (state..., scan_output_slices...)
#include "backend/cpu/tensor_copy.h"
#include "backend/kernel_registry.h"
#include "core/shape.h"

namespace sdx::cpu {
namespace {

class ScanKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* b = node.attr("body");
    if (!b || !b->g) return invalid_argument("Scan needs a graph attribute 'body'");
    body_ = b->g.get();
    num_scan_inputs_ = static_cast<int>(node.attr_int("num_scan_inputs", -1));
    if (num_scan_inputs_ < 1) return invalid_argument("attribute num_scan_inputs must be >= 1");
    if (node.opset() < 9) return unimplemented("Scan before opset 9 (with sequence_lens) is not supported");
    num_state_ = node.num_inputs() - num_scan_inputs_;
    if (num_state_ < 0) return invalid_argument("num_scan_inputs exceeds the number of inputs");
    num_scan_outputs_ = node.num_outputs() - num_state_;
    if (num_scan_outputs_ < 0) return invalid_argument("fewer outputs than state variables");
    if (static_cast<int>(body_->inputs().size()) != node.num_inputs() ||
        static_cast<int>(body_->outputs().size()) != node.num_outputs())
      return invalid_argument("body signature does not match the node's inputs and outputs");
    in_axes_ = node.attr_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(num_scan_inputs_), 0));
    in_dirs_ = node.attr_ints("scan_input_directions", std::vector<int64_t>(static_cast<size_t>(num_scan_inputs_), 0));
    out_axes_ = node.attr_ints("scan_output_axes", std::vector<int64_t>(static_cast<size_t>(num_scan_outputs_), 0));
    out_dirs_ = node.attr_ints("scan_output_directions", std::vector<int64_t>(static_cast<size_t>(num_scan_outputs_), 0));
    if (static_cast<int>(in_axes_.size()) != num_scan_inputs_ || static_cast<int>(in_dirs_.size()) != num_scan_inputs_ ||
        static_cast<int>(out_axes_.size()) != num_scan_outputs_ || static_cast<int>(out_dirs_.size()) != num_scan_outputs_)
      return invalid_argument("scan axis/direction attributes have the wrong length");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) override {
    // Bring every scan input's scan axis to the front so iteration i is a contiguous block.
    std::vector<Tensor> inputs;
    int64_t length = -1;
    for (int j = 0; j < num_scan_inputs_; ++j) {
      const Tensor& x = ctx.input(num_state_ + j);
      SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(in_axes_[static_cast<size_t>(j)], x.rank()), "scan_input_axes");
      SDX_ASSIGN_OR_RETURN(Tensor moved, move_axis(x, axis, 0), "");
      if (length >= 0 && moved.shape()[0] != length)
        return invalid_argument("scan inputs have different lengths along their scan axes");
      length = moved.shape()[0];
      inputs.push_back(std::move(moved));
    }
    std::vector<Datum> state;
    for (int i = 0; i < num_state_; ++i) state.push_back(ctx.input_datum(i));
    std::vector<std::vector<Tensor>> outs(static_cast<size_t>(num_scan_outputs_));
    for (int64_t it = 0; it < length; ++it) {
      std::vector<Datum> in = state;
      for (int j = 0; j < num_scan_inputs_; ++j) {
        const Tensor& x = inputs[static_cast<size_t>(j)];
        int64_t idx = in_dirs_[static_cast<size_t>(j)] ? length - 1 - it : it;
        std::vector<int64_t> dims(x.shape().dims().begin() + 1, x.shape().dims().end());
        Shape s(dims);
        SDX_ASSIGN_OR_RETURN(Tensor slice, Tensor::allocate(x.dtype(), s), "");
        copy_elements(x, idx * s.numel(), slice, 0, s.numel());
        in.push_back(Datum::tensor(std::move(slice)));
      }
      SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, ctx.run_subgraph(*body_, std::move(in)), "iteration " + std::to_string(it));
      for (int i = 0; i < num_state_; ++i) state[static_cast<size_t>(i)] = std::move(out[static_cast<size_t>(i)]);
      for (int k = 0; k < num_scan_outputs_; ++k) outs[static_cast<size_t>(k)].push_back(out[static_cast<size_t>(num_state_ + k)].as_tensor());
    }
    for (int i = 0; i < num_state_; ++i) SDX_RETURN_IF_ERROR(ctx.set_output_datum(i, state[static_cast<size_t>(i)]), "");
    for (int k = 0; k < num_scan_outputs_; ++k) {
      auto& items = outs[static_cast<size_t>(k)];
      if (out_dirs_[static_cast<size_t>(k)]) std::reverse(items.begin(), items.end());
      const ir::Value* bo = body_->outputs()[static_cast<size_t>(num_state_ + k)];
      SDX_ASSIGN_OR_RETURN(Tensor stacked, stack_tensors(items, bo->type().elem == DType::kUndefined ? DType::kFloat32 : bo->type().elem), "");
      SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(out_axes_[static_cast<size_t>(k)], stacked.rank()), "scan_output_axes");
      SDX_ASSIGN_OR_RETURN(Tensor placed, move_axis(stacked, 0, axis), "");
      SDX_RETURN_IF_ERROR(ctx.set_output(num_state_ + k, std::move(placed)), "");
    }
    return Status::ok();
  }

 private:
  const ir::Graph* body_ = nullptr;
  int num_scan_inputs_ = 0, num_state_ = 0, num_scan_outputs_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

const backend::KernelRegistrar kScan({"Scan", "", 9, backend::kAnyOpset, backend::kernel_factory<ScanKernel>()});

}  // namespace
}  // namespace sdx::cpu
