#include "serve/tensor_codec.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include "serve/datatype.h"

namespace sdx::serve {
namespace {

using InputTensor = inference::ModelInferRequest::InferInputTensor;

Status invalid(const std::string& input, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "input '" + input + "': " + what);
}

std::string type_name(ElementType type) {
  const char* name = datatype_name(type);
  return name ? name : element_type_name(type);
}

// "FP32 [2, 3]"
std::string typed_shape(ElementType type, const std::vector<int64_t>& dims) {
  return type_name(type) + " " + shape_string(dims);
}

bool contents_empty(const inference::InferTensorContents& c) {
  return c.bool_contents_size() == 0 && c.int_contents_size() == 0 && c.int64_contents_size() == 0 &&
         c.uint_contents_size() == 0 && c.uint64_contents_size() == 0 && c.fp32_contents_size() == 0 &&
         c.fp64_contents_size() == 0 && c.bytes_contents_size() == 0;
}

// Raw BYTES contents: each element a 4-byte little-endian length, then that many bytes.
Status decode_raw_strings(const std::string& name, const std::string& raw, const std::vector<int64_t>& dims,
                          int64_t count, Value* out) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos < raw.size()) {
    if (raw.size() - pos < 4)
      return invalid(name, "BYTES raw contents end inside the length of element " + std::to_string(items.size()));
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data() + pos);
    const uint64_t len = uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24;
    pos += 4;
    if (raw.size() - pos < len)
      return invalid(name, "BYTES raw contents end inside element " + std::to_string(items.size()));
    if (static_cast<int64_t>(items.size()) == count)
      return invalid(name, "BYTES raw contents hold more elements than " + typed_shape(ElementType::kString, dims) +
                               " takes (" + std::to_string(count) + ")");
    items.emplace_back(raw.data() + pos, len);
    pos += len;
  }
  if (static_cast<int64_t>(items.size()) != count)
    return invalid(name, "BYTES raw contents hold " + std::to_string(items.size()) + " elements, but " +
                             typed_shape(ElementType::kString, dims) + " takes " + std::to_string(count));
  Result<Value> v = Value::strings(std::move(items), dims);
  if (!v.is_ok()) return v.status().with_context("input '" + name + "'");
  *out = std::move(v).value();
  return Status::ok();
}

Status decode_raw(const InputTensor& tensor, const std::string& raw, ElementType type,
                  const std::vector<int64_t>& dims, int64_t count, Value* out) {
  const std::string& name = tensor.name();
  if (tensor.has_contents() && !contents_empty(tensor.contents()))
    return invalid(name, "has both raw_input_contents and typed contents; send one of them");
  if (type == ElementType::kString) return decode_raw_strings(name, raw, dims, count, out);
  const int64_t element_bytes = datatype_element_bytes(type);
  if (count > std::numeric_limits<int64_t>::max() / element_bytes)
    return invalid(name, "shape " + shape_string(dims) + " is too large");
  const int64_t expected = count * element_bytes;
  if (static_cast<int64_t>(raw.size()) != expected)
    return invalid(name, std::to_string(raw.size()) + " bytes of raw contents, but " + typed_shape(type, dims) +
                             " takes " + std::to_string(expected));
  const TensorView view{type, dims.data(), static_cast<int>(dims.size()), count ? raw.data() : nullptr};
  // The engine reads borrowed inputs with aligned loads; raw bytes a request holds inline are copied.
  const bool aligned = reinterpret_cast<uintptr_t>(raw.data()) % alignof(std::max_align_t) == 0;
  Result<Value> v = aligned ? Value::borrow(view) : Value::copy_of(view);
  if (!v.is_ok()) return v.status().with_context("input '" + name + "'");
  *out = std::move(v).value();
  return Status::ok();
}

