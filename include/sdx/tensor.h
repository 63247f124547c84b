// The values a session reads and returns.
//
// TensorView: a dense, row-major tensor the caller owns, passed by pointer (nothing is copied on the
// positional path). Value: an input or output of any ONNX kind (tensor, sequence of tensors, or an
// optional's "none"), cheap to copy (it shares its storage).
//
//   const int64_t dims[] = {2, 3};
//   float x[6] = {};
//   sdx::TensorView view{sdx::ElementType::kFloat32, dims, 2, x};
//   sdx::Result<sdx::Value> v = sdx::Value::borrow(view);   // x must outlive the run that reads v
//   const float* y = static_cast<const float*>(out.data());          // an output Value
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sdx/element_type.h"
#include "sdx/status.h"

namespace sdx {

struct TensorView {
  ElementType dtype = ElementType::kUndefined;
  const int64_t* dims = nullptr;
  int rank = 0;
  const void* data = nullptr;  // dense, row-major; null only when the tensor has no elements
};

// The element count of a shape; invalid_argument for a negative dim or an overflow of int64.
Result<int64_t> element_count(const std::vector<int64_t>& dims);

class Value {
 public:
  enum class Kind : uint8_t { kNone, kTensor, kSequence };

  Value();  // an optional's "none"
  ~Value();
  Value(const Value& other);
  Value(Value&& other) noexcept;
  Value& operator=(const Value& other);
  Value& operator=(Value&& other) noexcept;

  // A tensor over the caller's memory (not copied): it must stay alive and unchanged while a run reads it.
  static Result<Value> borrow(const TensorView& view);
  // A tensor owning a copy of the view's elements.
  static Result<Value> copy_of(const TensorView& view);
  // A string tensor (ONNX "tensor(string)") of the given shape; items.size() must equal its element count.
  static Result<Value> strings(std::vector<std::string> items, const std::vector<int64_t>& shape);
  // A sequence of tensors; every item must be a tensor of `element_type` (kUndefined: taken from the items).
  static Result<Value> sequence(const std::vector<Value>& items, ElementType element_type);

  Kind kind() const;
  bool is_tensor() const { return kind() == Kind::kTensor; }
  // A tensor's element type; a sequence's element type.
  ElementType element_type() const;
  // A tensor's dims (empty for a scalar).
  const std::vector<int64_t>& shape() const;
  int64_t element_count() const;
  // A tensor's dense elements (null for strings and for other kinds), and their size in bytes.
  const void* data() const;
  size_t nbytes() const;
  // Element i of a string tensor.
  const std::string& string_at(int64_t i) const;
  // Whether a tensor's storage is memory a caller lent (borrow()); owned() copies it then.
  bool borrows() const;
  Result<Value> owned() const;
  // A sequence's items.
  size_t sequence_length() const;
  Value sequence_item(size_t i) const;
  // A view of a dense tensor (false for strings and other kinds), valid as long as this Value.
  bool view(TensorView* out) const;

  struct Impl;

 private:
  explicit Value(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend struct ValueAccess;
};

}  // namespace sdx
