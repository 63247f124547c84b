// Session's calls on Datums (session.h): named feeds, which may hold sequences, optionals or overridden
// initializers, and a subgraph body's inputs (BodySessionCompiler). Plain tensors for every input take
// the planned path on a pooled context (run_pooled); anything else runs slot by slot in a fresh frame
// (run_unplanned). The pointer-and-shape entry point, run(Context&, TensorArg*, ...), is in session.cc.
#include "runtime/session.h"

#include "runtime/context.h"
#include "runtime/input_check.h"
#include "runtime/shape_buckets.h"

namespace sdx::runtime {

namespace {

// A result the caller keeps: frozen memory (reused by the next run) and the caller's own input buffers
// (borrowed) are copied.
Status own(Datum& d) {
  if (d.is_tensor() && d.as_tensor().buffer() && d.as_tensor().buffer()->borrowed()) {
    SDX_ASSIGN_OR_RETURN(Tensor copy, d.as_tensor().clone(), "output");
    d = Datum::tensor(std::move(copy));
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<Datum>> Session::run_pooled(const std::vector<const Datum*>& by_input, const std::vector<int>& outputs,
                                               ExecutionReport* report) const {
  if (ShapeBuckets* buckets = active_buckets_.load(std::memory_order_acquire)) {  // pairs with its release store
    SDX_ASSIGN_OR_RETURN(ShapeBuckets::Call call, buckets->pad(by_input), "");
    if (call.padded()) {
      std::vector<const Datum*> padded;
      for (const Datum& d : call.feeds) padded.push_back(&d);
      SDX_ASSIGN_OR_RETURN(std::vector<Datum> sliced, run_planned(padded, outputs, report, &call), "");
      const std::vector<int>& positions = outputs.empty() ? all_outputs_ : outputs;
      if (report)
        for (int64_t p : call.pads) report->bucket_padding += p;
      if (!buckets->unchecked()) return sliced;
      // The first padded call: the exact shapes too, and padding stays only if they agree.
      SDX_ASSIGN_OR_RETURN(std::vector<Datum> exact, run_planned(by_input, outputs, nullptr), "");
      if (buckets->verify(sliced, exact, positions)) return sliced;
      if (report) report->bucket_padding = 0;
      return exact;
    }
  }
  return run_planned(by_input, outputs, report);
}

Result<std::vector<Datum>> Session::run_planned(const std::vector<const Datum*>& by_input, const std::vector<int>& outputs,
                                                ExecutionReport* report, const ShapeBuckets::Call* padded) const {
  std::vector<TensorArg> args;
  for (const Datum* d : by_input) {
    const Tensor& t = d->as_tensor();
    args.push_back({t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()});
  }
  std::unique_ptr<Context> ctx = pool_.acquire();
  Status s = run(*ctx, args.data(), args.size(), outputs, report);
  std::vector<Datum> out;
  for (size_t i = 0; s.is_ok() && i < ctx->num_outputs(); ++i) {
    out.push_back(ctx->output(i));
    if (!padded) s = own(out.back());
  }
  if (s.is_ok() && padded) {  // sliced back into outputs of their own while ctx still holds the padded ones
    Result<std::vector<Datum>> sliced = shape_buckets()->unpad(out, outputs.empty() ? all_outputs_ : outputs, *padded);
    s = sliced.is_ok() ? Status::ok() : sliced.status();
    if (s.is_ok()) out = std::move(sliced).value();
    for (size_t i = 0; s.is_ok() && i < out.size(); ++i) s = own(out[i]);  // outputs unpad left as they were
  }
  pool_.release(std::move(ctx));
  if (!s.is_ok()) return s;
  return out;
}

Result<std::vector<Datum>> Session::run_unplanned(const BoundFeeds& feeds, const std::vector<int>& outputs,
                                                  StepObserver* observer, ExecutionReport* report) const {
  const ir::Graph& g = *model_.graph;
  Frame frame(&g, nullptr);
  frame.observer = observer;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (feeds.by_input[i]) frame.slots[static_cast<size_t>(input_values_[i]->index())] = *feeds.by_input[i];
  for (const auto& [v, d] : feeds.overrides) frame.slots[static_cast<size_t>(v->index())] = *d;
  const std::shared_ptr<const plan::Plan> plan = plan_for(outputs);
  SDX_RETURN_IF_ERROR(graph_executor_.run(frame, *plan), "");
  std::vector<Datum> out;
  for (int o : outputs) {
    out.push_back(frame.lookup(g.outputs()[static_cast<size_t>(o)]));
    SDX_RETURN_IF_ERROR(own(out.back()), "");
  }
  if (report) {
    *report = ExecutionReport();
    executor_->fill_mode(*report);
    report->slot_count = static_cast<int32_t>(plan->slots().size());
    report->fallback_reason = observer ? "observed run" : "inputs other than plain tensors";
  }
  return out;
}

Result<std::vector<Datum>> Session::run_inputs(const std::vector<const Datum*>& by_input, ExecutionReport* report) const {
  cpu::ScopedThreadPool bind_threads(pool());
  if (by_input.size() != inputs_.size())
    return invalid_argument("the model takes " + std::to_string(inputs_.size()) + " inputs but " +
                            std::to_string(by_input.size()) + " were given");
  bool plannable = true;
  for (size_t i = 0; i < by_input.size(); ++i)
    if (!by_input[i]->is_tensor() || inputs_[i].type.kind != ir::TypeInfo::Kind::kTensor) plannable = false;
  if (plannable) return run_pooled(by_input, {}, report);
  for (size_t i = 0; i < by_input.size(); ++i) SDX_RETURN_IF_ERROR(check_input(inputs_[i], *by_input[i]), "");
  BoundFeeds bound;  // the slot-by-slot path's form (a copy of the pointers)
  bound.by_input = by_input;
  bound.plannable = false;
  return run_unplanned(bound, all_outputs_, nullptr, report);
}

Result<std::vector<Datum>> Session::run(const std::vector<std::pair<std::string, Datum>>& feeds,
                                        const std::vector<std::string>& output_names, StepObserver* observer,
                                        ExecutionReport* report) const {
  cpu::ScopedThreadPool bind_threads(pool());
  SDX_ASSIGN_OR_RETURN(std::vector<int> outs, output_positions(outputs_, output_names), "");
  SDX_ASSIGN_OR_RETURN(BoundFeeds bound, bind_feeds(*model_.graph, inputs_, feeds), "");
  // Plain tensor feeds for every input go through the planned path; anything else (an observer,
  // sequences, optionals, overridden initializers) runs slot by slot in a fresh frame.
  if (bound.plannable && !observer) return run_pooled(bound.by_input, outs, report);
  return run_unplanned(bound, outs.empty() ? all_outputs_ : outs, observer, report);
}

}  // namespace sdx::runtime
