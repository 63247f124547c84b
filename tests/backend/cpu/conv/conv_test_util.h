// Helpers of the convolution kernel tests (tests/backend/cpu/conv/).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/threading/thread_pool.h"
#include "core/tensor.h"

namespace sdx::test {

// A pool of `threads` bound to the calling thread (1: none).
struct Pool {
  explicit Pool(int threads) : pool(threads > 1 ? std::make_unique<cpu::ThreadPool>(threads) : nullptr), bind(pool.get()) {}
  std::unique_ptr<cpu::ThreadPool> pool;
  cpu::ScopedThreadPool bind;
};

// Float equality with -0 == +0: the NCHW loops count padding as zero taps, the blocked ones skip them.
inline ::testing::AssertionResult same_values(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << got.type_string() << " vs " << want.type_string();
  for (int64_t i = 0; i < want.numel(); ++i)
    if (!(got.data<float>()[i] == want.data<float>()[i]))
      return ::testing::AssertionFailure() << "element " << i << ": " << got.data<float>()[i] << " vs "
                                           << want.data<float>()[i];
  return ::testing::AssertionSuccess();
}

inline Tensor blocked_copy(const Tensor& t) {
  Tensor out = Tensor::allocate(DType::kFloat32, t.shape()).value();
  cpu::block_channels(t.data<float>(), out.data<float>(), t.shape()[0], t.shape()[1], t.shape()[2] * t.shape()[3]);
  return out;
}

inline Tensor unblocked_copy(const Tensor& t) {
  Tensor out = Tensor::allocate(DType::kFloat32, t.shape()).value();
  cpu::unblock_channels(t.data<float>(), out.data<float>(), t.shape()[0], t.shape()[1], t.shape()[2] * t.shape()[3]);
  return out;
}

}  // namespace sdx::test
