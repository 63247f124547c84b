// Tensor: dtype + shape + a reference-counted Buffer (+ byte offset into it).
//
//   SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(DType::kFloat32, Shape{2, 3}), "output");
//   float* p = t.data<float>();
//   Tensor view = Tensor::borrow(DType::kFloat32, Shape{6}, p);  // no ownership
//
// Copying a Tensor shares the buffer. Strings are stored as std::string objects.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"

namespace sdx {

class Buffer {
 public:
  using Deleter = std::function<void(void*)>;
  // Takes ownership of data; deleter runs on destruction (may be empty for borrowed memory).
  Buffer(void* data, size_t bytes, Deleter deleter, bool borrowed)
      : data_(data), bytes_(bytes), deleter_(std::move(deleter)), borrowed_(borrowed) {}
  ~Buffer() {
    if (deleter_) deleter_(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // True when the memory belongs to the caller (e.g. a numpy array fed without a copy).
  bool borrowed() const { return borrowed_; }

 private:
  void* data_;
  size_t bytes_;
  Deleter deleter_;
  bool borrowed_;
};

class Tensor {
 public:
  Tensor() = default;

  // Allocates uninitialized storage (strings are default-constructed, numeric types zeroed
  // only when zero is true).
  static Result<Tensor> allocate(DType dtype, Shape shape, Allocator* alloc = cpu_allocator(), bool zero = false);
  // Wraps caller-owned memory; keepalive (may be null) is held as long as the tensor lives.
  static Tensor borrow(DType dtype, Shape shape, void* data, std::shared_ptr<void> keepalive = nullptr);
  // A scalar or 1-D tensor holding a copy of the values.
  template <typename T>
  static Tensor from_values(DType dtype, Shape shape, const T* values);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return dtype_storage_bytes(dtype_, shape_.numel()); }

  void* raw_data() const { return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr; }
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }

  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t offset() const { return offset_; }

  // Same storage, new shape (numel must match). Used by Reshape/Squeeze/Flatten.
  Tensor reshaped(Shape shape) const;
  // Deep copy into freshly allocated storage.
  Result<Tensor> clone() const;
  // "float[2, 3]"
  std::string type_string() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

template <typename T>
Tensor Tensor::from_values(DType dtype, Shape shape, const T* values) {
  auto t = Tensor::allocate(dtype, std::move(shape));
  SDX_ASSERT(t.is_ok());
  Tensor out = std::move(t).value();
  for (int64_t i = 0; i < out.numel(); ++i) out.data<T>()[i] = values[i];
  return out;
}

}  // namespace sdx
