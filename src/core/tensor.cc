#include "core/tensor.h"

#include <cstring>
#include <new>

namespace sdx {

Result<Tensor> Tensor::allocate(DType dtype, Shape shape, Allocator* alloc, bool zero) {
  if (dtype == DType::kUndefined) return invalid_argument("cannot allocate a tensor of undefined type");
  size_t bytes = dtype_storage_bytes(dtype, shape.numel());
  constexpr size_t kMaxBytes = size_t{1} << 46;  // 64 TiB: anything larger is a corrupt shape
  if (bytes > kMaxBytes) return resource_exhausted("tensor of " + shape.to_string() + " is too large to allocate");
  void* p = alloc->allocate(bytes);
  if (!p) return resource_exhausted("out of memory allocating " + std::to_string(bytes) + " bytes");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  int64_t n = t.shape_.numel();
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(p);
    for (int64_t i = 0; i < n; ++i) new (s + i) std::string();
    t.buffer_ = std::make_shared<Buffer>(p, bytes, [alloc, n](void* q) {
      auto* str = static_cast<std::string*>(q);
      for (int64_t i = 0; i < n; ++i) str[i].~basic_string();
      alloc->free(q);
    }, false);
  } else {
    if (zero) std::memset(p, 0, bytes);
    t.buffer_ = std::make_shared<Buffer>(p, bytes, [alloc](void* q) { alloc->free(q); }, false);
  }
  return t;
}

Tensor Tensor::borrow(DType dtype, Shape shape, void* data, std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  size_t bytes = dtype_storage_bytes(dtype, shape.numel());
  t.shape_ = std::move(shape);
  t.buffer_ = std::make_shared<Buffer>(data, bytes, [k = std::move(keepalive)](void*) mutable { k.reset(); }, true);
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  SDX_ASSERT(shape.numel() == shape_.numel());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Result<Tensor> Tensor::clone() const {
  SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype_, shape_), "clone");
  if (dtype_ == DType::kString) {
    for (int64_t i = 0; i < numel(); ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (nbytes() > 0) {
    std::memcpy(t.raw_data(), raw_data(), nbytes());
  }
  return t;
}

std::string Tensor::type_string() const { return std::string(dtype_name(dtype_)) + shape_.to_string(); }

}  // namespace sdx
