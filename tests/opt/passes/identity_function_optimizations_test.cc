#include "../pass_test_util.h"

namespace sdx::test {
namespace {

TEST(IdentityFunctionOptimizations, RemovesIdentityDropoutSelfCastAndNoOpReshape) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* a = b.op("Identity", {x});
    ir::Value* d = b.op("Dropout", {a});
    ir::Value* c = b.op("Cast", {d}, {attr_i("to", 1)});
    ir::Value* r = b.op("Reshape", {c, b.constant("shape", i64({2, 3}, {2}))});
    b.output(b.op("Relu", {r}));
    return b.model();
  };
  PassCheck r = check_pass({"IdentityFunctionOptimizations", "UnusedFunctionOptimizations"}, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 1))}});
  EXPECT_EQ(r.report.rewrites_of("IdentityFunctionOptimizations"), 4);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Relu", 1}}));
}

TEST(IdentityFunctionOptimizations, KeepsGraphOutputsAndDisabledOptimizerDoesNothing) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4});
    b.output(b.op("Identity", {b.op("Relu", {x})}));  // the output's name must survive
    return b.model();
  };
  PassCheck r = check_pass({"IdentityFunctionOptimizations"}, build, {{"x", Datum::tensor(random_f32({4}, 2))}});
  EXPECT_EQ(r.report.rewrites_of("IdentityFunctionOptimizations"), 0);

  runtime::SessionOptions off;
  off.optimizer.enabled = false;
  auto s = runtime::Session::create(build(), off);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ((*s)->optimization().total_rewrites(), 0);
  EXPECT_FALSE((*s)->optimization().enabled);
}

}  // namespace
}  // namespace sdx::test
