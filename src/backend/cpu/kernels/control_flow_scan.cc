// Scan: iterates `body` over slices of the scan inputs along their scan axes,
// threading state variables and stacking per-iteration scan outputs.
//   body(state..., scan_slices...) -> (state..., scan_output_slices...)
// Opset 9+: no batch axis; scan axes and directions per input/output.
// Opset 8: a leading batch axis on every input and output (optional sequence_lens
// first input), scanning along axis 1 of each batch item.
#include "backend/cpu/tensor/tensor_copy.h"
#include "backend/kernel_registry.h"
#include "core/shape.h"

namespace sdx::cpu {
namespace {

struct ScanResult {
  std::vector<Datum> states;
  std::vector<Tensor> outputs;  // stacked along a new leading axis
};

// Element-slice `index` along axis 0 of x (a copy).
Result<Tensor> slice_leading(const Tensor& x, int64_t index) {
  std::vector<int64_t> dims(x.shape().dims().begin() + 1, x.shape().dims().end());
  Shape s(dims);
  SDX_ASSIGN_OR_RETURN(Tensor slice, Tensor::allocate(x.dtype(), s), "");
  copy_elements(x, index * s.numel(), slice, 0, s.numel());
  return slice;
}

// The shared iteration: scan inputs arrive with their scan axis first.
Result<ScanResult> scan_loop(backend::KernelContext& ctx, const ir::Graph& body, std::vector<Datum> states,
                             const std::vector<Tensor>& inputs, const std::vector<int64_t>& in_dirs,
                             const std::vector<int64_t>& out_dirs, int64_t length) {
  const size_t num_state = states.size();
  const size_t num_out = out_dirs.size();
  std::vector<std::vector<Tensor>> outs(num_out);
  for (int64_t it = 0; it < length; ++it) {
    std::vector<Datum> in = states;
    for (size_t j = 0; j < inputs.size(); ++j) {
      SDX_ASSIGN_OR_RETURN(Tensor slice, slice_leading(inputs[j], in_dirs[j] ? length - 1 - it : it), "");
      in.push_back(Datum::tensor(std::move(slice)));
    }
    SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, ctx.run_subgraph(body, std::move(in)), "iteration " + std::to_string(it));
    for (size_t i = 0; i < num_state; ++i) states[i] = std::move(out[i]);
    for (size_t k = 0; k < num_out; ++k) {
      if (!out[num_state + k].is_tensor()) return invalid_argument("scan outputs must be tensors");
      outs[k].push_back(out[num_state + k].as_tensor());
    }
  }
  ScanResult r{std::move(states), {}};
  for (size_t k = 0; k < num_out; ++k) {
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    const ir::Value* bo = body.outputs()[num_state + k];
    SDX_ASSIGN_OR_RETURN(Tensor stacked, stack_tensors(outs[k], bo->type().elem == DType::kUndefined ? DType::kFloat32 : bo->type().elem), "");
    r.outputs.push_back(std::move(stacked));
  }
  return r;
}

class ScanKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* b = node.attr("body");
    if (!b || !b->g) return invalid_argument("Scan needs a graph attribute 'body'");
    body_ = b->g.get();
    opset8_ = node.opset() < 9;
    num_scan_inputs_ = static_cast<int>(node.attr_int("num_scan_inputs", -1));
    if (num_scan_inputs_ < 1) return invalid_argument("attribute num_scan_inputs must be >= 1");
    first_input_ = opset8_ ? 1 : 0;  // opset 8 starts with the optional sequence_lens
    num_state_ = node.num_inputs() - first_input_ - num_scan_inputs_;
    if (num_state_ < 0) return invalid_argument("num_scan_inputs exceeds the number of inputs");
    num_scan_outputs_ = node.num_outputs() - num_state_;
    if (num_scan_outputs_ < 0) return invalid_argument("fewer outputs than state variables");
    if (static_cast<int>(body_->inputs().size()) != num_state_ + num_scan_inputs_ ||
        static_cast<int>(body_->outputs().size()) != node.num_outputs())
      return invalid_argument("body signature does not match the node's inputs and outputs");
    const auto zeros_in = std::vector<int64_t>(static_cast<size_t>(num_scan_inputs_), 0);
    const auto zeros_out = std::vector<int64_t>(static_cast<size_t>(num_scan_outputs_), 0);
    in_dirs_ = node.attr_ints(opset8_ ? "directions" : "scan_input_directions", zeros_in);
    in_axes_ = opset8_ ? zeros_in : node.attr_ints("scan_input_axes", zeros_in);
    out_axes_ = opset8_ ? zeros_out : node.attr_ints("scan_output_axes", zeros_out);
    out_dirs_ = opset8_ ? zeros_out : node.attr_ints("scan_output_directions", zeros_out);
    if (static_cast<int>(in_axes_.size()) != num_scan_inputs_ || static_cast<int>(in_dirs_.size()) != num_scan_inputs_ ||
        static_cast<int>(out_axes_.size()) != num_scan_outputs_ || static_cast<int>(out_dirs_.size()) != num_scan_outputs_)
      return invalid_argument("scan axis/direction attributes have the wrong length");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override { return opset8_ ? run_batched(ctx) : run_unbatched(ctx); }

