// SmallBuffer: a fixed-length scratch array that lives inside the object (on the stack)
// up to N elements and on the heap beyond, for index counters and per-input offsets
// in loops that bound kernels run on every replay (which must not allocate).
//
//   SmallBuffer<int64_t, 8> counter(rank, 0);   // no heap allocation while rank <= 8
//   counter[d] += 1;
//   fn(counter.data());
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace sdx::cpu {

template <typename T, size_t N>
class SmallBuffer {
 public:
  SmallBuffer(size_t n, T value) {
    if (n <= N) {
      std::fill_n(inline_, n, value);
      ptr_ = inline_;
    } else {
      heap_.assign(n, value);
      ptr_ = heap_.data();
    }
  }
  // ptr_ points into the object itself.
  SmallBuffer(const SmallBuffer&) = delete;
  SmallBuffer& operator=(const SmallBuffer&) = delete;

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  T& operator[](size_t i) { return ptr_[i]; }
  const T& operator[](size_t i) const { return ptr_[i]; }

 private:
  T inline_[N];
  std::vector<T> heap_;  // used only past N elements
  T* ptr_ = nullptr;
};

}  // namespace sdx::cpu
