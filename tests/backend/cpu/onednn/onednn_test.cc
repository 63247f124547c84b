// The oneDNN switch (onednn.h): built in or not, the test switch, and the single-thread guard.
#include "backend/cpu/onednn/onednn.h"

#include <gtest/gtest.h>

namespace sdx::cpu {
namespace {

TEST(OneDnn, SwitchFollowsTheBuildAndTheTestHook) {
  const bool before = onednn_enabled();
  set_onednn_enabled(false);
  EXPECT_FALSE(onednn_enabled());
  set_onednn_enabled(true);
  EXPECT_EQ(onednn_enabled(), onednn_built());
  set_onednn_enabled(before);
}

TEST(OneDnn, SingleThreadGuardsNest) {
  // Nested guards (a chunk inside a guarded caller) must restore cleanly; nothing to observe
  // without OpenMP in the test binary beyond not crashing and leaving the switch alone.
  const bool before = onednn_enabled();
  {
    OneDnnSingleThread outer;
    OneDnnSingleThread inner;
  }
  EXPECT_EQ(onednn_enabled(), before);
}

}  // namespace
}  // namespace sdx::cpu
