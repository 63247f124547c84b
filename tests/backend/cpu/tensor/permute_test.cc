#include "backend/cpu/tensor/permute.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

// dst[out] = src[in] for the permutation `perm` of a row-major tensor of shape `dims`, naively.
template <typename T>
std::vector<T> naive_permute(const std::vector<T>& src, const std::vector<int64_t>& dims, const std::vector<int>& perm) {
  const size_t r = dims.size();
  std::vector<int64_t> in_strides(r, 1), out_dims(r);
  for (size_t d = r - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * dims[d + 1];
  for (size_t d = 0; d < r; ++d) out_dims[d] = dims[static_cast<size_t>(perm[d])];
  std::vector<T> out(src.size());
  std::vector<int64_t> idx(r, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t in = 0;
    for (size_t d = 0; d < r; ++d) in += idx[d] * in_strides[static_cast<size_t>(perm[d])];
    out[o] = src[static_cast<size_t>(in)];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

template <typename T>
std::vector<T> run_permute(const std::vector<T>& src, const std::vector<int64_t>& dims, const std::vector<int>& perm) {
  const size_t r = dims.size();
  std::vector<int64_t> in_strides(r, 1), out_dims(r), strides(r);
  for (size_t d = r - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * dims[d + 1];
  for (size_t d = 0; d < r; ++d) {
    out_dims[d] = dims[static_cast<size_t>(perm[d])];
    strides[d] = in_strides[static_cast<size_t>(perm[d])];
  }
  std::vector<T> out(src.size());
  permute(PermutePlan::make(out_dims, strides), src.data(), out.data());
  return out;
}

template <typename T>
void check_all_perms(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<T> src(static_cast<size_t>(n));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i * 2654435761u);
  std::vector<int> perm(dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    const std::vector<T> want = naive_permute(src, dims, perm);
    EXPECT_EQ(run_permute(src, dims, perm), want);
    ThreadPool pool(2);
    ScopedThreadPool scope(&pool);
    EXPECT_EQ(run_permute(src, dims, perm), want) << "2 threads";
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Permute, EveryPermutationOfOddShapes) {
  check_all_perms<float>({2, 3, 5, 7});
  check_all_perms<float>({1, 33, 17, 3});
  check_all_perms<uint8_t>({3, 1, 17, 15});
  check_all_perms<uint64_t>({7, 2, 1, 33});
  check_all_perms<float>({1003});
}

// The attention layouts, large enough to split over two threads and to need several tiles
// with partial edges.
TEST(Permute, AttentionPermsLargeThreaded) {
  for (const std::vector<int>& perm : {std::vector<int>{0, 2, 1, 3}, std::vector<int>{0, 1, 3, 2}}) {
    const std::vector<int64_t> dims = {2, 129, 4, 67};
    std::vector<float> src(2 * 129 * 4 * 67);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f;
    const std::vector<float> want = naive_permute(src, dims, perm);
    EXPECT_EQ(run_permute(src, dims, perm), want);
    ThreadPool pool(2);
    ScopedThreadPool scope(&pool);
    EXPECT_EQ(run_permute(src, dims, perm), want);
    EXPECT_EQ(run_permute(src, {2, 4, 129, 67}, perm), naive_permute(src, {2, 4, 129, 67}, perm));
  }
}

TEST(Permute, PlanCollapsesContiguousDims) {
  // [0, 2, 1, 3] of [1, 128, 4, 64]: dims [4, 128, 64] with the last contiguous (no tiling).
  const PermutePlan a = PermutePlan::make({1, 4, 128, 64}, {32768, 64, 256, 1});
  EXPECT_EQ(a.dims, (std::vector<int64_t>{4, 128, 64}));
  EXPECT_EQ(a.tile_dim, -1);
  // [0, 1, 3, 2] of [1, 4, 128, 64]: a batch of 4 transposes of 64 x 128, tiled.
  const PermutePlan b = PermutePlan::make({1, 4, 64, 128}, {32768, 8192, 1, 64});
  EXPECT_EQ(b.dims, (std::vector<int64_t>{4, 64, 128}));
  EXPECT_EQ(b.tile_dim, 1);
  // The identity collapses to one dim.
  EXPECT_EQ(PermutePlan::make({2, 3, 4}, {12, 4, 1}).dims, (std::vector<int64_t>{24}));
}

}  // namespace
}  // namespace sdx::cpu
