#include "core/shape.h"

#include <limits>

namespace sdx {

Result<int64_t> checked_mul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return invalid_argument("negative dimension in size computation");
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return out_of_range("tensor size overflows int64");
  return r;
}

Result<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return out_of_range("integer overflow in size computation");
  return r;
}

Result<int64_t> checked_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return invalid_argument("negative dimension " + std::to_string(d) + " in shape " + dims_to_string(dims));
    int64_t r;
    if (__builtin_mul_overflow(n, d, &r))
      return out_of_range("element count of shape " + dims_to_string(dims) + " overflows int64");
    n = r;
  }
  return n;
}

Result<Shape> Shape::make(std::vector<int64_t> dims) {
  auto n = checked_numel(dims);
  if (!n.is_ok()) return n.status();
  Shape s;
  s.dims_ = std::move(dims);
  s.numel_ = n.value();
  return s;
}

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  auto n = checked_numel(dims_);
  SDX_ASSERT(n.is_ok());
  numel_ = n.value();
}

int64_t Shape::size_between(int begin, int end) const {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::string Shape::to_string() const { return dims_to_string(dims_); }

Result<int> normalize_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1))
    return invalid_argument("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  int r = a.rank() > b.rank() ? a.rank() : b.rank();
  std::vector<int64_t> out(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1) out[static_cast<size_t>(i)] = da;
    else if (da == 1) out[static_cast<size_t>(i)] = db;
    else return invalid_argument("shapes " + a.to_string() + " and " + b.to_string() + " cannot be broadcast");
  }
  return Shape::make(std::move(out));
}

}  // namespace sdx
