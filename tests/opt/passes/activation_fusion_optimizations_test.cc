// ActivationFusionOptimizations: the exporters' GELU / SiLU / hard-swish arithmetic becomes one
// ONNX op. Equivalence: optimized vs unoptimized on random inputs in [-5, 5), rtol 1e-5, atol
// 1e-6 (GELU rounds once instead of six times); SiLU and hard swish within the same tolerance.
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "ActivationFusionOptimizations";

Tensor scalar(float v) { return f32({v}, {}); }

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -5.f, 5.f)); }

TEST(ActivationFusionOptimizations, GeluErfFormsInEveryOperandOrder) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4, 8});
    // PyTorch: Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5)
    ir::Value* e1 = b.op("Erf", {b.op("Div", {x, b.constant("sqrt2", scalar(1.4142135f))})});
    ir::Value* y1 = b.op(
        "Mul", {b.op("Mul", {x, b.op("Add", {e1, b.constant("one", scalar(1.f))})}), b.constant("half", scalar(0.5f))});
    // 0.5 first, constants on the left, Mul by 1/sqrt2: Mul(Mul(0.5, x), Add(1, Erf(Mul(x, 0.7071))))
    ir::Value* e2 = b.op("Erf", {b.op("Mul", {x, b.constant("rsqrt2", scalar(0.70710677f))})});
    ir::Value* y2 = b.op("Mul", {b.op("Mul", {b.constant("half2", scalar(0.5f)), x}),
                                 b.op("Add", {b.constant("one2", scalar(1.f)), e2})});
    // 0.5 on the bracket, rank-1 constants: Mul(x, Mul(Add(Erf(Div(x, 1.41421)), 1), 0.5))
    ir::Value* e3 = b.op("Erf", {b.op("Div", {x, b.constant("sqrt2b", f32({1.41421f}, {1}))})});
    ir::Value* y3 = b.op("Mul", {x, b.op("Mul", {b.op("Add", {e3, b.constant("one3", f32({1.f}, {1}))}),
                                                 b.constant("half3", f32({0.5f}, {1}))})});
    b.output(y1);
    b.output(y2);
    b.output(y3);
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({4, 8}, 1)}});
  EXPECT_EQ(r.report.rewrites_of(kPass), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Gelu", 3}}));
}

TEST(ActivationFusionOptimizations, GeluTanhFormWithPowAndWithProducts) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3, 16});
    auto tanh_gelu = [&](ir::Value* cube, const std::string& k) {
      ir::Value* inner = b.op("Add", {x, b.op("Mul", {b.constant("c" + k, scalar(0.044715f)), cube})});
      ir::Value* t = b.op("Tanh", {b.op("Mul", {inner, b.constant("s" + k, scalar(0.7978846f))})});
      ir::Value* half_x = b.op("Mul", {b.constant("h" + k, scalar(0.5f)), x});
      return b.op("Mul", {half_x, b.op("Add", {b.constant("o" + k, scalar(1.f)), t})});
    };
    b.output(tanh_gelu(b.op("Pow", {x, b.constant("three", scalar(3.f))}), "1"));
    b.output(tanh_gelu(b.op("Mul", {x, b.op("Mul", {x, x})}), "2"));
    // JAX (Magika): the constant innermost, x * (x * (x * 0.044715)), and Mul(x, Mul(B, 0.5)) outside.
    ir::Value* t3 = b.op("Mul", {x, b.op("Mul", {x, b.op("Mul", {x, b.constant("c3", scalar(0.044715f))})})});
    ir::Value* th3 = b.op("Tanh", {b.op("Mul", {b.op("Add", {x, t3}), b.constant("s3", scalar(0.7978846f))})});
    b.output(b.op("Mul", {x, b.op("Mul", {b.op("Add", {th3, b.constant("o3", scalar(1.f))}), b.constant("h3", scalar(0.5f))})}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({3, 16}, 2)}});
  EXPECT_EQ(r.report.rewrites_of(kPass), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Gelu", 3}}));
}

TEST(ActivationFusionOptimizations, SiluAndHardSwish) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {2, 3, 5});
    b.output(b.op("Mul", {x, b.op("Sigmoid", {x})}));
    b.output(b.op("Mul", {b.op("HardSigmoid", {x}, {attr_f("alpha", 1.f / 6.f), attr_f("beta", 0.5f)}), x}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 3, 5}, 3)}});
  EXPECT_EQ(r.report.rewrites_of(kPass), 2);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"HardSwish", 1}, {"Swish", 1}}));
}

