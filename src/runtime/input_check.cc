#include "runtime/input_check.h"

namespace sdx::runtime {
namespace {

using Kind = ir::TypeInfo::Kind;

std::string names_of(const std::vector<ValueInfo>& infos) {
  std::string names;
  for (const ValueInfo& v : infos) names += (names.empty() ? "" : ", ") + v.name;
  return names;
}

int position(const std::vector<ValueInfo>& infos, const std::string& name) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

Status check_input(const ValueInfo& info, const TensorArg& a) {
  auto where = [&] { return "input '" + info.name + "'"; };
  auto got = [&] { return dims_to_string(std::vector<int64_t>(a.dims, a.dims + a.rank)); };
  if (info.type.kind != Kind::kTensor)
    return invalid_argument(where() + ": expected " + info.type.to_string() + ", which the positional run cannot take");
  if (a.rank < 0 || (a.rank > 0 && !a.dims)) return invalid_argument(where() + ": invalid rank or dims");
  int64_t numel = 1;
  for (int i = 0; i < a.rank; ++i) {
    if (a.dims[i] < 0) return invalid_argument(where() + ": negative dimension in shape " + got());
    auto m = checked_mul(numel, a.dims[i]);
    if (!m.is_ok()) return invalid_argument(where() + ": shape " + got() + " has too many elements");
    numel = m.value();
  }
  if (numel > 0 && !a.data) return invalid_argument(where() + ": data is null");
  if (info.type.elem != DType::kUndefined && a.dtype != info.type.elem)
    return invalid_argument(where() + ": expected element type " + dtype_name(info.type.elem) + " but got " +
                            dtype_name(a.dtype));
  if (!info.type.shape) return Status::ok();
  const auto& dims = *info.type.shape;
  if (static_cast<int>(dims.size()) != a.rank)
    return invalid_argument(where() + ": expected rank " + std::to_string(dims.size()) + " with shape " +
                            info.type.shape_string() + " but got rank " + std::to_string(a.rank) + " with shape " + got());
  for (int i = 0; i < a.rank; ++i)
    if (dims[static_cast<size_t>(i)].is_fixed() && dims[static_cast<size_t>(i)].value != a.dims[i])
      return invalid_argument(where() + ": dimension " + std::to_string(i) + " must be " +
                              std::to_string(dims[static_cast<size_t>(i)].value) + " (expected shape " +
                              info.type.shape_string() + ") but got shape " + got());
  return Status::ok();
}

Status check_input(const ValueInfo& info, const Datum& d) {
  const std::string where = "input '" + info.name + "'";
  if (info.type.kind == Kind::kSequence) {
    if (!d.is_sequence()) return invalid_argument(where + ": expected a sequence of tensors");
    return Status::ok();
  }
  if (info.type.kind == Kind::kOptional) return Status::ok();
  if (!d.is_tensor()) return invalid_argument(where + ": expected a tensor");
  const Tensor& t = d.as_tensor();
  return check_input(info, TensorArg{t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()});
}

Result<BoundFeeds> bind_feeds(const ir::Graph& g, const std::vector<ValueInfo>& inputs,
                              const std::vector<std::pair<std::string, Datum>>& feeds) {
  BoundFeeds b;
  b.by_input.assign(inputs.size(), nullptr);
  for (const auto& [name, datum] : feeds) {
    const int idx = position(inputs, name);
    if (idx < 0) {
      const ir::Value* v = g.find_value(name);
      bool is_input = false;
      if (v && v->is_initializer())
        for (const ir::Value* in : g.inputs()) is_input |= in == v;
      if (!is_input)
        return invalid_argument("unknown input name '" + name + "'; the model's inputs are: " + names_of(inputs));
      b.overrides.emplace_back(v, &datum);  // an initializer that is also a graph input (ONNX semantics)
      b.plannable = false;
      continue;
    }
    const ValueInfo& info = inputs[static_cast<size_t>(idx)];
    SDX_RETURN_IF_ERROR(check_input(info, datum), "");
    b.by_input[static_cast<size_t>(idx)] = &datum;
    if (!datum.is_tensor() || info.type.kind != Kind::kTensor) b.plannable = false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (b.by_input[i]) continue;
    if (inputs[i].type.kind != Kind::kOptional)
      return invalid_argument("missing input '" + inputs[i].name + "' (" + inputs[i].type.to_string() + " with shape " +
                              inputs[i].type.shape_string() + ")");
    b.plannable = false;
  }
  return b;
}

Result<std::vector<int>> output_positions(const std::vector<ValueInfo>& outputs, const std::vector<std::string>& names) {
  std::vector<int> outs;
  for (const std::string& name : names) {
    const int o = position(outputs, name);
    if (o < 0) return invalid_argument("unknown output name '" + name + "'; the model's outputs are: " + names_of(outputs));
    outs.push_back(o);
  }
  return outs;
}

}  // namespace sdx::runtime