// Typed contents of a fixed-size datatype: `field` holds the elements, converted to T.
template <typename T, typename Field>
Status decode_field(const InputTensor& tensor, const Field& field, const char* field_name, ElementType type,
                    const std::vector<int64_t>& dims, int64_t count, Value* out) {
  if (field.size() != count)
    return invalid(tensor.name(), std::to_string(field.size()) + " values in contents." + field_name + ", but " +
                                      typed_shape(type, dims) + " takes " + std::to_string(count));
  std::vector<T> data(field.begin(), field.end());
  const TensorView view{type, dims.data(), static_cast<int>(dims.size()), count ? data.data() : nullptr};
  Result<Value> v = Value::copy_of(view);
  if (!v.is_ok()) return v.status().with_context("input '" + tensor.name() + "'");
  *out = std::move(v).value();
  return Status::ok();
}

Status decode_typed(const InputTensor& tensor, ElementType type, const std::vector<int64_t>& dims, int64_t count,
                    Value* out) {
  const inference::InferTensorContents& c = tensor.contents();
  if (count > 0 && contents_empty(c))
    return invalid(tensor.name(), "no data: neither raw_input_contents nor typed contents");
  switch (type) {
    case ElementType::kBool: return decode_field<uint8_t>(tensor, c.bool_contents(), "bool_contents", type, dims, count, out);
    case ElementType::kInt8: return decode_field<int8_t>(tensor, c.int_contents(), "int_contents", type, dims, count, out);
    case ElementType::kInt16: return decode_field<int16_t>(tensor, c.int_contents(), "int_contents", type, dims, count, out);
    case ElementType::kInt32: return decode_field<int32_t>(tensor, c.int_contents(), "int_contents", type, dims, count, out);
    case ElementType::kInt64: return decode_field<int64_t>(tensor, c.int64_contents(), "int64_contents", type, dims, count, out);
    case ElementType::kUint8: return decode_field<uint8_t>(tensor, c.uint_contents(), "uint_contents", type, dims, count, out);
    case ElementType::kUint16: return decode_field<uint16_t>(tensor, c.uint_contents(), "uint_contents", type, dims, count, out);
    case ElementType::kUint32: return decode_field<uint32_t>(tensor, c.uint_contents(), "uint_contents", type, dims, count, out);
    case ElementType::kUint64: return decode_field<uint64_t>(tensor, c.uint64_contents(), "uint64_contents", type, dims, count, out);
    case ElementType::kFloat32: return decode_field<float>(tensor, c.fp32_contents(), "fp32_contents", type, dims, count, out);
    case ElementType::kFloat64: return decode_field<double>(tensor, c.fp64_contents(), "fp64_contents", type, dims, count, out);
    case ElementType::kString: {
      if (c.bytes_contents_size() != count)
        return invalid(tensor.name(), std::to_string(c.bytes_contents_size()) + " values in contents.bytes_contents, but " +
                                          typed_shape(type, dims) + " takes " + std::to_string(count));
      Result<Value> v = Value::strings({c.bytes_contents().begin(), c.bytes_contents().end()}, dims);
      if (!v.is_ok()) return v.status().with_context("input '" + tensor.name() + "'");
      *out = std::move(v).value();
      return Status::ok();
    }
    default:
      return invalid(tensor.name(), type_name(type) + " travels only as raw_input_contents");
  }
}

