#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"ConcatSplitOptimizations", "UnusedFunctionOptimizations"};

TEST(ConcatSplitOptimizations, SplitOfConcatGivesThePieces) {
  auto build = [] {
    ModelBuilder b;  // opset 17: sizes as the second input
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y = b.input("y", {2, 5});
    ir::Value* c = b.op("Concat", {b.op("Relu", {x}), b.op("Neg", {y})}, {attr_i("axis", -1)});
    b.op("Split", {c, b.constant("sizes", i64({3, 5}, {2}))}, {attr_i("axis", 1)}, 2);
    ir::Node* split = b.last_node();
    b.output(b.op("Exp", {split->output(0)}));
    b.output(b.op("Abs", {split->output(1)}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 1))}, {"y", Datum::tensor(random_f32({2, 5}, 2))}});
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Relu", 1}, {"Neg", 1}, {"Exp", 1}, {"Abs", 1}}));
}

TEST(ConcatSplitOptimizations, EqualAndNumOutputsSplitsOfConcat) {
  auto build = [] {
    ModelBuilder b(18);
    ir::Value* x = b.input("x", {4, 2});
    ir::Value* y = b.input("y", {4, 2});
    ir::Value* c = b.op("Concat", {b.op("Relu", {x}), b.op("Neg", {y})}, {attr_i("axis", 0)});
    b.op("Split", {c}, {attr_i("num_outputs", 2)}, 2);  // ceil(8 / 2) = 4 rows each
    ir::Node* split = b.last_node();
    b.output(b.op("Add", {split->output(0), split->output(1)}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"x", Datum::tensor(random_f32({4, 2}, 3))}, {"y", Datum::tensor(random_f32({4, 2}, 4))}});
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 1);
  EXPECT_EQ(r.ops_after.count("Split"), 0u);
  EXPECT_EQ(r.ops_after.count("Concat"), 0u);
}

TEST(ConcatSplitOptimizations, ConcatOfOneAndSplitIntoOne) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* c = b.op("Concat", {b.op("Relu", {x})}, {attr_i("axis", 1)});
    ir::Value* s = b.op("Split", {c}, {attr_i("axis", 0)}, 1);
    ir::Value* t = b.op("Split", {s, b.constant("sizes", i64({3}, {1}))}, {attr_i("axis", 1)}, 1);
    b.output(b.op("Exp", {t}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({2, 3}, 5))}});
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Relu", 1}, {"Exp", 1}}));
}

TEST(ConcatSplitOptimizations, SliceSelectingOneConcatInput) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3, 2});
    ir::Value* y = b.input("y", {3, 4});
    ir::Value* z = b.input("z", {3, 1});
    ir::Value* c = b.op("Concat", {b.op("Relu", {x}), b.op("Neg", {y}), b.op("Abs", {z})}, {attr_i("axis", 1)});
    // Columns [2, 6) are exactly y's; [-1, INT64_MAX) exactly z's.
    ir::Value* mid = b.op(
        "Slice", {c, b.constant("s", i64({2}, {1})), b.constant("e", i64({6}, {1})), b.constant("a", i64({-1}, {1}))});
    ir::Value* last = b.op("Slice", {c, b.constant("s2", i64({-1}, {1})), b.constant("e2", i64({INT64_MAX}, {1})),
                                     b.constant("a2", i64({1}, {1})), b.constant("st2", i64({1}, {1}))});
    b.output(b.op("Exp", {mid}));
    b.output(b.op("Exp", {last}));
    b.output(b.op("Sigmoid", {c}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"x", Datum::tensor(random_f32({3, 2}, 6))},
                            {"y", Datum::tensor(random_f32({3, 4}, 7))},
                            {"z", Datum::tensor(random_f32({3, 1}, 8))}});
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 2);
  EXPECT_EQ(r.ops_after.count("Slice"), 0u);
  EXPECT_EQ(r.ops_after.at("Concat"), 1);  // still read by Sigmoid
}

