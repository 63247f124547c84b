#include "plan/bucket_choice.h"

#include <algorithm>
#include <limits>
#include <map>

namespace sdx::plan {
namespace {

// Distinct sizes ascending, counts summed, non-positive counts dropped.
std::vector<SizeCount> merged(std::vector<SizeCount> trace) {
  std::map<int64_t, double> m;
  for (const SizeCount& s : trace)
    if (s.count > 0) m[s.size] += s.count;
  std::vector<SizeCount> out;
  for (const auto& [size, count] : m) out.push_back({size, count});
  return out;
}

std::vector<int64_t> powers_of_two_up_to(int64_t largest) {
  std::vector<int64_t> out;
  for (int64_t p = 1;; p *= 2) {
    out.push_back(p);
    if (p >= largest || p > (int64_t{1} << 61)) return out;
  }
}

int64_t bucket_for(const std::vector<int64_t>& buckets, int64_t size) {
  auto it = std::lower_bound(buckets.begin(), buckets.end(), size);
  return it == buckets.end() ? -1 : *it;
}

}  // namespace

BucketChoice choose_buckets(std::vector<SizeCount> trace, int max_buckets, double plan_cost,
                            const std::vector<int64_t>& candidates) {
  const std::vector<SizeCount> sizes = merged(std::move(trace));
  BucketChoice best;
  if (sizes.empty() || max_buckets < 1) return best;
  const int64_t largest = sizes.back().size;
  // Candidates up to the first that covers the largest size (a larger one only pads more).
  std::vector<int64_t> cand;
  if (candidates.empty()) {
    for (const SizeCount& s : sizes) cand.push_back(s.size);
  } else {
    cand = candidates;
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    auto cover = std::lower_bound(cand.begin(), cand.end(), largest);
    if (cover == cand.end()) return best;  // no candidate serves the largest size
    cand.erase(cover + 1, cand.end());
  }
  const size_t m = cand.size();
  // Prefix sums of count and count * size over the sizes <= each candidate.
  std::vector<double> pc(m + 1, 0), ps(m + 1, 0);  // [0]: nothing; [j + 1]: sizes <= cand[j]
  size_t k = 0;
  double c_acc = 0, s_acc = 0;
  for (size_t j = 0; j < m; ++j) {
    while (k < sizes.size() && sizes[k].size <= cand[j]) {
      c_acc += sizes[k].count;
      s_acc += sizes[k].count * static_cast<double>(sizes[k].size);
      ++k;
    }
    pc[j + 1] = c_acc;
    ps[j + 1] = s_acc;
  }
  // The sizes in (cand[i], cand[j]] (i = -1: from the start) served by cand[j].
  auto cost = [&](size_t i_plus1, size_t j) {
    const double b = static_cast<double>(cand[j]);
    return b * (pc[j + 1] - pc[i_plus1]) - (ps[j + 1] - ps[i_plus1]) + plan_cost * b;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const int K = std::min<int>(max_buckets, static_cast<int>(m));
  // f[t][j]: t + 1 buckets, the largest cand[j], every size <= cand[j] served.
  std::vector<std::vector<double>> f(static_cast<size_t>(K), std::vector<double>(m, inf));
  std::vector<std::vector<int>> from(static_cast<size_t>(K), std::vector<int>(m, -1));
  for (size_t j = 0; j < m; ++j) f[0][j] = cost(0, j);
  for (int t = 1; t < K; ++t)
    for (size_t j = 0; j < m; ++j)
      for (size_t i = 0; i < j; ++i) {
        if (f[static_cast<size_t>(t - 1)][i] == inf) continue;
        const double v = f[static_cast<size_t>(t - 1)][i] + cost(i + 1, j);
        if (v < f[static_cast<size_t>(t)][j]) {
          f[static_cast<size_t>(t)][j] = v;
          from[static_cast<size_t>(t)][j] = static_cast<int>(i);
        }
      }
  const size_t last = m - 1;  // the candidate covering the largest size
  int bt = 0;
  for (int t = 1; t < K; ++t)
    if (f[static_cast<size_t>(t)][last] < f[static_cast<size_t>(bt)][last]) bt = t;
  best.cost = f[static_cast<size_t>(bt)][last];
  for (int t = bt, j = static_cast<int>(last); t >= 0 && j >= 0; --t) {
    best.sizes.push_back(cand[static_cast<size_t>(j)]);
    j = from[static_cast<size_t>(t)][static_cast<size_t>(j)];
  }
  std::reverse(best.sizes.begin(), best.sizes.end());
  best.padding = padding_of(sizes, best.sizes);
  return best;
}

BucketChoice choose_power_of_two_buckets(std::vector<SizeCount> trace, int max_buckets, double plan_cost) {
  int64_t largest = 0;
  for (const SizeCount& s : trace)
    if (s.count > 0) largest = std::max(largest, s.size);
  return choose_buckets(std::move(trace), max_buckets, plan_cost, powers_of_two_up_to(largest));
}

double padding_of(const std::vector<SizeCount>& trace, const std::vector<int64_t>& buckets, double* unserved) {
  std::vector<int64_t> b = buckets;
  std::sort(b.begin(), b.end());
  double pad = 0, out = 0;
  for (const SizeCount& s : trace) {
    const int64_t at = bucket_for(b, s.size);
    if (at < 0)
      out += s.count;
    else
      pad += s.count * static_cast<double>(at - s.size);
  }
  if (unserved) *unserved = out;
  return pad;
}

double padding_of_2d(const std::vector<SizePair>& trace, const std::vector<int64_t>& first,
                     const std::vector<int64_t>& second) {
  std::vector<int64_t> a = first, b = second;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  double pad = 0;
  for (const SizePair& p : trace) {
    const int64_t x = bucket_for(a, p.first), y = bucket_for(b, p.second);
    if (x < 0 || y < 0) continue;
    pad += p.count * (static_cast<double>(x) * static_cast<double>(y) -
                      static_cast<double>(p.first) * static_cast<double>(p.second));
  }
  return pad;
}

BucketChoice2d choose_buckets_2d(const std::vector<SizePair>& trace, int max_first, int max_second, bool power_of_two,
                                 int rounds) {
  BucketChoice2d out;
  int64_t max_a = 0, max_b = 0;
  for (const SizePair& p : trace) {
    max_a = std::max(max_a, p.first);
    max_b = std::max(max_b, p.second);
  }
  if (trace.empty()) return out;
  const std::vector<int64_t> cand_a = power_of_two ? powers_of_two_up_to(max_a) : std::vector<int64_t>{};
  const std::vector<int64_t> cand_b = power_of_two ? powers_of_two_up_to(max_b) : std::vector<int64_t>{};
  // One dim's choice with each call weighted by the other dim's bucket (its padded elements per entry).
  auto one = [&](bool first_dim, const std::vector<int64_t>& other) {
    std::vector<SizeCount> t;
    for (const SizePair& p : trace) {
      const int64_t o = bucket_for(other, first_dim ? p.second : p.first);
      t.push_back({first_dim ? p.first : p.second, p.count * static_cast<double>(o < 0 ? 1 : o)});
    }
    return choose_buckets(t, first_dim ? max_first : max_second, 0, first_dim ? cand_a : cand_b).sizes;
  };
  // Start: each dim alone (unweighted), then alternate until neither changes.
  std::vector<SizeCount> ta, tb;
  for (const SizePair& p : trace) {
    ta.push_back({p.first, p.count});
    tb.push_back({p.second, p.count});
  }
  out.first = choose_buckets(ta, max_first, 0, cand_a).sizes;
  out.second = choose_buckets(tb, max_second, 0, cand_b).sizes;
  for (int r = 0; r < rounds; ++r) {
    std::vector<int64_t> a = one(true, out.second);
    std::vector<int64_t> b = one(false, a);
    const bool same = a == out.first && b == out.second;
    out.first = std::move(a);
    out.second = std::move(b);
    if (same) break;
  }
  out.padding = padding_of_2d(trace, out.first, out.second);
  return out;
}

}  // namespace sdx::plan
