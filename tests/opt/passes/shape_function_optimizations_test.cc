#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"ShapeFunctionOptimizations", "UnusedFunctionOptimizations"};

// x: [batch, 3, 8] with a symbolic batch; y: [2, 5].
ir::Model shape_queries(bool with_batch_query) {
  ModelBuilder b;
  std::vector<ir::Dim> dims{ir::Dim::symbolic("batch"), ir::Dim::fixed(3), ir::Dim::fixed(8)};
  ir::Value* x = b.graph().add_input("x", ir::TypeInfo::tensor(DType::kFloat32, dims));
  ir::Value* y = b.input("y", {2, 5});
  ir::Value* shape = b.op("Shape", {x});
  auto as_float = [&](ir::Value* v) { return b.op("Cast", {v}, {attr_i("to", 1)}); };
  // Gather(Shape(x), 2) = 8 although the batch is symbolic.
  ir::Value* last = as_float(b.op("Gather", {shape, b.constant("two", i64({2}, {}))}));
  // Gather(Shape(x), [-2, -1]) = [3, 8]; Slice(Shape(x), 1, INT64_MAX) = [3, 8].
  ir::Value* pair = as_float(b.op("Gather", {shape, b.constant("neg", i64({-2, -1}, {2}))}));
  ir::Value* sliced =
      as_float(b.op("Slice", {shape, b.constant("s", i64({1}, {1})), b.constant("e", i64({INT64_MAX}, {1}))}));
  // Size(y) = 10, Shape(y, start=1) = [5], Size(Shape(x)) = rank 3.
  ir::Value* size = as_float(b.op("Size", {y}));
  ir::Value* tail = as_float(b.op("Shape", {y}, {attr_i("start", 1)}));
  ir::Value* rank = as_float(b.op("Size", {shape}));
  ir::Value* scalars = b.op("Add", {b.op("Add", {last, size}), rank});
  ir::Value* vectors = b.op("Add", {b.op("Add", {pair, sliced}), tail});
  b.output(b.op("Mul", {b.op("ReduceSum", {x}, {attr_i("keepdims", 0)}), scalars}));
  b.output(vectors);
  if (with_batch_query) b.output(as_float(b.op("Gather", {shape, b.constant("zero", i64({0}, {1}))})));
  return b.model();
}

TEST(ShapeFunctionOptimizations, FoldsFixedDimsEvenWithSymbolicBatch) {
  for (int64_t batch : {1, 4}) {
    PassCheck r =
        check_pass(kPasses, [] { return shape_queries(false); },
                   {{"x", Datum::tensor(random_f32({batch, 3, 8}, 1))}, {"y", Datum::tensor(random_f32({2, 5}, 2))}});
    EXPECT_EQ(r.report.rewrites_of("ShapeFunctionOptimizations"), 6);
    EXPECT_EQ(r.ops_after.count("Shape"), 0u);  // every reader of Shape(x) folded, so it went too
    EXPECT_EQ(r.ops_after.count("Gather"), 0u);
    EXPECT_EQ(r.ops_after.count("Size"), 0u);
  }
}

TEST(ShapeFunctionOptimizations, KeepsQueriesOfSymbolicDims) {
  PassCheck r =
      check_pass(kPasses, [] { return shape_queries(true); },
                 {{"x", Datum::tensor(random_f32({5, 3, 8}, 3))}, {"y", Datum::tensor(random_f32({2, 5}, 4))}});
  EXPECT_EQ(r.report.rewrites_of("ShapeFunctionOptimizations"), 6);
  EXPECT_EQ(r.ops_after.at("Shape"), 1);   // read by the batch Gather
  EXPECT_EQ(r.ops_after.at("Gather"), 1);  // Gather(Shape(x), [0]): the batch is only known at run time
}

TEST(ShapeFunctionOptimizations, KeepsGraphOutputs) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* shape = b.op("Shape", {x});
    b.output(shape);  // its name must stay
    b.output(b.op("Size", {x}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({2, 3}, 5))}});
  EXPECT_EQ(r.report.rewrites_of("ShapeFunctionOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