TEST(ConcatSplitOptimizations, KeepsMismatchedSplitsStraddlingSlicesAndGraphOutputs) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y = b.input("y", {2, 5});
    ir::Value* c = b.op("Concat", {b.op("Relu", {x}), b.op("Neg", {y})}, {attr_i("axis", 1)});
    // Sizes [4, 4] cut across the concat boundary at 3.
    b.op("Split", {c, b.constant("sizes", i64({4, 4}, {2}))}, {attr_i("axis", 1)}, 2);
    ir::Node* mismatched = b.last_node();
    b.output(b.op("Add", {mismatched->output(0), mismatched->output(1)}));
    // Split along the other axis.
    b.op("Split", {c}, {attr_i("axis", 0)}, 2);
    ir::Node* other_axis = b.last_node();
    b.output(b.op("Sub", {other_axis->output(0), other_axis->output(1)}));
    // Exact inverse, but its outputs are graph outputs (their names must stay).
    b.op("Split", {c, b.constant("sizes2", i64({3, 5}, {2}))}, {attr_i("axis", 1)}, 2);
    b.output(b.last_node()->output(0));
    b.output(b.last_node()->output(1));
    // A slice taking one column of x and one of y.
    b.output(b.op("Slice",
                  {c, b.constant("s", i64({2}, {1})), b.constant("e", i64({4}, {1})), b.constant("a", i64({1}, {1}))}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 9))}, {"y", Datum::tensor(random_f32({2, 5}, 10))}});
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 0);
  EXPECT_EQ(r.ops_after.at("Split"), 3);
}

// torch.stack([a, b, c], dim).max(dim) exported as ReduceMax(Concat(Unsqueeze(x_i, k), axis k), [k]):
// Max(a, b, c); with every x_i a Transpose of one perm, Transpose(Max(y_i)). Min likewise.
TEST(ConcatSplitOptimizations, ReduceOverAStackBecomesAnElementwiseMax) {
  auto build = [](bool transposed, const char* reduce) {
    return [transposed, reduce] {
      ModelBuilder b(13);
      ir::Value* axis = b.constant("axis", i64({3}, {1}));
      std::vector<ir::Value*> pieces;
      for (int i = 0; i < 3; ++i) {
        ir::Value* x = b.input("x" + std::to_string(i), {1, 4, 5});
        if (transposed) x = b.op("Transpose", {x}, {attr_ints("perm", {0, 2, 1})});
        pieces.push_back(b.op("Unsqueeze", {x, axis}));
      }
      ir::Value* stack = b.op("Concat", pieces, {attr_i("axis", 3)});
      b.output(b.op(reduce, {stack}, {attr_ints("axes", {-1}), attr_i("keepdims", 0)}));
      return b.model();
    };
  };
  std::vector<std::pair<std::string, Datum>> feeds;
  for (int i = 0; i < 3; ++i) feeds.emplace_back("x" + std::to_string(i), Datum::tensor(random_f32({1, 4, 5}, 20 + unsigned(i))));
  PassCheck r = check_pass(kPasses, build(false, "ReduceMax"), feeds, 0.0, 0.0);
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Max", 1}}));
  r = check_pass(kPasses, build(true, "ReduceMin"), feeds, 0.0, 0.0);
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Min", 1}, {"Transpose", 1}}));
}

TEST(ConcatSplitOptimizations, KeepsReductionsThatAreNotOverTheStack) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* axis = b.constant("axis", i64({2}, {1}));
    ir::Value* x0 = b.input("x0", {2, 3});
    ir::Value* x1 = b.input("x1", {2, 3});
    ir::Value* stack = b.op("Concat", {b.op("Unsqueeze", {x0, axis}), b.op("Unsqueeze", {x1, axis})}, {attr_i("axis", 2)});
    b.output(b.op("ReduceMax", {stack}, {attr_ints("axes", {2}), attr_i("keepdims", 1)}));  // keeps the axis
    b.output(b.op("ReduceMax", {b.op("Concat", {x0, x1}, {attr_i("axis", 1)}), }, {attr_ints("axes", {1}), attr_i("keepdims", 0)}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"x0", Datum::tensor(random_f32({2, 3}, 30))}, {"x1", Datum::tensor(random_f32({2, 3}, 31))}});
  EXPECT_EQ(r.report.rewrites_of("ConcatSplitOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
