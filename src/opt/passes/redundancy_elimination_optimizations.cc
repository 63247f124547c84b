// RedundancyEliminationOptimizations (pass 12): the same value computed or stored twice under
// different identities (typical of exporters that emit one copy per consumer), and round trips.
//   initializers a, b with equal dtype, shape and bytes      -> every reader of b reads a
//   Constant nodes with equal attributes                      -> every reader of the second reads the first
//   Cast(Cast(x: T, to=U), to=T), T -> U exact for every value of T   -> x
//   Reshape/Flatten/Squeeze/Unsqueeze chain ending in a value of fully static shape S (no zero dims)
//                                                             -> Reshape(chain input, constant S)
// Exact casts (T -> U): bool to any numeric type; an integer type to any integer type holding its
// whole range and to a float type whose mantissa holds it (int8/uint8 -> float16/bfloat16,
// 16-bit ints -> float, 32-bit ints -> double); float16/bfloat16 -> float/double; float -> double.
// NaN payloads may become quiet NaNs; every other value comes back bit for bit.
// Graph outputs keep their names: a duplicate that is a graph output keeps existing, only its other
// readers move. Merging CSE-style identical nodes in general is pass 14's job.
// Order: before CommonSubexpressionElimination (1400): merged initializers make more nodes identical.
#include <unordered_map>

#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Every value of `from` is exactly representable in `to` (and converts back unchanged).
bool cast_is_exact(DType from, DType to) {
  if (from == to) return true;
  const int to_bits = dtype_bits(to);
  const bool to_plain_float =
      to == DType::kFloat16 || to == DType::kBFloat16 || to == DType::kFloat32 || to == DType::kFloat64;
  if (from == DType::kBool) return to_plain_float || (dtype_is_int(to) && dtype_is_byte_addressable(to));
  if (dtype_is_int(from)) {
    if (!dtype_is_byte_addressable(from) || !dtype_is_byte_addressable(to)) return false;  // packed 4/2-bit
    const int bits = dtype_bits(from);
    if (dtype_is_int(to)) {
      if (dtype_is_signed_int(from)) return dtype_is_signed_int(to) && to_bits >= bits;
      return dtype_is_signed_int(to) ? to_bits > bits : to_bits >= bits;
    }
    int mantissa = 0;  // significand bits including the implicit one
    switch (to) {
      case DType::kFloat16:
        mantissa = 11;
        break;
      case DType::kBFloat16:
        mantissa = 8;
        break;
      case DType::kFloat32:
        mantissa = 24;
        break;
      case DType::kFloat64:
        mantissa = 53;
        break;
      default:
        return false;
    }
    // |v| <= 2^mantissa is exact; a signed type of `bits` bits reaches 2^(bits-1).
    return dtype_is_signed_int(from) ? bits - 1 <= mantissa : bits <= mantissa;
  }
  if (from == DType::kFloat16 || from == DType::kBFloat16) return to == DType::kFloat32 || to == DType::kFloat64;
  if (from == DType::kFloat32) return to == DType::kFloat64;
  return false;
}

bool is_reshape_like(const ir::Node* n) {
  if (!n || !n->domain().empty()) return false;
  const std::string& op = n->op_type();
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

// A cheap fingerprint of a tensor's bytes (a few samples); equal tensors have equal fingerprints.
uint64_t fingerprint(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  const size_t n = t.nbytes();
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) { h = (h ^ c) * 1099511628211ull; };
  if (n <= 256) {
    for (size_t i = 0; i < n; ++i) mix(p[i]);
    return h;
  }
  for (size_t k = 0; k < 64; ++k) {
    const size_t at = (n - 4) / 63 * k;
    for (size_t i = 0; i < 4; ++i) mix(p[at + i]);
  }
  return h;
}

int merge_duplicate_initializers(ir::Graph& g, PassContext& ctx) {
  int merged = 0;
  // Candidates grouped by (dtype, shape, fingerprint); only values somebody reads.
  std::unordered_map<std::string, std::vector<ir::Value*>> groups;
  for (const auto& v : g.values()) {
    const Tensor* t = constant_value(v.get());
    if (!t || v->users().empty() || t->dtype() == DType::kString || !t->defined()) continue;
    std::string key = std::to_string(static_cast<int>(t->dtype())) + ":" + t->shape().to_string() + ":" +
                      std::to_string(fingerprint(*t));
    groups[key].push_back(v.get());
  }
  for (auto& [key, vals] : groups) {
    if (vals.size() < 2) continue;
    std::vector<ir::Value*> kept;
    for (ir::Value* v : vals) {
      ir::Value* same = nullptr;
      for (ir::Value* k : kept)
        if (same_tensor(k->initializer(), v->initializer())) {
          same = k;
          break;
        }
      if (!same) {
        kept.push_back(v);
        continue;
      }
      ctx.applied(*v->users().front(), "initializer '" + v->name() + "' duplicates '" + same->name() + "' -> merged");
      g.replace_all_uses(v, same);
      ++merged;
    }
  }
  return merged;
}