 private:
  Status run_unbatched(backend::KernelContext& ctx) const {
    std::vector<Tensor> inputs;
    int64_t length = -1;
    for (int j = 0; j < num_scan_inputs_; ++j) {
      const Tensor& x = ctx.input(num_state_ + j);
      SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(in_axes_[static_cast<size_t>(j)], x.rank()), "scan_input_axes");
      SDX_ASSIGN_OR_RETURN(Tensor moved, move_axis(x, axis, 0), "");
      if (length >= 0 && moved.shape()[0] != length) return invalid_argument("scan inputs have different lengths along their scan axes");
      length = moved.shape()[0];
      inputs.push_back(std::move(moved));
    }
    std::vector<Datum> states;
    for (int i = 0; i < num_state_; ++i) states.push_back(ctx.input_datum(i));
    SDX_ASSIGN_OR_RETURN(ScanResult r, scan_loop(ctx, *body_, std::move(states), inputs, in_dirs_, out_dirs_, length), "");
    for (int i = 0; i < num_state_; ++i) SDX_RETURN_IF_ERROR(ctx.set_output_datum(i, r.states[static_cast<size_t>(i)]), "");
    for (int k = 0; k < num_scan_outputs_; ++k) {
      Tensor& stacked = r.outputs[static_cast<size_t>(k)];
      SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(out_axes_[static_cast<size_t>(k)], stacked.rank()), "scan_output_axes");
      SDX_ASSIGN_OR_RETURN(Tensor placed, move_axis(stacked, 0, axis), "");
      SDX_RETURN_IF_ERROR(ctx.set_output(num_state_ + k, std::move(placed)), "");
    }
    return Status::ok();
  }

  Status run_batched(backend::KernelContext& ctx) const {
    if (ctx.has_input(0)) return unimplemented("Scan-8 with sequence_lens is not supported");
    const int64_t batch = ctx.input(first_input_).rank() > 0 ? ctx.input(first_input_).shape()[0] : -1;
    for (int i = first_input_; i < ctx.num_inputs(); ++i)
      if (ctx.input(i).rank() < 1 || ctx.input(i).shape()[0] != batch)
        return invalid_argument("every Scan-8 input needs the same leading batch dimension");
    std::vector<std::vector<Datum>> states(static_cast<size_t>(num_state_));
    std::vector<std::vector<Tensor>> outs(static_cast<size_t>(num_scan_outputs_));
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Datum> st;
      for (int i = 0; i < num_state_; ++i) {
        SDX_ASSIGN_OR_RETURN(Tensor s, slice_leading(ctx.input(first_input_ + i), b), "");
        st.push_back(Datum::tensor(std::move(s)));
      }
      std::vector<Tensor> inputs;
      int64_t length = -1;
      for (int j = 0; j < num_scan_inputs_; ++j) {
        SDX_ASSIGN_OR_RETURN(Tensor x, slice_leading(ctx.input(first_input_ + num_state_ + j), b), "");
        if (x.rank() < 1) return invalid_argument("Scan-8 scan inputs need a sequence axis after the batch axis");
        if (length >= 0 && x.shape()[0] != length) return invalid_argument("scan inputs have different sequence lengths");
        length = x.shape()[0];
        inputs.push_back(std::move(x));
      }
      SDX_ASSIGN_OR_RETURN(ScanResult r, scan_loop(ctx, *body_, std::move(st), inputs, in_dirs_, out_dirs_, length), "batch " + std::to_string(b));
      for (int i = 0; i < num_state_; ++i) states[static_cast<size_t>(i)].push_back(r.states[static_cast<size_t>(i)]);
      for (int k = 0; k < num_scan_outputs_; ++k) outs[static_cast<size_t>(k)].push_back(r.outputs[static_cast<size_t>(k)]);
    }
    for (int i = 0; i < num_state_; ++i) {
      std::vector<Tensor> items;
      for (const Datum& d : states[static_cast<size_t>(i)]) items.push_back(d.as_tensor());
      SDX_ASSIGN_OR_RETURN(Tensor stacked, stack_tensors(items, ctx.input(first_input_ + i).dtype()), "");
      SDX_RETURN_IF_ERROR(ctx.set_output(i, std::move(stacked)), "");
    }
    for (int k = 0; k < num_scan_outputs_; ++k) {
      const ir::Value* bo = body_->outputs()[static_cast<size_t>(num_state_ + k)];
      SDX_ASSIGN_OR_RETURN(Tensor stacked, stack_tensors(outs[static_cast<size_t>(k)], bo->type().elem), "");
      SDX_RETURN_IF_ERROR(ctx.set_output(num_state_ + k, std::move(stacked)), "");
    }
    return Status::ok();
  }

  const ir::Graph* body_ = nullptr;
  bool opset8_ = false;
  int first_input_ = 0, num_scan_inputs_ = 0, num_state_ = 0, num_scan_outputs_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

const backend::KernelRegistrar kScan({"Scan", "", 8, backend::kAnyOpset, backend::kernel_factory<ScanKernel>()});

}  // namespace
}  // namespace sdx::cpu
