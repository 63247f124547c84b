// TensorArg: a caller's tensor for the positional run (Session::run on a Context,
// sdxRun): element type, dims and data. The runtime reads it during the call and
// keeps nothing; numpy arrays and C buffers are passed without conversion.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace sdx::runtime {

struct TensorArg {
  DType dtype = DType::kUndefined;
  const int64_t* dims = nullptr;
  int rank = 0;
  const void* data = nullptr;  // dense, row-major
};

}  // namespace sdx::runtime