// Hard swish with Clip (Paddle / TF exports): x * Clip(x + 3, 0, 6) / 6 in its forms (Div or Mul by
// 1/6, operands in either order, Clip bounds as inputs or, before opset 11, attributes); a Clip to
// other bounds, or an Add of another value, is left alone.
TEST(ActivationFusionOptimizations, HardSwishWithClip) {
  auto build = [](int opset) {
    return [opset] {
      ModelBuilder b(opset);
      ir::Value* x = b.input("x", {2, 3, 5});
      auto clip = [&](ir::Value* v, float lo, float hi, const std::string& k) {
        if (opset < 11) return b.op("Clip", {v}, {attr_f("min", lo), attr_f("max", hi)});
        return b.op("Clip", {v, b.constant("lo" + k, scalar(lo)), b.constant("hi" + k, scalar(hi))});
      };
      ir::Value* c1 = clip(b.op("Add", {x, b.constant("three1", scalar(3.f))}), 0.f, 6.f, "1");
      b.output(b.op("Div", {b.op("Mul", {x, c1}), b.constant("six1", scalar(6.f))}));
      ir::Value* c2 = clip(b.op("Add", {b.constant("three2", scalar(3.f)), x}), 0.f, 6.f, "2");
      b.output(b.op("Mul", {b.constant("sixth2", scalar(1.f / 6.f)), b.op("Mul", {c2, x})}));
      // Left alone: bounds 0..5, and x + 3 of another value.
      ir::Value* c3 = clip(b.op("Add", {x, b.constant("three3", scalar(3.f))}), 0.f, 5.f, "3");
      b.output(b.op("Div", {b.op("Mul", {x, c3}), b.constant("six3", scalar(6.f))}));
      ir::Value* y = b.op("Relu", {x});
      ir::Value* c4 = clip(b.op("Add", {y, b.constant("three4", scalar(3.f))}), 0.f, 6.f, "4");
      b.output(b.op("Div", {b.op("Mul", {x, c4}), b.constant("six4", scalar(6.f))}));
      return b.model();
    };
  };
  for (int opset : {9, 13}) {
    SCOPED_TRACE(opset);
    PassCheck r = check_pass({kPass}, build(opset), {{"x", feed({2, 3, 5}, 6)}});
    EXPECT_EQ(r.report.rewrites_of(kPass), 2);
    EXPECT_EQ(r.ops_after.at("HardSwish"), 2);
    EXPECT_EQ(r.ops_after.at("Clip"), 2);
  }
}

TEST(ActivationFusionOptimizations, LeavesLookalikesAlone) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4, 8});
    ir::Value* y = b.input("y", {4, 8});
    // Wrong constant (1.5 is not sqrt 2).
    ir::Value* e1 = b.op("Erf", {b.op("Div", {x, b.constant("c15", scalar(1.5f))})});
    b.output(b.op("Mul", {b.op("Mul", {x, b.op("Add", {e1, b.constant("one", scalar(1.f))})}),
                          b.constant("half", scalar(0.5f))}));
    // The Erf value is also a graph output: the pattern's inside is needed.
    ir::Value* e2 = b.op("Erf", {b.op("Div", {x, b.constant("sqrt2", scalar(1.4142135f))})});
    b.output(e2);
    b.output(b.op("Mul", {b.op("Mul", {x, b.op("Add", {e2, b.constant("one2", scalar(1.f))})}),
                          b.constant("half2", scalar(0.5f))}));
    // 0.5 of shape [1, 1, 1] broadcasts x [4, 8] to [1, 4, 8]: not Gelu(x).
    ir::Value* e3 = b.op("Erf", {b.op("Div", {x, b.constant("sqrt2b", scalar(1.4142135f))})});
    b.output(b.op("Mul", {b.op("Mul", {x, b.op("Add", {e3, b.constant("one3", scalar(1.f))})}),
                          b.constant("half3", f32({0.5f}, {1, 1, 1}))}));
    // The tanh form with 0.044715 x^2 (two x's), and with two constants: not GELU.
    auto tanh_form = [&](ir::Value* t, const std::string& k) {
      ir::Value* th = b.op("Tanh", {b.op("Mul", {b.op("Add", {x, t}), b.constant("s" + k, scalar(0.7978846f))})});
      return b.op("Mul", {x, b.op("Mul", {b.op("Add", {th, b.constant("o" + k, scalar(1.f))}), b.constant("h" + k, scalar(0.5f))})});
    };
    b.output(tanh_form(b.op("Mul", {x, b.op("Mul", {x, b.constant("q1", scalar(0.044715f))})}), "q1"));
    b.output(tanh_form(b.op("Mul", {b.op("Mul", {x, b.op("Mul", {x, x})}), b.op("Mul", {b.constant("q2", scalar(0.044715f)),
                                                                                       b.constant("q3", scalar(1.f))})}),
                       "q2"));
    // Sigmoid of another value: a gate, not SiLU. HardSigmoid with the default alpha 0.2.
    b.output(b.op("Mul", {x, b.op("Sigmoid", {y})}));
    b.output(b.op("Mul", {x, b.op("HardSigmoid", {x})}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({4, 8}, 4)}, {"y", feed({4, 8}, 5)}});
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
  EXPECT_EQ(r.ops_after.count("Gelu"), 0u);
}

}  // namespace
}  // namespace sdx::test
