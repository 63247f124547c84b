// The fewest dims that walk the same strided view: an output with out_dims (row-major) read from an
// input at sum(i_d * in_strides[d]). Dims of size 1 are dropped, and a dim whose input stride
// continues the next one's run (stride == next stride * next size) is merged into it. Shared by
// permuted copies (permute.h) and strided walks (tensor_util.h).
//
//   int64_t dims[8], strides[8];                                   // any indexable storage of rank entries
//   size_t n = collapse_dims({2, 3, 4}, {12, 4, 1}, dims, strides);  // n == 1: dims {24}, strides {1}
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sdx::cpu {

// Writes the collapsed dims and strides to dims[0, n) and strides[0, n) (each with room for
// out_dims.size() entries) and returns n (0 when every dim has size 1).
template <typename Out>
size_t collapse_dims(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& in_strides, Out& dims,
                     Out& strides) {
  size_t n = 0;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    if (n > 0 && strides[n - 1] == in_strides[i] * out_dims[i]) {
      dims[n - 1] *= out_dims[i];
      strides[n - 1] = in_strides[i];
    } else {
      dims[n] = out_dims[i];
      strides[n] = in_strides[i];
      ++n;
    }
  }
  return n;
}

}  // namespace sdx::cpu
