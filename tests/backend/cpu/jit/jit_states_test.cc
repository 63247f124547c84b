// The JIT's state vocabularies come from jit_states.inc: every enumerator has its name (the strings
// users see in introspection and `sdx inspect --jit` stay exactly these) and no two share one.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backend/cpu/jit/compiled_segment.h"
#include "backend/cpu/jit/segment_state.h"

namespace sdx::jit {
namespace {

TEST(JitStates, SegmentStatesHaveTheirUserVisibleNames) {
  const std::vector<std::pair<SegmentState, std::string>> want = {
      {SegmentState::kFused, "FUSED"},     {SegmentState::kCompiling, "COMPILING"},
      {SegmentState::kReady, "READY"},     {SegmentState::kFailed, "FAILED"},
      {SegmentState::kRejected, "REJECTED"}, {SegmentState::kBelowThreshold, "BELOW_THRESHOLD"}};
  std::set<std::string> names;
  for (const auto& [s, name] : want) {
    EXPECT_EQ(segment_state_name(s), name);
    names.insert(segment_state_name(s));
  }
  EXPECT_EQ(names.size(), want.size());
}

TEST(JitStates, CompileStatesHaveTheirNames) {
  EXPECT_STREQ(jit_state_name(JitState::kPending), "PENDING");
  EXPECT_STREQ(jit_state_name(JitState::kReady), "READY");
  EXPECT_STREQ(jit_state_name(JitState::kFailed), "FAILED");
}

}  // namespace
}  // namespace sdx::jit
