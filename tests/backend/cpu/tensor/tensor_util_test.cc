// backend/cpu/tensor/tensor_util.h: strided walks visit every output element once, in order, at the
// input offset the strides give; size-1 dims are dropped and dims that continue each other's runs
// are merged, so whole rows (or the whole tensor) come as one run.
#include "backend/cpu/tensor/tensor_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace sdx::cpu {
namespace {

struct StridedRun {
  int64_t out, in, step, n;
  bool operator==(const StridedRun& o) const { return out == o.out && in == o.in && step == o.step && n == o.n; }
};

std::vector<StridedRun> runs(int64_t base, const std::vector<int64_t>& strides, const std::vector<int64_t>& dims) {
  std::vector<StridedRun> r;
  for_each_strided_run(base, strides, dims, [&](int64_t out, int64_t in, int64_t step, int64_t n) {
    r.push_back({out, in, step, n});
  });
  return r;
}

// The input offset of every output element, element by element, from the unmerged strides.
std::vector<int64_t> offsets(int64_t base, const std::vector<int64_t>& strides, const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> o;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, off = base;
    for (size_t d = dims.size(); d-- > 0;) {
      off += rem % dims[d] * strides[d];
      rem /= dims[d];
    }
    o.push_back(off);
  }
  return o;
}

TEST(StridedRuns, VisitEveryElementAtItsOffset) {
  const std::vector<std::vector<int64_t>> dims = {{2, 3, 4}, {2, 1, 5, 1}, {3, 4, 1}, {1, 1}, {4, 1, 3}, {2, 3, 2, 2}};
  const std::vector<std::vector<int64_t>> strides = {{12, 4, 1}, {5, 5, 1, 1}, {1, 3, 7}, {3, 9}, {-3, 5, 1}, {0, 4, 2, 1}};
  for (size_t c = 0; c < dims.size(); ++c) {
    SCOPED_TRACE(c);
    std::vector<int64_t> got(static_cast<size_t>(offsets(0, strides[c], dims[c]).size()), -1);
    int64_t next = 0;
    for (const StridedRun& r : runs(100, strides[c], dims[c])) {
      ASSERT_EQ(r.out, next);  // runs come in output order, back to back
      for (int64_t k = 0; k < r.n; ++k) got[static_cast<size_t>(r.out + k)] = r.in + k * r.step;
      next = r.out + r.n;
    }
    EXPECT_EQ(got, offsets(100, strides[c], dims[c]));
  }
}

TEST(StridedRuns, MergeContiguousDimsAndDropOnes) {
  // A contiguous [2, 3, 4]: one run of 24.
  EXPECT_EQ(runs(0, {12, 4, 1}, {2, 3, 4}), (std::vector<StridedRun>{{0, 0, 1, 24}}));
  // A trailing [.., 1] (magika's Slice of a W = 1 tensor): one run, not one per element.
  EXPECT_EQ(runs(7, {5, 1, 1}, {2, 5, 1}), (std::vector<StridedRun>{{0, 7, 1, 10}}));
  // Rows 1..2 of a [4, 6]: the rows are adjacent in the input, one run of 12.
  EXPECT_EQ(runs(6, {6, 1}, {2, 6}), (std::vector<StridedRun>{{0, 6, 1, 12}}));
  // Columns 1..3 of a [3, 6]: one run per row.
  EXPECT_EQ(runs(1, {6, 1}, {3, 3}), (std::vector<StridedRun>{{0, 1, 1, 3}, {3, 7, 1, 3}, {6, 13, 1, 3}}));
  // A transpose [3, 2] of a [2, 3]: strided runs.
  EXPECT_EQ(runs(0, {1, 3}, {3, 2}), (std::vector<StridedRun>{{0, 0, 3, 2}, {2, 1, 3, 2}, {4, 2, 3, 2}}));
  // All ones: the one element.
  EXPECT_EQ(runs(4, {9, 9}, {1, 1}), (std::vector<StridedRun>{{0, 4, 0, 1}}));
  // Empty: nothing.
  EXPECT_TRUE(runs(0, {3, 1}, {0, 3}).empty());
}

}  // namespace
}  // namespace sdx::cpu
