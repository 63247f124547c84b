#include "plan/memory_planner.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace sdx::plan {
namespace {

using Strategy = MemoryPlan::Strategy;

MemoryPlan plan_ok(const std::vector<BufferRequest>& reqs, int64_t alignment = 64) {
  auto r = plan_memory(reqs, alignment);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return MemoryPlan{};
  EXPECT_TRUE(verify_plan(reqs, r.value()).is_ok()) << verify_plan(reqs, r.value()).to_string();
  return std::move(r).value();
}

bool live_together(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Independent of verify_plan: brute force over every pair and every step.
void expect_valid(const std::vector<BufferRequest>& reqs, const MemoryPlan& p, const std::string& what) {
  ASSERT_EQ(p.color.size(), reqs.size()) << what;
  ASSERT_EQ(p.offset.size(), reqs.size()) << what;
  int64_t naive = 0;
  int max_step = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    max_step = std::max(max_step, reqs[i].last);
    if (reqs[i].excluded) {
      EXPECT_EQ(p.color[i], -1) << what;
      EXPECT_EQ(p.offset[i], -1) << what;
      continue;
    }
    naive += reqs[i].bytes;
    ASSERT_GE(p.color[i], 0) << what;
    ASSERT_LT(p.color[i], p.num_colors()) << what;
    EXPECT_GE(p.color_bytes[static_cast<size_t>(p.color[i])], reqs[i].bytes) << what;
    EXPECT_GE(p.offset[i], 0) << what;
    EXPECT_EQ(p.offset[i] % p.alignment, 0) << what;
    EXPECT_LE(p.offset[i] + reqs[i].bytes, p.arena_bytes) << what;
    for (size_t j = 0; j < i; ++j) {
      if (reqs[j].excluded || !live_together(reqs[i], reqs[j])) continue;
      EXPECT_NE(p.color[i], p.color[j]) << what << ": " << i << " and " << j << " share a color";
      bool disjoint = p.offset[i] + reqs[i].bytes <= p.offset[j] || p.offset[j] + reqs[j].bytes <= p.offset[i];
      EXPECT_TRUE(disjoint) << what << ": " << i << " and " << j << " overlap in the arena";
    }
  }
  int64_t sum_colors = 0;
  for (int64_t b : p.color_bytes) sum_colors += b;
  EXPECT_EQ(p.coloring_bytes, sum_colors) << what;
  EXPECT_EQ(p.naive_bytes, naive) << what;

  int64_t peak = 0;
  for (int s = 0; s <= max_step; ++s) {
    int64_t live = 0;
    for (const auto& r : reqs) {
      if (!r.excluded && r.first <= s && s <= r.last) live += r.bytes;
    }
    peak = std::max(peak, live);
  }
  EXPECT_EQ(p.peak_live_bytes, peak) << what;
  EXPECT_GE(p.coloring_bytes, peak) << what;
  EXPECT_GE(p.arena_bytes, peak) << what;
  EXPECT_LE(p.coloring_bytes, naive) << what;
  EXPECT_EQ(p.planned_bytes(), std::min(p.coloring_bytes, p.arena_bytes)) << what;
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a -> b -> c: b is produced while a is read (step 1), so they differ; c is produced after a's
  // last read, so it reuses a.
  std::vector<BufferRequest> reqs = {{100, 0, 1}, {100, 1, 2}, {100, 2, 3}};
  MemoryPlan p = plan_ok(reqs);
  EXPECT_EQ(p.color, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(p.num_colors(), 2);
  EXPECT_EQ(p.naive_bytes, 300);
  EXPECT_EQ(p.coloring_bytes, 200);
  EXPECT_EQ(p.offset[0], p.offset[2]);
  EXPECT_NE(p.offset[0], p.offset[1]);
  EXPECT_EQ(p.peak_live_bytes, 200);
  EXPECT_EQ(p.planned_bytes(), 200);
  expect_valid(reqs, p, "chain");
}

TEST(MemoryPlanner, BoundaryStepIsNotReusable) {
  // Last read at step 2; a value produced at step 2 must not share, one produced at step 3 may.
  std::vector<BufferRequest> same_step = {{64, 0, 2}, {64, 2, 4}};
  MemoryPlan p = plan_ok(same_step);
  EXPECT_NE(p.color[0], p.color[1]);
  EXPECT_EQ(p.coloring_bytes, 128);
  EXPECT_EQ(p.arena_bytes, 128);

  std::vector<BufferRequest> next_step = {{64, 0, 2}, {64, 3, 4}};
  p = plan_ok(next_step);
  EXPECT_EQ(p.color[0], p.color[1]);
  EXPECT_EQ(p.offset[0], p.offset[1]);
  EXPECT_EQ(p.planned_bytes(), 64);
}

TEST(MemoryPlanner, OverlappingIntervalsDoNotShare) {
  std::vector<BufferRequest> reqs = {{10, 0, 5}, {20, 1, 3}, {30, 2, 2}, {40, 4, 6}};
  MemoryPlan p = plan_ok(reqs);
  EXPECT_NE(p.color[0], p.color[1]);
  EXPECT_NE(p.color[0], p.color[2]);
  EXPECT_NE(p.color[1], p.color[2]);
  EXPECT_NE(p.color[0], p.color[3]);
  // 3 starts after 1 and 2 are dead: it reuses one of their colors (the largest, grown to 40).
  EXPECT_TRUE(p.color[3] == p.color[1] || p.color[3] == p.color[2]);
  EXPECT_EQ(p.peak_live_bytes, 60);
  expect_valid(reqs, p, "overlapping");
}

TEST(MemoryPlanner, ColoringPrefersClosestFittingColor) {
  // Colors of 1000 and 100 bytes are free at step 2; a 90-byte value takes the 100-byte one.
  std::vector<BufferRequest> reqs = {{1000, 0, 1}, {100, 0, 1}, {90, 2, 3}, {900, 2, 3}};
  MemoryPlan p = plan_ok(reqs);
  EXPECT_EQ(p.color[2], p.color[1]);
  EXPECT_EQ(p.color[3], p.color[0]);
  EXPECT_EQ(p.coloring_bytes, 1100);
  expect_valid(reqs, p, "closest fit");
}

TEST(MemoryPlanner, ExcludedAreNotPlannedOrCounted) {
  std::vector<BufferRequest> reqs = {{100, 0, 1}, {500, 0, 3, true}, {100, 2, 3}};
  MemoryPlan p = plan_ok(reqs);
  EXPECT_EQ(p.color[1], -1);
  EXPECT_EQ(p.offset[1], -1);
  EXPECT_EQ(p.num_excluded, 1);
  EXPECT_EQ(p.naive_bytes, 200);
  EXPECT_EQ(p.peak_live_bytes, 100);
  EXPECT_EQ(p.color[0], p.color[2]);
  EXPECT_EQ(p.planned_bytes(), 100);
  expect_valid(reqs, p, "excluded");

  MemoryPlan all_excluded = plan_ok({{8, 0, 0, true}});
  EXPECT_EQ(all_excluded.num_colors(), 0);
  EXPECT_EQ(all_excluded.planned_bytes(), 0);
  MemoryPlan empty = plan_ok({});
  EXPECT_EQ(empty.planned_bytes(), 0);
}

TEST(MemoryPlanner, ZeroByteRequests) {
  std::vector<BufferRequest> reqs = {{0, 0, 3}, {64, 0, 3}, {0, 1, 2}};
  MemoryPlan p = plan_ok(reqs);
  EXPECT_EQ(p.peak_live_bytes, 64);
  EXPECT_EQ(p.arena_bytes, 64);
  expect_valid(reqs, p, "zero bytes");
}

TEST(MemoryPlanner, ArenaBeatsColoringOnMixedSizes) {
  // Two small values live early, one large value later: coloring gives the large value one of the
  // small colors (grown to 200) and keeps the other (100) -> 300; the arena fits both small values
  // under the large one -> 200.
  std::vector<BufferRequest> reqs = {{100, 0, 1}, {100, 0, 1}, {200, 2, 3}};
  MemoryPlan p = plan_ok(reqs, 1);
  EXPECT_EQ(p.coloring_bytes, 300);
  EXPECT_EQ(p.arena_bytes, 200);
  EXPECT_EQ(p.chosen, Strategy::kArena);
  EXPECT_EQ(p.planned_bytes(), 200);
  EXPECT_EQ(p.peak_live_bytes, 200);
  expect_valid(reqs, p, "mixed sizes");
}

TEST(MemoryPlanner, ArenaOffsetsAreAligned) {
  std::vector<BufferRequest> reqs = {{10, 0, 2}, {10, 0, 2}, {10, 1, 2}};
  MemoryPlan p = plan_ok(reqs, 64);
  for (int64_t off : p.offset) EXPECT_EQ(off % 64, 0);
  EXPECT_EQ(p.arena_bytes, 138);  // 0, 64, 128 + 10
  EXPECT_EQ(p.chosen, Strategy::kColoring);  // 30 bytes in three colors
}

TEST(MemoryPlanner, RejectsBadInput) {
  auto neg = plan_memory({{8, 0, 1}, {-1, 0, 1}});
  ASSERT_FALSE(neg.is_ok());
  EXPECT_EQ(neg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("request 1"), std::string::npos) << neg.status().to_string();

  auto reversed = plan_memory({{8, 0, 1}, {8, 0, 1}, {8, 3, 2}});
  ASSERT_FALSE(reversed.is_ok());
  EXPECT_NE(reversed.status().message().find("request 2"), std::string::npos);

  EXPECT_FALSE(plan_memory({{8, -1, 1}}).is_ok());
  EXPECT_FALSE(plan_memory({{8, 0, 1}}, 0).is_ok());
  EXPECT_FALSE(plan_memory({{8, 0, 1}}, 48).is_ok());
  EXPECT_FALSE(plan_memory({{INT64_MAX / 2, 0, 1}, {INT64_MAX / 2 + 10, 2, 3}}).is_ok());
}

TEST(MemoryPlanner, VerifyCatchesBrokenPlans) {
  std::vector<BufferRequest> reqs = {{100, 0, 1}, {100, 1, 2}};
  MemoryPlan p = plan_ok(reqs);
  MemoryPlan shared_color = p;
  shared_color.color[1] = shared_color.color[0];
  EXPECT_FALSE(verify_plan(reqs, shared_color).is_ok());
  MemoryPlan shared_offset = p;
  shared_offset.offset[1] = shared_offset.offset[0];
  EXPECT_FALSE(verify_plan(reqs, shared_offset).is_ok());
}

TEST(MemoryPlanner, DescribeMentionsBothStrategies) {
  std::vector<BufferRequest> reqs = {{1 << 20, 0, 1}, {1 << 20, 1, 2}, {1 << 20, 2, 3}, {64, 3, 3, true}};
  std::string s = describe(plan_ok(reqs));
  EXPECT_NE(s.find("4 values (1 excluded)"), std::string::npos) << s;
  EXPECT_NE(s.find("naive 3.0 MiB"), std::string::npos) << s;
  EXPECT_NE(s.find("coloring 2 buffers 2.0 MiB"), std::string::npos) << s;
  EXPECT_NE(s.find("arena 2.0 MiB"), std::string::npos) << s;
  EXPECT_NE(s.find("chosen coloring"), std::string::npos) << s;
}

TEST(MemoryPlanner, RandomizedPlansAreValid) {
  std::mt19937 rng(1234);
  int arena_wins = 0, coloring_smaller = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int n = std::uniform_int_distribution<int>(0, 40)(rng);
    int steps = std::uniform_int_distribution<int>(1, 30)(rng);
    int64_t alignment = int64_t{1} << std::uniform_int_distribution<int>(0, 7)(rng);
    std::vector<BufferRequest> reqs;
    for (int i = 0; i < n; ++i) {
      BufferRequest r;
      int first = std::uniform_int_distribution<int>(0, steps - 1)(rng);
      int len = std::uniform_int_distribution<int>(0, trial % 3 == 0 ? steps : 4)(rng);
      r.first = first;
      r.last = first + len;
      r.bytes = trial % 5 == 0 ? std::uniform_int_distribution<int64_t>(0, 3)(rng) * 256
                               : std::uniform_int_distribution<int64_t>(0, 5000)(rng);
      r.excluded = std::uniform_int_distribution<int>(0, 9)(rng) == 0;
      reqs.push_back(r);
    }
    MemoryPlan p = plan_ok(reqs, alignment);
    expect_valid(reqs, p, "trial " + std::to_string(trial));
    if (HasFailure()) return;
    if (p.chosen == Strategy::kArena) ++arena_wins;
    if (p.arena_bytes > p.coloring_bytes) ++coloring_smaller;
  }
  // Both strategies should matter on random inputs.
  EXPECT_GT(arena_wins, 0);
  EXPECT_GT(coloring_smaller, 0);
}

}  // namespace
}  // namespace sdx::plan
