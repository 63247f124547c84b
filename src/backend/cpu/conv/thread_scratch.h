// The calling thread's float scratch for sdx's own convolution kernels (internal to conv/): the
// depthwise kernel's padded rows, the pointwise product's chunk for a channel-blocked Y.
//
//   float* rows = conv_thread_scratch(floats);  // valid until this thread's next call
//
// One buffer per thread, shared by every convolution: a thread runs one chunk at a time and no kernel
// calls another inside a chunk. It grows on a thread's first call after a larger convolution and is then
// reused, so steady-state replay allocates nothing. A bound form grows the binding thread's buffer when
// it binds (which of the pool's threads runs which chunk varies from run to run, so a thread that bound a
// convolution may run its first chunk of it only in a later run).
#pragma once

#include <cstddef>

namespace sdx::cpu {

float* conv_thread_scratch(size_t floats);

}  // namespace sdx::cpu
