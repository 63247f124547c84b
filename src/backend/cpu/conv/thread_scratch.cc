// See thread_scratch.h.
#include "backend/cpu/conv/thread_scratch.h"

#include <vector>

namespace sdx::cpu {

float* conv_thread_scratch(size_t floats) {
  thread_local std::vector<float> buf;
  if (buf.size() < floats) buf.resize(floats);
  return buf.data();
}

}  // namespace sdx::cpu