// Buckets Constant nodes that may be equal (same attribute names, tensor dtypes, shapes, fingerprints).
std::string constant_key(const ir::Node& n) {
  std::string key;
  for (const ir::Attribute& a : n.attributes()) {
    key += a.name + "/" + std::to_string(static_cast<int>(a.type)) + "/";
    if (a.type == ir::AttrType::kTensor && a.t.defined() && a.t.dtype() != DType::kString)
      key += std::to_string(static_cast<int>(a.t.dtype())) + a.t.shape().to_string() + std::to_string(fingerprint(a.t));
    else if (a.type == ir::AttrType::kInt)
      key += std::to_string(a.i);
    else if (a.type == ir::AttrType::kInts || a.type == ir::AttrType::kFloats)
      key += std::to_string(a.ints.size() + a.floats.size());
    key += ";";
  }
  return key;
}

int merge_duplicate_constant_nodes(ir::Graph& g, PassContext& ctx) {
  int merged = 0;
  std::unordered_map<std::string, std::vector<ir::Node*>> seen_by_key;
  std::vector<ir::Node*> snapshot;
  for (const auto& n : g.nodes()) snapshot.push_back(n.get());
  for (ir::Node* n : snapshot) {
    if (n->op_type() != "Constant" || !n->domain().empty() || n->num_outputs() != 1 || !n->output(0)) continue;
    std::vector<ir::Node*>& seen = seen_by_key[constant_key(*n)];
    ir::Node* same = nullptr;
    for (ir::Node* s : seen)
      if (same_attributes(*s, *n)) {
        same = s;
        break;
      }
    if (!same) {
      seen.push_back(n);
      continue;
    }
    if (n->output(0)->users().empty()) continue;
    ctx.applied(*n, "Constant duplicating '" + same->name() + "' -> merged");
    g.replace_all_uses(n->output(0), same->output(0));
    if (!g.is_output(n->output(0))) g.remove_node(n);
    ++merged;
  }
  return merged;
}

class RedundancyEliminationOptimizations final : public PatternPass {
 public:
  RedundancyEliminationOptimizations() {
    add_rule({"Cast(Cast(x)) exact round trip -> x", {"Cast"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                ir::Node* inner = producer_of(n.input(0), "Cast");
                if (!inner || !inner->input(0)) return false;
                const DType t = inner->input(0)->type().elem;
                const DType u = inner->output(0)->type().elem;
                if (t == DType::kUndefined || u == DType::kUndefined || n.output(0)->type().elem != t) return false;
                if (!cast_is_exact(t, u)) return false;
                return forward_output(g, &n, inner->input(0)) &&
                       ctx.applied(n,
                                   std::string("Cast(Cast(x: ") + dtype_name(t) + ", to " + dtype_name(u) + ")) -> x");
              }});
    add_rule({"Reshape-like chain -> Reshape(x, constant shape)",
              {"Reshape", "Flatten", "Squeeze", "Unsqueeze"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (!is_reshape_like(&n) || n.opset() < 5 || !n.input(0) || !is_reshape_like(n.input(0)->producer()))
                  return false;
                auto shape = static_shape(n.output(0));
                if (!shape) return false;
                for (int64_t d : *shape)
                  if (d == 0) return false;  // 0 in a Reshape shape means "copy the input dim"
                ir::Value* src = n.input(0);
                int links = 1;
                for (ir::Node* p = src->producer(); is_reshape_like(p) && p->input(0); p = src->producer()) {
                  src = p->input(0);
                  ++links;
                }
                std::vector<int64_t> rank{static_cast<int64_t>(shape->size())};
                Tensor t = Tensor::from_values(DType::kInt64, Shape(rank), shape->data());
                ir::Value* target = g.add_constant(n.name() + "_shape", std::move(t));
                const std::string what = n.op_type() + " ending a chain of " + std::to_string(links) +
                                         " reshape-like ops -> Reshape(x, " + dims_to_string(*shape) + ")";
                ctx.applied(n, what);
                fuse(g, {&n}, &n, "Reshape", "", 0, {src, target}, {});
                return true;
              }});
  }
  const char* name() const override { return "RedundancyEliminationOptimizations"; }
  PassCategory category() const override { return PassCategory::kCleanup; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    int n = merge_duplicate_initializers(g, ctx);
    n += merge_duplicate_constant_nodes(g, ctx);
    SDX_ASSIGN_OR_RETURN(int local, PatternPass::run(g, ctx), "");
    return n + local;
  }
};

const PassRegistrar kRegistrar("eliminate_redundancy", [] { return std::make_unique<RedundancyEliminationOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
