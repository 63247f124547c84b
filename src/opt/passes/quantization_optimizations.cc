// QuantizationOptimizations (pass 23): precision rewrites of weights and quantize/dequantize pairs.
//
// FP16 weight pre-casting, only with OptimizerOptions::fp16 (SDX_OPTIMIZER_FP16=1):
//   MatMul(x, W) / Gemm(x, W, ...) / Conv(x, W, ...), W a float32 constant of >= kFp16MinElements
//   elements read only as input 1 of such nodes, every finite |w| <= 65504 (float16's largest)
//     -> W16 = float16 initializer (round to nearest even), W' = Cast(W16, to=FLOAT) placed before the
//        first reader, every reader reads W'; W's float32 data is dropped.
//   The weights are stored at half the size; results change by float16 rounding of the weights
//   (relative 2^-11 per weight), which is why it is opt-in. Each weight is one reported rewrite.
//
// Quantize/dequantize round trip, always:
//   QuantizeLinear(DequantizeLinear(q, s, z), s, z) -> q
//   with s and z the same constants in both (same tensor values; z absent in both or present in both),
//   the same axis and block_size, q of type int8/uint8/int16/uint16 equal to QuantizeLinear's output
//   type, s float32 with every |s| in [FLT_MIN, FLT_MAX / 2^18] and no precision/output_dtype
//   attributes. Exact: DequantizeLinear gives y = fl((q - z) * s) with |q - z| < 2^17; then
//   fl(y / s) = (q - z)(1 + d), |d| <= 2^-23, is within 2^-6 of the integer q - z, so rounding gives
//   it back and adding z lands in range without saturating.
// The other direction, DequantizeLinear(QuantizeLinear(x)), rounds x and is NOT folded. A
// DequantizeLinear of a constant int8 weight feeding MatMul is left alone too: the weight stays
// small, dequantized per run.
// Order: last before the backend pass (2400), after MatMulChainOptimizations folded constant weights.
#include <cfloat>
#include <cmath>
#include <unordered_set>

#include "core/float16.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr int64_t kFp16MinElements = 1024;
constexpr float kFp16Max = 65504.f;

bool reads_weight_only(const ir::Graph& g, const ir::Value* w) {
  if (g.is_output(w) || w->users().empty()) return false;
  for (const ir::Node* u : w->users()) {
    if (u->owner() != &g || !u->domain().empty()) return false;
    if (u->op_type() != "MatMul" && u->op_type() != "Gemm" && u->op_type() != "Conv") return false;
    for (int i = 0; i < u->num_inputs(); ++i)
      if (u->input(i) == w && i != 1) return false;
  }
  return true;
}

bool precast_weight(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  if (!ctx.options().fp16) return false;
  ir::Value* w = n.input(1);
  const Tensor* t = constant_value(w);
  if (!t || t->dtype() != DType::kFloat32 || t->numel() < kFp16MinElements || !reads_weight_only(g, w)) return false;
  const float* p = t->data<float>();
  for (int64_t i = 0; i < t->numel(); ++i)
    if (std::isfinite(p[i]) && std::fabs(p[i]) > kFp16Max) return false;
  Tensor half = Tensor::allocate(DType::kFloat16, t->shape()).value();
  for (int64_t i = 0; i < t->numel(); ++i) half.data<Float16>()[i] = Float16::from_float(p[i]);
  ir::Value* w16 = g.add_constant(w->name() + "_fp16", std::move(half));
  ir::Node* cast =
      g.add_node("Cast", "", g.unique_name(w->name() + "_cast"), {w16}, {g.unique_name(w->name() + "_f32")});
  cast->set_opset(n.opset());
  cast->add_attribute(attr_int("to", dtype_to_onnx(DType::kFloat32)));
  cast->output(0)->mutable_type() = w->type();
  // Before the first reader in execution order, so the sort leaves everything else where it is.
  std::unordered_set<const ir::Node*> readers(w->users().begin(), w->users().end());
  for (const auto& m : g.nodes())
    if (readers.count(m.get())) {
      g.move_node_before(cast, m.get());
      break;
    }
  ctx.applied(
      n, "float32 weight '" + w->name() + "' " + t->shape().to_string() + " -> float16 initializer + Cast(to FLOAT)");
  g.replace_all_uses(w, cast->output(0));
  w->clear_initializer();
  return true;
}

bool attrs_match(const ir::Node& a, const ir::Node& b, const char* name, int64_t def) {
  return a.attr_int(name, def) == b.attr_int(name, def);
}

// Same constant tensor (or both absent).
bool same_constant(const ir::Value* a, const ir::Value* b) {
  if (!a || !b) return !a && !b;
  if (a == b) return true;
  const Tensor* x = constant_value(a);
  const Tensor* y = constant_value(b);
  return x && y && same_tensor(*x, *y);
}

bool quantize_of_dequantize(ir::Graph& g, ir::Node& q_node, PassContext& ctx) {
  ir::Node* dq = producer_of(q_node.input(0), "DequantizeLinear");
  if (!dq || !dq->input(0)) return false;
  ir::Value* q = dq->input(0);
  const DType qt = q->type().elem;
  if (qt != DType::kInt8 && qt != DType::kUint8 && qt != DType::kInt16 && qt != DType::kUint16) return false;
  if (q_node.output(0)->type().elem != qt) return false;
  if (q_node.attr("precision") || dq->attr("output_dtype")) return false;
  if (q_node.attr("output_dtype") && q_node.attr_int("output_dtype", 0) != dtype_to_onnx(qt)) return false;
  if (!attrs_match(*dq, q_node, "axis", 1) || !attrs_match(*dq, q_node, "block_size", 0)) return false;
  const ir::Value* s_dq = dq->input(1);
  const ir::Value* s_q = q_node.input(1);
  const ir::Value* z_dq = dq->num_inputs() > 2 ? dq->input(2) : nullptr;
  const ir::Value* z_q = q_node.num_inputs() > 2 ? q_node.input(2) : nullptr;
  if (!same_constant(s_dq, s_q) || !same_constant(z_dq, z_q)) return false;
  const Tensor* s = constant_value(s_q);
  if (!s || s->dtype() != DType::kFloat32 || s->numel() == 0) return false;
  if (z_q) {
    const Tensor* z = constant_value(z_q);
    if (!z || z->dtype() != qt) return false;
  } else if (qt != DType::kUint8) {
    return false;  // without a zero point QuantizeLinear produces uint8
  }
  const float* sp = s->data<float>();
  for (int64_t i = 0; i < s->numel(); ++i) {
    const float a = std::fabs(sp[i]);
    if (!(a >= FLT_MIN && a <= FLT_MAX / 262144.f)) return false;  // also rejects NaN
  }
  return forward_output(g, &q_node, q) && ctx.applied(q_node, "QuantizeLinear(DequantizeLinear(q, s, z), s, z) -> q");
}

class QuantizationOptimizations final : public PatternPass {
 public:
  QuantizationOptimizations() {
    add_rule({"fp16 weight pre-cast", {"MatMul", "Gemm", "Conv"}, precast_weight});
    add_rule({"QuantizeLinear(DequantizeLinear(q)) -> q", {"QuantizeLinear"}, quantize_of_dequantize});
  }
  const char* name() const override { return "QuantizationOptimizations"; }
  PassCategory category() const override { return PassCategory::kPrecision; }
};

const PassRegistrar kRegistrar(2300, [] { return std::make_unique<QuantizationOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
