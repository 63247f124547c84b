// Loop: runs `body` while the trip count and condition allow, threading
// loop-carried values through iterations and stacking scan outputs.
//   body(iter_num: int64 scalar, cond: bool scalar, carried...) -> (cond, carried..., scan_outputs...)
#include "backend/cpu/tensor/tensor_copy.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// A hard cap so a model without a trip count whose condition never turns false fails
// with an error instead of hanging the process (the executor prefixes the node's name; reaching the cap
// takes about 13 s with a trivial body). Not yet an option: issue 20's max_loop_iterations.
constexpr int64_t kMaxIterationsWithoutTripCount = int64_t{1} << 24;

class LoopKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* b = node.attr("body");
    if (!b || !b->g) return invalid_argument("Loop needs a graph attribute 'body'");
    body_ = b->g.get();
    const int carried = node.num_inputs() - 2;
    if (carried < 0) return invalid_argument("Loop needs at least the inputs M and cond");
    if (static_cast<int>(body_->inputs().size()) != carried + 2)
      return invalid_argument("body takes " + std::to_string(body_->inputs().size()) + " inputs; expected " +
                              std::to_string(carried + 2) + " (iteration, condition and loop-carried values)");
    if (static_cast<int>(body_->outputs().size()) < carried + 1)
      return invalid_argument("body must produce the condition and " + std::to_string(carried) + " loop-carried values");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    int64_t trip = -1;
    if (ctx.has_input(0)) {
      const Tensor& m = ctx.input(0);
      if (m.numel() != 1 || m.dtype() != DType::kInt64) return invalid_argument("M must be an int64 scalar, got " + m.type_string());
      trip = *m.data<int64_t>();
    }
    bool cond = true;
    if (ctx.has_input(1)) {
      const Tensor& c = ctx.input(1);
      if (c.numel() != 1 || c.dtype() != DType::kBool) return invalid_argument("cond must be a bool scalar, got " + c.type_string());
      cond = *c.data<uint8_t>() != 0;
    }
    const int carried = ctx.num_inputs() - 2;
    const int scans = static_cast<int>(body_->outputs().size()) - 1 - carried;
    std::vector<Datum> state;
    for (int i = 0; i < carried; ++i) state.push_back(ctx.input_datum(2 + i));
    std::vector<std::vector<Tensor>> scan_items(static_cast<size_t>(scans));
    std::vector<std::vector<Datum>> scan_seq_items(static_cast<size_t>(scans));
    int64_t it = 0;
    for (; (trip < 0 || it < trip) && cond; ++it) {
      if (trip < 0 && it >= kMaxIterationsWithoutTripCount)
        return resource_exhausted("Loop ran " + std::to_string(it) +
                                  " iterations without its condition turning false (no trip count; the limit is " +
                                  std::to_string(kMaxIterationsWithoutTripCount) + " iterations)");
      std::vector<Datum> in;
      in.reserve(static_cast<size_t>(carried) + 2);
      SDX_ASSIGN_OR_RETURN(Tensor iter, Tensor::allocate(DType::kInt64, Shape{}), "");
      *iter.data<int64_t>() = it;
      SDX_ASSIGN_OR_RETURN(Tensor c, Tensor::allocate(DType::kBool, Shape{}), "");
      *c.data<uint8_t>() = cond ? 1 : 0;
      in.push_back(Datum::tensor(iter));
      in.push_back(Datum::tensor(c));
      for (const Datum& d : state) in.push_back(d);
      SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, ctx.run_subgraph(*body_, std::move(in)), "iteration " + std::to_string(it));
      const Datum& nc = out[0];
      if (!nc.is_tensor() || nc.as_tensor().numel() != 1 || nc.as_tensor().dtype() != DType::kBool)
        return invalid_argument("body's condition output must be a bool scalar");
      cond = *nc.as_tensor().data<uint8_t>() != 0;
      for (int i = 0; i < carried; ++i) state[static_cast<size_t>(i)] = std::move(out[static_cast<size_t>(1 + i)]);
      for (int i = 0; i < scans; ++i) {
        Datum& d = out[static_cast<size_t>(1 + carried + i)];
        if (!d.is_tensor()) return unimplemented("Loop scan outputs must be tensors");
        scan_items[static_cast<size_t>(i)].push_back(d.as_tensor());
      }
    }
    for (int i = 0; i < carried; ++i) SDX_RETURN_IF_ERROR(ctx.set_output_datum(i, state[static_cast<size_t>(i)]), "");
    for (int i = 0; i < scans; ++i) {
      const ir::Value* bo = body_->outputs()[static_cast<size_t>(1 + carried + i)];
      DType elem = bo->type().elem == DType::kUndefined ? DType::kFloat32 : bo->type().elem;
      SDX_ASSIGN_OR_RETURN(Tensor stacked, stack_tensors(scan_items[static_cast<size_t>(i)], elem), "scan output " + std::to_string(i));
      SDX_RETURN_IF_ERROR(ctx.set_output(carried + i, std::move(stacked)), "");
    }
    return Status::ok();
  }

 private:
  const ir::Graph* body_ = nullptr;
};

const backend::KernelRegistrar kLoop({"Loop", "", 1, backend::kAnyOpset, backend::kernel_factory<LoopKernel>()});

}  // namespace
}  // namespace sdx::cpu
