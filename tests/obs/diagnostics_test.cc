#include "obs/diagnostics.h"

#include <gtest/gtest.h>

#include <string>

namespace sdx::obs {
namespace {

TEST(Diagnostics, NamesParseBothWaysIncludingColoring) {
  DiagCategory c;
  ASSERT_TRUE(parse_diag_category("coloring", &c));
  EXPECT_EQ(c, DiagCategory::kColoring);
  EXPECT_STREQ(diag_category_name(DiagCategory::kGraphReplay), "GRAPH_REPLAY");
  for (int i = 0; i < kNumDiagCategories; ++i) {
    ASSERT_TRUE(parse_diag_category(diag_category_name(static_cast<DiagCategory>(i)), &c));
    EXPECT_EQ(static_cast<int>(c), i);
  }
  EXPECT_FALSE(parse_diag_category("NOPE", &c));
  DiagLevel l;
  ASSERT_TRUE(parse_diag_level(" detailed ", &l));
  EXPECT_EQ(l, DiagLevel::kDetailed);
  EXPECT_FALSE(parse_diag_level("verbose", &l));
}

TEST(Diagnostics, LevelsDecideWhatIsCountedAndKept) {
  Diagnostics d;
  d.record(DiagCategory::kFallback, DiagLevel::kSummary, "X", "off: ignored");
  EXPECT_EQ(d.count(DiagCategory::kFallback, "X"), 0u);
  d.enable(DiagCategory::kFallback, DiagLevel::kSummary);
  d.record(DiagCategory::kFallback, DiagLevel::kSummary, "NEW_SHAPE_SIGNATURE", "x [1, 3]");
  d.record(DiagCategory::kFallback, DiagLevel::kDetailed, "WARMUP_RUN", "not at SUMMARY");
  EXPECT_EQ(d.count(DiagCategory::kFallback, "NEW_SHAPE_SIGNATURE"), 1u);
  EXPECT_EQ(d.count(DiagCategory::kFallback, "WARMUP_RUN"), 0u);
  EXPECT_TRUE(d.events(DiagCategory::kFallback).empty());  // SUMMARY counts, keeps no event list
  d.enable(DiagCategory::kFallback, DiagLevel::kFull);
  d.record(DiagCategory::kFallback, DiagLevel::kFull, "JIT_FAILED", "compiler \"cc\" missing\n");
  ASSERT_EQ(d.events(DiagCategory::kFallback).size(), 1u);
  const std::string j = d.to_json();
  EXPECT_NE(j.find("\"FALLBACK\":{\"level\":\"FULL\",\"counts\":{\"JIT_FAILED\":1,\"NEW_SHAPE_SIGNATURE\":1}"),
            std::string::npos) << j;
  EXPECT_NE(j.find("compiler \\\"cc\\\" missing\\n"), std::string::npos) << j;
  EXPECT_EQ(j.find("\"MEMORY\""), std::string::npos);  // neither enabled nor recorded
  d.reset();
  EXPECT_EQ(d.count(DiagCategory::kFallback, "JIT_FAILED"), 0u);
}

TEST(Diagnostics, EventListsAreBounded) {
  Diagnostics d;
  d.enable(DiagCategory::kExecute, DiagLevel::kFull);
  for (size_t i = 0; i < Diagnostics::kMaxEventsPerCategory + 5; ++i)
    d.record(DiagCategory::kExecute, DiagLevel::kFull, "CALL", "");
  EXPECT_EQ(d.events(DiagCategory::kExecute).size(), Diagnostics::kMaxEventsPerCategory);
  EXPECT_EQ(d.count(DiagCategory::kExecute, "CALL"), Diagnostics::kMaxEventsPerCategory + 5);
  EXPECT_NE(d.to_json().find("\"dropped\":5"), std::string::npos);
  EXPECT_FALSE(d.write_json("/nonexistent-dir/d.json").is_ok());
}

}  // namespace
}  // namespace sdx::obs
