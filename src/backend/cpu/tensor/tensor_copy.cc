#include "backend/cpu/tensor/tensor_copy.h"
#include "core/tensor_values.h"

#include <cstring>
#include <string>

namespace sdx::cpu {

void copy_elements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DType::kString) {
    const std::string* s = src.data<std::string>() + src_offset;
    std::string* d = dst.data<std::string>() + dst_offset;
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  const size_t esize = static_cast<size_t>(dtype_bits(src.dtype()) / 8);
  std::memcpy(static_cast<char*>(dst.raw_data()) + static_cast<size_t>(dst_offset) * esize,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(src_offset) * esize,
              static_cast<size_t>(count) * esize);
}

Result<Tensor> stack_tensors(const std::vector<Tensor>& items, DType empty_type) {
  if (items.empty()) return Tensor::allocate(empty_type, Shape{0});
  const Shape& s0 = items[0].shape();
  std::vector<int64_t> dims{static_cast<int64_t>(items.size())};
  dims.insert(dims.end(), s0.dims().begin(), s0.dims().end());
  SDX_ASSIGN_OR_RETURN(Shape shape, Shape::make(dims), "stacking");
  SDX_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(items[0].dtype(), shape), "stacking");
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].shape() != s0 || items[i].dtype() != items[0].dtype())
      return invalid_argument("cannot stack " + items[i].type_string() + " onto " + items[0].type_string() +
                              ": every iteration must produce the same type and shape");
    copy_elements(items[i], 0, out, static_cast<int64_t>(i) * s0.numel(), s0.numel());
  }
  return out;
}

Result<Tensor> move_axis(const Tensor& t, int axis, int to) {
  if (axis == to) return t;
  const int r = t.rank();
  std::vector<int> perm;
  for (int i = 0; i < r; ++i)
    if (i != axis) perm.push_back(i);
  perm.insert(perm.begin() + to, axis);
  std::vector<int64_t> dims(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) dims[static_cast<size_t>(i)] = t.shape()[perm[static_cast<size_t>(i)]];
  SDX_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(t.dtype(), Shape(dims)), "move_axis");
  // Source strides.
  const std::vector<int64_t> stride = contiguous_strides(t.shape().dims());
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t src = 0;
    for (int i = 0; i < r; ++i) src += idx[static_cast<size_t>(i)] * stride[static_cast<size_t>(perm[static_cast<size_t>(i)])];
    copy_elements(t, src, out, o, 1);
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[static_cast<size_t>(i)] < dims[static_cast<size_t>(i)]) break;
      idx[static_cast<size_t>(i)] = 0;
    }
  }
  return out;
}

}  // namespace sdx::cpu
