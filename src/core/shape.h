// Shape: tensor dimensions with overflow-checked element counts.
//
//   SDX_ASSIGN_OR_RETURN(Shape s, Shape::make({2, 3}), "input 'x'");
//   s.numel();  // 6, known not to overflow int64
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/status.h"

namespace sdx {

class Shape {
 public:
  Shape() = default;  // a scalar
  // Validates dims (each >= 0, product fits in int64).
  static Result<Shape> make(std::vector<int64_t> dims);
  // For dims already known valid (asserts in debug builds).
  explicit Shape(std::vector<int64_t> dims);
  Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const { return numel_; }
  // Product of dims in [begin, end).
  int64_t size_between(int begin, int end) const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  std::string to_string() const;  // "[2, 3]"

 private:
  std::vector<int64_t> dims_;
  int64_t numel_ = 1;
};

// a * b, or an error when it overflows int64 or either is negative.
Result<int64_t> checked_mul(int64_t a, int64_t b);
Result<int64_t> checked_add(int64_t a, int64_t b);
Result<int64_t> checked_numel(const std::vector<int64_t>& dims);

// Normalizes an axis in [-rank, rank) to [0, rank).
Result<int> normalize_axis(int64_t axis, int rank);

// Numpy-style broadcast of two shapes.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b);

std::string dims_to_string(const std::vector<int64_t>& dims);

}  // namespace sdx
