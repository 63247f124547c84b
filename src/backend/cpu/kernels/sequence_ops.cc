// Sequence operators: SequenceEmpty/Construct/At/Insert/Erase/Length,
// ConcatFromSequence, SplitToSequence, SequenceMap.
#include "backend/cpu/tensor/tensor_copy.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "core/shape.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

Result<size_t> seq_position(const Tensor& pos, size_t size, bool allow_end) {
  SDX_ASSIGN_OR_RETURN(int64_t p, read_int64_scalar(pos, "position", IntTypes::kInt32Or64), "");
  const int64_t n = static_cast<int64_t>(size);
  if (p < -n || p > (allow_end ? n : n - 1))
    return out_of_range("position " + std::to_string(p) + " is out of range for a sequence of length " + std::to_string(n));
  return static_cast<size_t>(p < 0 ? p + n : p);
}

Status check_seq(const KernelContext& ctx, int i) {
  if (!ctx.input_datum(i).is_sequence()) return invalid_argument("input " + std::to_string(i) + " must be a sequence");
  return Status::ok();
}

Status sequence_empty(KernelContext& ctx) {
  auto dt = dtype_from_onnx(static_cast<int>(ctx.node().attr_int("dtype", 1)));
  if (!dt) return invalid_argument("attribute dtype is not a valid element type");
  return ctx.set_output_datum(0, Datum::sequence({}, *dt));
}

Status sequence_construct(KernelContext& ctx) {
  std::vector<Tensor> items;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.input_datum(i).is_tensor()) return invalid_argument("SequenceConstruct inputs must be tensors");
    items.push_back(ctx.input(i));
    if (items.back().dtype() != items[0].dtype()) return invalid_argument("SequenceConstruct inputs must share one element type");
  }
  DType elem = items.empty() ? DType::kFloat32 : items[0].dtype();
  return ctx.set_output_datum(0, Datum::sequence(std::move(items), elem));
}

Status sequence_at(KernelContext& ctx) {
  SDX_RETURN_IF_ERROR(check_seq(ctx, 0), "");
  const auto& seq = ctx.input_datum(0).as_sequence();
  SDX_ASSIGN_OR_RETURN(size_t p, seq_position(ctx.input(1), seq.size(), false), "");
  return ctx.set_output(0, seq[p]);
}

Status sequence_insert(KernelContext& ctx) {
  SDX_RETURN_IF_ERROR(check_seq(ctx, 0), "");
  const Datum& d = ctx.input_datum(0);
  std::vector<Tensor> items = d.as_sequence();
  const Tensor& t = ctx.input(1);
  if (!items.empty() && t.dtype() != items[0].dtype())
    return invalid_argument(std::string("cannot insert ") + dtype_name(t.dtype()) + " into a sequence of " + dtype_name(items[0].dtype()));
  size_t p = items.size();
  if (ctx.has_input(2)) {
    SDX_ASSIGN_OR_RETURN(p, seq_position(ctx.input(2), items.size(), true), "");
  }
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(p), t);
  return ctx.set_output_datum(0, Datum::sequence(std::move(items), t.dtype()));
}

Status sequence_erase(KernelContext& ctx) {
  SDX_RETURN_IF_ERROR(check_seq(ctx, 0), "");
  const Datum& d = ctx.input_datum(0);
  std::vector<Tensor> items = d.as_sequence();
  if (items.empty()) return out_of_range("cannot erase from an empty sequence");
  size_t p = items.size() - 1;
  if (ctx.has_input(1)) {
    SDX_ASSIGN_OR_RETURN(p, seq_position(ctx.input(1), items.size(), false), "");
  }
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(p));
  return ctx.set_output_datum(0, Datum::sequence(std::move(items), d.sequence_elem_type()));
}

Status sequence_length(KernelContext& ctx) {
  SDX_RETURN_IF_ERROR(check_seq(ctx, 0), "");
  SDX_ASSIGN_OR_RETURN(Tensor out, ctx.allocate_output(0, DType::kInt64, Shape{}), "");
  *out.data<int64_t>() = static_cast<int64_t>(ctx.input_datum(0).as_sequence().size());
  return Status::ok();
}

Status concat_from_sequence(KernelContext& ctx) {
  SDX_RETURN_IF_ERROR(check_seq(ctx, 0), "");
  const auto& items = ctx.input_datum(0).as_sequence();
  if (items.empty()) return invalid_argument("ConcatFromSequence needs a non-empty sequence");
  const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
  const int rank = items[0].rank();
  SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node().attr_int("axis", 0), new_axis ? rank + 1 : rank), "axis");
  std::vector<Tensor> parts;
  for (const Tensor& t : items) {
    if (t.rank() != rank || t.dtype() != items[0].dtype()) return invalid_argument("sequence items differ in rank or type");
    if (new_axis) {
      std::vector<int64_t> d = t.shape().dims();
      d.insert(d.begin() + axis, 1);
      parts.push_back(t.reshaped(Shape(d)));
    } else {
      parts.push_back(t);
    }
  }
  std::vector<int64_t> out_dims = parts[0].shape().dims();
  out_dims[static_cast<size_t>(axis)] = 0;
  for (const Tensor& t : parts) {
    for (int i = 0; i < t.rank(); ++i)
      if (i != axis && t.shape()[i] != parts[0].shape()[i]) return invalid_argument("sequence items differ outside the concat axis");
    out_dims[static_cast<size_t>(axis)] += t.shape()[axis];
  }
  SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "");
  SDX_ASSIGN_OR_RETURN(Tensor out, ctx.allocate_output(0, parts[0].dtype(), out_shape), "");
  const int64_t outer = out_shape.size_between(0, axis);
  const int64_t inner = out_shape.size_between(axis + 1, out_shape.rank());
  int64_t offset = 0;
  for (const Tensor& t : parts) {
    const int64_t block = t.shape()[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) copy_elements(t, o * block, out, o * out_dims[static_cast<size_t>(axis)] * inner + offset, block);
    offset += block;
  }
  return Status::ok();
}

