// Every rewrite here is exact except Log(Exp(x)) -> x, where the original has the rounding of exp
// and log: with x in [-1, 1] that is below 1e-6 absolute, inside the default check_pass tolerance
// (rtol 1e-5, atol 1e-6).
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"PeepholeOptimizations"};

TEST(PeepholeOptimizations, CollapsesIdempotentAndInverseUnaryPairs) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y1 = b.op("Relu", {b.op("Relu", {x})});    // -> Relu(x)
    ir::Value* y2 = b.op("Abs", {b.op("Abs", {x})});      // -> Abs(x)
    ir::Value* y3 = b.op("Abs", {b.op("Relu", {x})});     // -> Relu(x)
    ir::Value* y4 = b.op("Neg", {b.op("Neg", {x})});      // -> x
    ir::Value* y5 = b.op("Log", {b.op("Exp", {x})});      // -> x
    ir::Value* y6 = b.op("Floor", {b.op("Floor", {x})});  // -> Floor(x)
    ir::Value* d = b.op("Cast", {x}, {attr_i("to", static_cast<int64_t>(DType::kFloat64))});
    ir::Value* y7 = b.op("Cast", {d}, {attr_i("to", 1)});  // float -> double -> float: x
    b.output(b.op("Sum", {y1, y2, y3, y4, y5, y6, y7}));
    ir::Value* m = b.op("Greater", {x, b.constant("zero", f32({0}, {}))});
    b.output(b.op("Not", {b.op("Not", {m})}));                    // Not(Not(m)) is a graph output: kept
    b.output(b.op("Xor", {b.op("Not", {b.op("Not", {m})}), m}));  // -> Xor(m, m)
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3}, 1))}});
  EXPECT_EQ(r.report.rewrites_of("PeepholeOptimizations"), 8);
  EXPECT_EQ(r.ops_after,
            (std::map<std::string, int>{
                {"Abs", 1}, {"Floor", 1}, {"Greater", 1}, {"Not", 2}, {"Relu", 2}, {"Sum", 1}, {"Xor", 1}}));
}

TEST(PeepholeOptimizations, KeepsPairsThatAreNotIdentities) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4});
    ir::Value* i = b.input("i", {4}, DType::kInt32);
    ir::Value* y1 = b.op("Exp", {b.op("Log", {x})});   // not x for x <= 0
    ir::Value* y2 = b.op("Relu", {b.op("Abs", {x})});  // Relu(NaN) is 0
    ir::Value* h = b.op("Cast", {x}, {attr_i("to", static_cast<int64_t>(DType::kFloat16))});
    ir::Value* y3 = b.op("Cast", {h}, {attr_i("to", 1)});  // float16 rounds
    ir::Value* f = b.op("Cast", {i}, {attr_i("to", 1)});
    ir::Value* y4 = b.op("Cast", {f}, {attr_i("to", static_cast<int64_t>(DType::kInt32))});  // int32 -> float rounds
    b.output(b.op("Sum", {y1, y2, y3}));
    b.output(b.op("Neg", {y4}));
    return b.model();
  };
  PassCheck r = check_pass(
      kPass, build,
      {{"x", Datum::tensor(f32({0.1f, 1.f, 0.3f, 2.f}, {4}))}, {"i", Datum::tensor(i32({16777217, -3, 0, 7}, {4}))}});
  EXPECT_EQ(r.report.rewrites_of("PeepholeOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
