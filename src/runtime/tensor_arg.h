// TensorArg: one positional input, a dense row-major tensor the caller owns. It is the public API's
// TensorView (include/sdx/tensor.h) under the engine's name, so the public positional path passes the
// caller's array straight through.
#pragma once

#include "core/dtype.h"
#include "sdx/tensor.h"

namespace sdx::runtime {

using TensorArg = ::sdx::TensorView;

}  // namespace sdx::runtime