Status split_to_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node().attr_int("axis", 0), x.rank()), "axis");
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  const int64_t len = x.shape()[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (ctx.has_input(1)) {
    const Tensor& s = ctx.input(1);
    if (s.dtype() != DType::kInt64 && s.dtype() != DType::kInt32) return invalid_argument("split must be int32 or int64");
    auto get = [&](int64_t i) { return s.dtype() == DType::kInt64 ? s.data<int64_t>()[i] : int64_t{s.data<int32_t>()[i]}; };
    if (s.rank() == 0) {
      int64_t chunk = get(0);
      if (chunk <= 0) return invalid_argument("split size must be positive");
      for (int64_t done = 0; done < len; done += chunk) sizes.push_back(std::min(chunk, len - done));
    } else {
      int64_t total = 0;
      for (int64_t i = 0; i < s.numel(); ++i) {
        if (get(i) < 0) return invalid_argument("split sizes must be non-negative");
        sizes.push_back(get(i));
        total += get(i);
      }
      if (total != len) return invalid_argument("split sizes sum to " + std::to_string(total) + " but the axis has " + std::to_string(len));
    }
  } else {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = !keepdims;
  }
  const int64_t outer = x.shape().size_between(0, axis);
  const int64_t inner = x.shape().size_between(axis + 1, x.rank());
  std::vector<Tensor> items;
  int64_t start = 0;
  for (int64_t sz : sizes) {
    std::vector<int64_t> dims = x.shape().dims();
    dims[static_cast<size_t>(axis)] = sz;
    SDX_ASSIGN_OR_RETURN(Tensor part, Tensor::allocate(x.dtype(), Shape(dims)), "");
    for (int64_t o = 0; o < outer; ++o) copy_elements(x, (o * len + start) * inner, part, o * sz * inner, sz * inner);
    if (squeeze) {
      dims.erase(dims.begin() + axis);
      part = part.reshaped(Shape(dims));
    }
    items.push_back(std::move(part));
    start += sz;
  }
  return ctx.set_output_datum(0, Datum::sequence(std::move(items), x.dtype()));
}

class SequenceMapKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* b = node.attr("body");
    if (!b || !b->g) return invalid_argument("SequenceMap needs a graph attribute 'body'");
    body_ = b->g.get();
    if (static_cast<int>(body_->inputs().size()) != node.num_inputs() || static_cast<int>(body_->outputs().size()) != node.num_outputs())
      return invalid_argument("body signature does not match the node");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    SDX_RETURN_IF_ERROR(check_seq(ctx, 0), "");
    const size_t n = ctx.input_datum(0).as_sequence().size();
    for (int i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.input_datum(i).is_sequence() && ctx.input_datum(i).as_sequence().size() != n)
        return invalid_argument("all sequence inputs must have the same length");
    std::vector<std::vector<Tensor>> outs(static_cast<size_t>(ctx.num_outputs()));
    for (size_t k = 0; k < n; ++k) {
      std::vector<Datum> in;
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Datum& d = ctx.input_datum(i);
        in.push_back(d.is_sequence() ? Datum::tensor(d.as_sequence()[k]) : d);
      }
      SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, ctx.run_subgraph(*body_, std::move(in)), "item " + std::to_string(k));
      for (size_t j = 0; j < out.size(); ++j) outs[j].push_back(out[j].as_tensor());
    }
    for (int j = 0; j < ctx.num_outputs(); ++j) {
      DType elem = body_->outputs()[static_cast<size_t>(j)]->type().elem;
      if (!outs[static_cast<size_t>(j)].empty()) elem = outs[static_cast<size_t>(j)][0].dtype();
      SDX_RETURN_IF_ERROR(ctx.set_output_datum(j, Datum::sequence(std::move(outs[static_cast<size_t>(j)]), elem)), "");
    }
    return Status::ok();
  }

 private:
  const ir::Graph* body_ = nullptr;
};

using backend::function_kernel;
using backend::KernelRegistrar;
const KernelRegistrar kSequenceEmpty({"SequenceEmpty", "", 11, backend::kAnyOpset, function_kernel(sequence_empty)});
const KernelRegistrar kSequenceConstruct({"SequenceConstruct", "", 11, backend::kAnyOpset, function_kernel(sequence_construct)});
const KernelRegistrar kSequenceAt({"SequenceAt", "", 11, backend::kAnyOpset, function_kernel(sequence_at)});
const KernelRegistrar kSequenceInsert({"SequenceInsert", "", 11, backend::kAnyOpset, function_kernel(sequence_insert)});
const KernelRegistrar kSequenceErase({"SequenceErase", "", 11, backend::kAnyOpset, function_kernel(sequence_erase)});
const KernelRegistrar kSequenceLength({"SequenceLength", "", 11, backend::kAnyOpset, function_kernel(sequence_length)});
const KernelRegistrar kConcatFromSequence({"ConcatFromSequence", "", 11, backend::kAnyOpset, function_kernel(concat_from_sequence)});
const KernelRegistrar kSplitToSequence({"SplitToSequence", "", 11, backend::kAnyOpset, function_kernel(split_to_sequence)});
const KernelRegistrar kSequenceMap({"SequenceMap", "", 17, backend::kAnyOpset, backend::kernel_factory<SequenceMapKernel>()});

}  // namespace
}  // namespace sdx::cpu
