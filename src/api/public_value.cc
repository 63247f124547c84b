// sdx::Value and the element type functions (include/sdx/tensor.h, include/sdx/element_type.h) over Datum,
// Tensor and core/dtype.h.
#include "api/public_access.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace sdx {

const char* element_type_name(ElementType t) { return dtype_name(t); }

bool parse_element_type(std::string_view name, ElementType* out) {
  std::optional<DType> d = dtype_from_name(name);
  if (!d) return false;
  *out = *d;
  return true;
}

size_t element_storage_bytes(ElementType t, int64_t n) { return t == DType::kString ? 0 : dtype_storage_bytes(t, n); }

Result<int64_t> element_count(const std::vector<int64_t>& dims) { return checked_numel(dims); }

namespace {

Result<Shape> shape_of(const TensorView& view) {
  if (view.rank < 0 || (view.rank > 0 && !view.dims))
    return invalid_argument("tensor view: invalid rank " + std::to_string(view.rank));
  return Shape::make(std::vector<int64_t>(view.dims, view.dims + view.rank));
}

const std::vector<int64_t> kNoDims;

}  // namespace

Value::Value() : impl_(std::make_unique<Impl>(Impl{Datum::none()})) {}
Value::Value(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Value::~Value() = default;
Value::Value(const Value& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Value::Value(Value&& other) noexcept = default;
Value& Value::operator=(const Value& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
Value& Value::operator=(Value&& other) noexcept = default;

Result<Value> Value::borrow(const TensorView& view) {
  if (view.dtype == DType::kUndefined || view.dtype == DType::kString)
    return invalid_argument(std::string("tensor view: element type ") + dtype_name(view.dtype) +
                            " cannot be borrowed (strings: Value::strings)");
  SDX_ASSIGN_OR_RETURN(Shape shape, shape_of(view), "");
  if (shape.numel() > 0 && !view.data) return invalid_argument("tensor view: data is null");
  return api::value_of(Datum::tensor(Tensor::borrow(view.dtype, std::move(shape), const_cast<void*>(view.data))));
}

Result<Value> Value::copy_of(const TensorView& view) {
  SDX_ASSIGN_OR_RETURN(Value borrowed, borrow(view), "");
  return borrowed.owned();
}

Result<Value> Value::strings(std::vector<std::string> items, const std::vector<int64_t>& shape) {
  SDX_ASSIGN_OR_RETURN(Shape s, Shape::make(shape), "");
  if (static_cast<int64_t>(items.size()) != s.numel())
    return invalid_argument("string count " + std::to_string(items.size()) + " does not match shape " + s.to_string());
  SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(DType::kString, s), "");
  for (size_t i = 0; i < items.size(); ++i) t.data<std::string>()[i] = std::move(items[i]);
  return api::value_of(Datum::tensor(std::move(t)));
}

Result<Value> Value::sequence(const std::vector<Value>& items, ElementType element_type) {
  std::vector<Tensor> tensors;
  tensors.reserve(items.size());
  for (const Value& v : items) {
    if (!v.is_tensor()) return invalid_argument("a sequence holds tensors only");
    if (element_type != DType::kUndefined && v.element_type() != element_type)
      return invalid_argument(std::string("sequence of ") + dtype_name(element_type) + " holds an item of " +
                              dtype_name(v.element_type()));
    tensors.push_back(v.impl_->datum.as_tensor());
    element_type = tensors.back().dtype();
  }
  return api::value_of(Datum::sequence(std::move(tensors), element_type));
}

Value::Kind Value::kind() const {
  if (impl_->datum.is_tensor()) return Kind::kTensor;
  if (impl_->datum.is_sequence()) return Kind::kSequence;
  return Kind::kNone;
}

ElementType Value::element_type() const {
  if (impl_->datum.is_tensor()) return impl_->datum.as_tensor().dtype();
  if (impl_->datum.is_sequence()) return impl_->datum.sequence_elem_type();
  return DType::kUndefined;
}

const std::vector<int64_t>& Value::shape() const {
  return impl_->datum.is_tensor() ? impl_->datum.as_tensor().shape().dims() : kNoDims;
}

int64_t Value::element_count() const { return impl_->datum.is_tensor() ? impl_->datum.as_tensor().numel() : 0; }

const void* Value::data() const {
  if (!impl_->datum.is_tensor() || impl_->datum.as_tensor().dtype() == DType::kString) return nullptr;
  return impl_->datum.as_tensor().raw_data();
}

size_t Value::nbytes() const {
  if (!impl_->datum.is_tensor() || impl_->datum.as_tensor().dtype() == DType::kString) return 0;
  return impl_->datum.as_tensor().nbytes();
}

const std::string& Value::string_at(int64_t i) const { return impl_->datum.as_tensor().data<std::string>()[i]; }

bool Value::borrows() const {
  if (!impl_->datum.is_tensor()) return false;
  const Tensor& t = impl_->datum.as_tensor();
  return t.buffer() && t.buffer()->borrowed();
}

Result<Value> Value::owned() const {
  if (!borrows()) return *this;
  SDX_ASSIGN_OR_RETURN(Tensor t, impl_->datum.as_tensor().clone(), "");
  return api::value_of(Datum::tensor(std::move(t)));
}

size_t Value::sequence_length() const { return impl_->datum.is_sequence() ? impl_->datum.as_sequence().size() : 0; }

Value Value::sequence_item(size_t i) const { return api::value_of(Datum::tensor(impl_->datum.as_sequence()[i])); }

bool Value::view(TensorView* out) const {
  if (!impl_->datum.is_tensor() || impl_->datum.as_tensor().dtype() == DType::kString) return false;
  const Tensor& t = impl_->datum.as_tensor();
  *out = TensorView{t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()};
  return true;
}

}  // namespace sdx
