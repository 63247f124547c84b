// Choosing shape buckets from traffic: given the sizes a dynamic dim took (with how often), the set of at most
// K bucket sizes that minimises the expected padding plus what each bucket's plan costs to hold. The
// CUDA-graphs article's advice for decode graphs ("capture densely where batch sizes cluster") as an
// algorithm: an exact dynamic program over the observed sizes, so a bucket sits where traffic is.
//
//   std::vector<SizeCount> trace = {{1, 900}, {3, 40}, {7, 60}};
//   BucketChoice c = choose_buckets(trace, 2);             // {1, 7}: only the 40 calls at 3 pad (to 7)
//   choose_power_of_two_buckets(trace, 2)                   // {1, 8}: the 40 pad to 8, the 60 at 7 pad too
//   padding_of(trace, c.sizes);                             // what the trace pads with those buckets
//   choose_buckets_2d(pairs, 4, 4)                          // batch x length: coordinate descent on both dims
//
// Cost model. A call of size v in bucket b pads b - v entries (times `weight`: the elements each entry
// carries, e.g. the other dims' sizes); a bucket of size b costs plan_cost * b once (its frozen memory grows
// with its size). The largest observed size always gets a bucket, so every observed size is served.
#pragma once

#include <cstdint>
#include <vector>

namespace sdx::plan {

struct SizeCount {
  int64_t size = 0;
  double count = 0;  // calls (or weight: entries x calls) at this size
};

struct BucketChoice {
  std::vector<int64_t> sizes;  // ascending; the last is the largest observed size
  double padding = 0;          // sum over the trace of count * (bucket - size)
  double cost = 0;             // padding + plan_cost * sum of the bucket sizes
};

// The optimal set of at most max_buckets sizes, each one of `candidates` (empty: any observed size) that
// is >= the size it serves; the largest observed size is always covered (by itself, or by the smallest
// candidate above it). Sizes are merged if repeated; counts <= 0 are ignored. Empty trace: no buckets.
BucketChoice choose_buckets(std::vector<SizeCount> trace, int max_buckets, double plan_cost = 0,
                            const std::vector<int64_t>& candidates = {});

// The powers of two as candidates (1, 2, 4, ... up to the first >= the largest observed size): the best
// choice of at most max_buckets powers of two for the trace, the usual fixed bucketing, for comparison.
BucketChoice choose_power_of_two_buckets(std::vector<SizeCount> trace, int max_buckets, double plan_cost = 0);

// sum of count * (bucket(size) - size), bucket(size) = the smallest bucket >= size; a size above every
// bucket counts as unserved (returned in *unserved when given, not in the sum).
double padding_of(const std::vector<SizeCount>& trace, const std::vector<int64_t>& buckets, double* unserved = nullptr);

// Two dims at once (a batch size and a sequence length per call): padded elements per call are
// B(b) * L(l) - b * l. Alternates the two one-dim choices, each weighted by the other dim's buckets, from
// powers of two, until neither changes (at most `rounds`). power_of_two: the same search restricted to powers
// of two.
struct BucketChoice2d {
  std::vector<int64_t> first, second;
  double padding = 0;  // padded elements over the trace
};
struct SizePair {
  int64_t first = 0, second = 0;
  double count = 1;
};
BucketChoice2d choose_buckets_2d(const std::vector<SizePair>& trace, int max_first, int max_second,
                                 bool power_of_two = false, int rounds = 16);
double padding_of_2d(const std::vector<SizePair>& trace, const std::vector<int64_t>& first,
                     const std::vector<int64_t>& second);

}  // namespace sdx::plan
