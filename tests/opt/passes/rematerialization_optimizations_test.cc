#include "../pass_test_util.h"
#include "ir/type_inference.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"RematerializationOptimizations"};

// e = Expand(row, [64, 256]) (64 KiB) read by `early`, then `gap` unrelated nodes, then by `late`.
ir::Model far_readers(int gap) {
  ModelBuilder b;
  ir::Value* row = b.input("row", {1, 256});
  ir::Value* y = b.input("y", {64, 256});
  ir::Value* e = b.op("Expand", {row, b.constant("shape", i64({64, 256}, {2}))});
  ir::Value* h = b.op("Add", {y, e});  // early reader
  for (int i = 0; i < gap; ++i) h = b.op(i % 2 ? "Neg" : "Tanh", {h});
  b.output(b.op("Mul", {h, e}));  // late reader
  return b.model();
}

TEST(RematerializationOptimizations, RecomputesABroadcastNextToAFarReader) {
  PassCheck r =
      check_pass(kPasses, [] { return far_readers(24); },
                 {{"row", Datum::tensor(random_f32({1, 256}, 1))}, {"y", Datum::tensor(random_f32({64, 256}, 2))}});
  EXPECT_EQ(r.report.rewrites_of("RematerializationOptimizations"), 1);
  EXPECT_EQ(r.ops_after.at("Expand"), 2);
  EXPECT_EQ(r.report.iterations, 2);  // the second round changes nothing

  // The copy runs right before the late reader.
  ir::Model m = far_readers(24);
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  ASSERT_TRUE(opt::optimize(*m.graph, only(kPasses)).is_ok());
  const auto& nodes = m.graph->nodes();
  ASSERT_EQ(nodes.size(), 28u);
  EXPECT_EQ(nodes[0]->op_type(), "Expand");
  EXPECT_EQ(nodes[26]->op_type(), "Expand");
  EXPECT_EQ(nodes[27]->op_type(), "Mul");
  EXPECT_EQ(nodes[27]->input(1), nodes[26]->output(0));
}

TEST(RematerializationOptimizations, KeepsNearReadersAndCseDoesNotUndoIt) {
  PassCheck near =
      check_pass(kPasses, [] { return far_readers(8); },
                 {{"row", Datum::tensor(random_f32({1, 256}, 3))}, {"y", Datum::tensor(random_f32({64, 256}, 4))}});
  EXPECT_EQ(near.report.rewrites_of("RematerializationOptimizations"), 0);
  // With CSE in the pipeline the copy stays (CSE asks the same policy) and the pipeline reaches a fixpoint.
  PassCheck both =
      check_pass({"CommonSubexpressionElimination", "RematerializationOptimizations"}, [] { return far_readers(24); },
                 {{"row", Datum::tensor(random_f32({1, 256}, 5))}, {"y", Datum::tensor(random_f32({64, 256}, 6))}});
  EXPECT_EQ(both.report.rewrites_of("CommonSubexpressionElimination"), 0);
  EXPECT_EQ(both.report.rewrites_of("RematerializationOptimizations"), 1);
  EXPECT_EQ(both.report.iterations, 2);
}

}  // namespace
}  // namespace sdx::test
