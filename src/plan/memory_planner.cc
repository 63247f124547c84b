#include "plan/memory_planner.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <utility>

#include "core/shape.h"

namespace sdx::plan {
namespace {

bool overlaps_in_time(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

int64_t align_up(int64_t x, int64_t alignment) { return (x + alignment - 1) & ~(alignment - 1); }

// Validates every request and that the worst-case arena (every value at its own aligned offset) fits
// in int64, so that no later sum or align_up can overflow.
Status validate(const std::vector<BufferRequest>& requests, int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return invalid_argument("alignment must be a positive power of two, got " + std::to_string(alignment));
  }
  int64_t worst = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& r = requests[i];
    const std::string where = "buffer request " + std::to_string(i);
    if (r.bytes < 0) return invalid_argument(where + ": negative size " + std::to_string(r.bytes));
    if (r.first < 0) return invalid_argument(where + ": negative first step " + std::to_string(r.first));
    if (r.first > r.last) {
      return invalid_argument(where + ": first step " + std::to_string(r.first) + " after last step " +
                              std::to_string(r.last));
    }
    if (r.excluded) continue;
    SDX_ASSIGN_OR_RETURN(int64_t padded, checked_add(r.bytes, alignment - 1), where);
    SDX_ASSIGN_OR_RETURN(worst, checked_add(worst, padded), where + ": total size overflows");
  }
  return Status::ok();
}

// Greedy interval coloring. Values are taken in order of production; a color is free for a value when
// its current occupant's last read is strictly before the value's first step.
void plan_coloring(const std::vector<BufferRequest>& requests, const std::vector<int>& order,
                   MemoryPlan& plan) {
  std::vector<int> busy_until;  // per color: last step of its current occupant
  for (int i : order) {
    const BufferRequest& r = requests[static_cast<size_t>(i)];
    int best_fit = -1;  // smallest free color with size >= r.bytes
    int largest = -1;   // largest free color, grown when nothing fits
    for (int c = 0; c < static_cast<int>(busy_until.size()); ++c) {
      if (busy_until[static_cast<size_t>(c)] >= r.first) continue;
      int64_t size = plan.color_bytes[static_cast<size_t>(c)];
      if (size >= r.bytes && (best_fit < 0 || size < plan.color_bytes[static_cast<size_t>(best_fit)])) {
        best_fit = c;
      }
      if (largest < 0 || size > plan.color_bytes[static_cast<size_t>(largest)]) largest = c;
    }
    int c = best_fit >= 0 ? best_fit : largest;
    if (c < 0) {
      c = static_cast<int>(busy_until.size());
      busy_until.push_back(0);
      plan.color_bytes.push_back(0);
    }
    busy_until[static_cast<size_t>(c)] = r.last;
    plan.color_bytes[static_cast<size_t>(c)] = std::max(plan.color_bytes[static_cast<size_t>(c)], r.bytes);
    plan.color[static_cast<size_t>(i)] = c;
  }
  plan.coloring_bytes = std::accumulate(plan.color_bytes.begin(), plan.color_bytes.end(), int64_t{0});
}

// Greedy by size: largest values first, each at the lowest aligned offset that does not overlap (in
// time and address) any value already placed. Zero-byte values occupy no address range; they sit at 0.
void plan_arena(const std::vector<BufferRequest>& requests, std::vector<int> order, MemoryPlan& plan) {
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return requests[static_cast<size_t>(a)].bytes > requests[static_cast<size_t>(b)].bytes;
  });
  std::vector<int> placed;  // sorted by offset
  for (int i : order) {
    const BufferRequest& r = requests[static_cast<size_t>(i)];
    int64_t candidate = 0;
    if (r.bytes > 0) {
      for (int p : placed) {
        const BufferRequest& q = requests[static_cast<size_t>(p)];
        if (!overlaps_in_time(r, q)) continue;
        int64_t q_begin = plan.offset[static_cast<size_t>(p)];
        if (candidate + r.bytes <= q_begin) break;  // fits in the gap below q; later q start higher
        candidate = std::max(candidate, align_up(q_begin + q.bytes, plan.alignment));
      }
    }
    plan.offset[static_cast<size_t>(i)] = candidate;
    plan.arena_bytes = std::max(plan.arena_bytes, candidate + r.bytes);
    auto pos = std::upper_bound(placed.begin(), placed.end(), candidate, [&](int64_t off, int p) {
      return off < plan.offset[static_cast<size_t>(p)];
    });
    placed.insert(pos, i);
  }
}