void append_raw_strings(const Value& value, std::string* raw) {
  for (int64_t i = 0; i < value.element_count(); ++i) {
    const std::string& s = value.string_at(i);
    const auto len = static_cast<uint32_t>(s.size());
    const char prefix[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                            static_cast<char>((len >> 16) & 0xff), static_cast<char>((len >> 24) & 0xff)};
    raw->append(prefix, 4);
    raw->append(s);
  }
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

Status decode_input(const InputTensor& tensor, const std::string* raw, ElementType declared, Value* out) {
  ElementType type;
  if (!parse_datatype(tensor.datatype(), &type))
    return invalid(tensor.name(), "unknown datatype '" + tensor.datatype() +
                                      "' (KServe's: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, "
                                      "INT64, FP16, FP32, FP64, BF16, BYTES)");
  if (declared != ElementType::kUndefined && declared != type)
    return invalid(tensor.name(), "datatype " + tensor.datatype() + ", but the model's input is " + type_name(declared));
  const std::vector<int64_t> dims(tensor.shape().begin(), tensor.shape().end());
  Result<int64_t> count = element_count(dims);
  if (!count.is_ok()) return invalid(tensor.name(), "shape " + shape_string(dims) + ": " + count.status().message());
  if (raw) return decode_raw(tensor, *raw, type, dims, count.value(), out);
  return decode_typed(tensor, type, dims, count.value(), out);
}

Status decode_inputs(const inference::ModelInferRequest& request, const std::vector<ValueInfo>& model_inputs,
                     Session::Feeds* feeds) {
  const int n = request.inputs_size();
  const int n_raw = request.raw_input_contents_size();
  if (n_raw != 0 && n_raw != n)
    return Status(StatusCode::kInvalidArgument, std::to_string(n_raw) + " raw_input_contents for " +
                                                    std::to_string(n) + " inputs: give one per input, in order");
  std::set<std::string> seen;
  for (int i = 0; i < n; ++i) {
    const InputTensor& tensor = request.inputs(i);
    const ValueInfo* info = nullptr;
    for (const ValueInfo& in : model_inputs)
      if (in.name == tensor.name()) info = &in;
    if (!info) {
      std::string names;
      for (const ValueInfo& in : model_inputs) names += (names.empty() ? "" : ", ") + in.name;
      return invalid(tensor.name(), "the model has no such input (its inputs: " + names + ")");
    }
    if (!seen.insert(tensor.name()).second) return invalid(tensor.name(), "given twice");
    if (!info->is_tensor) return invalid(tensor.name(), "is a " + info->type + "; KServe carries tensors only");
    Value value;
    const std::string* raw = n_raw ? &request.raw_input_contents(i) : nullptr;
    if (Status st = decode_input(tensor, raw, info->element_type, &value); !st.is_ok()) return st;
    feeds->emplace_back(tensor.name(), std::move(value));
  }
  for (const ValueInfo& in : model_inputs)
    if (!seen.count(in.name))
      return invalid(in.name, "missing: the model needs it (" + in.type + ")");
  return Status::ok();
}

Status requested_outputs(const inference::ModelInferRequest& request, const std::vector<ValueInfo>& model_outputs,
                         std::vector<std::string>* names) {
  if (request.outputs_size() == 0) {
    for (const ValueInfo& out : model_outputs) names->push_back(out.name);
    return Status::ok();
  }
  for (const auto& wanted : request.outputs()) {
    bool known = false;
    for (const ValueInfo& out : model_outputs) known = known || out.name == wanted.name();
    if (!known)
      return Status(StatusCode::kInvalidArgument, "output '" + wanted.name() + "': the model has no such output");
    names->push_back(wanted.name());
  }
  return Status::ok();
}

Status encode_outputs(const std::vector<std::string>& names, const std::vector<Value>& values,
                      inference::ModelInferResponse* response) {
  for (size_t i = 0; i < values.size() && i < names.size(); ++i) {
    const Value& value = values[i];
    if (!value.is_tensor())
      return Status(StatusCode::kUnimplemented, "output '" + names[i] + "' is not a tensor; KServe carries tensors only");
    const char* datatype = datatype_name(value.element_type());
    if (!datatype)
      return Status(StatusCode::kUnimplemented, "output '" + names[i] + "': element type " +
                                                    element_type_name(value.element_type()) + " has no KServe datatype");
    auto* out = response->add_outputs();
    out->set_name(names[i]);
    out->set_datatype(datatype);
    for (int64_t d : value.shape()) out->add_shape(d);
    std::string* raw = response->add_raw_output_contents();
    if (value.element_type() == ElementType::kString) {
      append_raw_strings(value, raw);
    } else if (value.nbytes()) {
      raw->assign(static_cast<const char*>(value.data()), value.nbytes());
    }
  }
  return Status::ok();
}

}  // namespace sdx::serve