// Sweep over production/release events; a value is live on [first, last].
int64_t peak_live(const std::vector<BufferRequest>& requests, const std::vector<int>& order) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, +bytes at first / -bytes after last)
  events.reserve(order.size() * 2);
  for (int i : order) {
    const BufferRequest& r = requests[static_cast<size_t>(i)];
    events.emplace_back(r.first, r.bytes);
    events.emplace_back(int64_t{r.last} + 1, -r.bytes);
  }
  std::sort(events.begin(), events.end());  // releases at a step sort before productions
  int64_t live = 0, peak = 0;
  for (const auto& e : events) {
    live += e.second;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

const char* strategy_name(MemoryPlan::Strategy s) {
  return s == MemoryPlan::Strategy::kArena ? "arena" : "coloring";
}

Result<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, int64_t alignment) {
  SDX_RETURN_IF_ERROR(validate(requests, alignment), "planning memory");
  MemoryPlan plan;
  plan.alignment = alignment;
  plan.num_requests = static_cast<int>(requests.size());
  plan.color.assign(requests.size(), -1);
  plan.offset.assign(requests.size(), -1);

  std::vector<int> order;  // planned requests by (first, index)
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].excluded) {
      ++plan.num_excluded;
      continue;
    }
    order.push_back(static_cast<int>(i));
    plan.naive_bytes += requests[i].bytes;
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return requests[static_cast<size_t>(a)].first < requests[static_cast<size_t>(b)].first;
  });

  plan_coloring(requests, order, plan);
  plan_arena(requests, order, plan);
  plan.peak_live_bytes = peak_live(requests, order);
  plan.chosen = plan.arena_bytes < plan.coloring_bytes ? MemoryPlan::Strategy::kArena
                                                       : MemoryPlan::Strategy::kColoring;
  return plan;
}

Status verify_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  const size_t n = requests.size();
  if (plan.color.size() != n || plan.offset.size() != n) {
    return internal_error("memory plan covers " + std::to_string(plan.color.size()) + " colors / " +
                          std::to_string(plan.offset.size()) + " offsets for " + std::to_string(n) +
                          " requests");
  }
  auto name = [](size_t i) { return "buffer request " + std::to_string(i); };
  for (size_t i = 0; i < n; ++i) {
    const BufferRequest& r = requests[i];
    int c = plan.color[i];
    int64_t off = plan.offset[i];
    if (r.excluded) {
      if (c != -1 || off != -1) return internal_error(name(i) + " is excluded but planned");
      continue;
    }
    if (c < 0 || c >= plan.num_colors()) return internal_error(name(i) + ": bad color " + std::to_string(c));
    if (plan.color_bytes[static_cast<size_t>(c)] < r.bytes) {
      return internal_error(name(i) + ": color " + std::to_string(c) + " is too small");
    }
    if (off < 0 || off % plan.alignment != 0 || off + r.bytes > plan.arena_bytes) {
      return internal_error(name(i) + ": bad arena offset " + std::to_string(off));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (requests[i].excluded) continue;
    for (size_t j = i + 1; j < n; ++j) {
      if (requests[j].excluded || !overlaps_in_time(requests[i], requests[j])) continue;
      if (plan.color[i] == plan.color[j]) {
        return internal_error(name(i) + " and " + std::to_string(j) + " are live together but share color " +
                              std::to_string(plan.color[i]));
      }
      int64_t a = plan.offset[i], b = plan.offset[j];
      if (a < b + requests[j].bytes && b < a + requests[i].bytes) {
        return internal_error(name(i) + " and " + std::to_string(j) +
                              " are live together but overlap in the arena");
      }
    }
  }
  return Status::ok();
}

std::string describe(const MemoryPlan& plan) {
  std::string s = "memory plan: " + std::to_string(plan.num_requests) + " values (" +
                  std::to_string(plan.num_excluded) + " excluded), naive " + format_bytes(plan.naive_bytes) +
                  "; coloring " + std::to_string(plan.num_colors()) + " buffers " +
                  format_bytes(plan.coloring_bytes) + "; arena " + format_bytes(plan.arena_bytes) +
                  " (alignment " + std::to_string(plan.alignment) + "); peak live " +
                  format_bytes(plan.peak_live_bytes) + "; chosen " + strategy_name(plan.chosen);
  if (plan.naive_bytes > 0) {
    char buf[48];
    double saved = 100.0 * static_cast<double>(plan.naive_bytes - plan.planned_bytes()) /
                   static_cast<double>(plan.naive_bytes);
    std::snprintf(buf, sizeof(buf), " (saves %.1f%%)", saved);
    s += buf;
  }
  return s;
}

}  // namespace sdx::plan
