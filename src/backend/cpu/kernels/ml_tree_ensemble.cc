// TreeEnsemble (ai.onnx.ml opset 5): the unified tree ensemble. Attributes are parsed
// into the shared ml::TreeModel (backend/cpu/kernels/util/ml_tree.h), validated once at load time,
// then every row walks every tree and the leaf weights are aggregated per target.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/ml_tree.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// A numeric tensor attribute as doubles (empty when absent).
Result<std::vector<double>> tensor_attr_doubles(const ir::Node& node, const std::string& name) {
  std::vector<double> out;
  const ir::Attribute* a = node.attr(name);
  if (!a) return out;
  if (a->type == ir::AttrType::kFloats) return std::vector<double>(a->floats.begin(), a->floats.end());
  if (!a->t.defined()) return invalid_argument("TreeEnsemble: attribute '" + name + "' must be a tensor");
  const Tensor& t = a->t;
  out.resize(static_cast<size_t>(t.numel()));
  SDX_RETURN_IF_ERROR(dispatch<SDX_NUMERIC_TYPES>(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, double>) out[static_cast<size_t>(i)] = p[i];
      else if constexpr (std::is_integral_v<T>) out[static_cast<size_t>(i)] = static_cast<double>(p[i]);
      else out[static_cast<size_t>(i)] = static_cast<double>(to_f32(p[i]));
    }
    return Status::ok();
  }, "TreeEnsemble attribute '" + name + "'"), "");
  return out;
}

class TreeEnsembleKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_RETURN_IF_ERROR(parse(node), "TreeEnsemble");
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 1 && x.rank() != 2)
      return invalid_argument("TreeEnsemble: X must be [N, F] (or [F]), got " + x.type_string());
    const int64_t rows = x.rank() == 2 ? x.shape().dim(0) : 1;
    const int64_t feats = x.shape().dim(x.rank() - 1);
    if (model_.max_feature >= feats)
      return invalid_argument("TreeEnsemble: the trees use feature " + std::to_string(model_.max_feature) +
                              " but X " + x.type_string() + " has only " + std::to_string(feats) + " features");
    const int64_t nt = model_.n_targets;
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape{rows, nt}), "");
    return dispatch<SDX_FLOAT_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const double extreme = std::is_same_v<T, double> ? std::numeric_limits<double>::max()
                             : std::is_same_v<T, float> ? static_cast<double>(std::numeric_limits<float>::max())
                             : std::is_same_v<T, Float16> ? 65504.0 : 3.3895313892515355e38;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      std::vector<double> row(static_cast<size_t>(feats)), out(static_cast<size_t>(nt));
      std::vector<uint8_t> seen;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t f = 0; f < feats; ++f) {
          const T v = px[r * feats + f];
          if constexpr (std::is_same_v<T, double>) row[static_cast<size_t>(f)] = v;
          else row[static_cast<size_t>(f)] = static_cast<double>(to_f32(v));
        }
        model_.predict_row(row.data(), out.data(), seen, extreme);
        for (int64_t t = 0; t < nt; ++t) {
          if constexpr (std::is_same_v<T, double>) py[r * nt + t] = out[static_cast<size_t>(t)];
          else py[r * nt + t] = from_f32<T>(static_cast<float>(out[static_cast<size_t>(t)]));
        }
      }
      return Status::ok();
    }, "TreeEnsemble");
  }

 private:
  Status parse(const ir::Node& node) {
    ml::TreeModel& m = model_;
    m.n_targets = node.attr_int("n_targets", -1);
    const int64_t agg = node.attr_int("aggregate_function", 1);
    const int64_t post = node.attr_int("post_transform", 0);
    if (agg < 0 || agg > 3) return invalid_argument("aggregate_function must be in [0, 3], got " + std::to_string(agg));
    if (post < 0 || post > 4) return invalid_argument("post_transform must be in [0, 4], got " + std::to_string(post));
    m.aggregate = static_cast<ml::Aggregate>(agg);
    m.post = static_cast<ml::PostTransform>(post);

    const std::vector<int64_t> features = node.attr_ints("nodes_featureids");
    const std::vector<int64_t> true_ids = node.attr_ints("nodes_truenodeids");
    const std::vector<int64_t> false_ids = node.attr_ints("nodes_falsenodeids");
    const std::vector<int64_t> true_leafs = node.attr_ints("nodes_trueleafs");
    const std::vector<int64_t> false_leafs = node.attr_ints("nodes_falseleafs");
    const std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
    SDX_ASSIGN_OR_RETURN(std::vector<double> splits, tensor_attr_doubles(node, "nodes_splits"), "");
    SDX_ASSIGN_OR_RETURN(std::vector<double> modes, tensor_attr_doubles(node, "nodes_modes"), "");
    SDX_ASSIGN_OR_RETURN(std::vector<double> weights, tensor_attr_doubles(node, "leaf_weights"), "");
    SDX_ASSIGN_OR_RETURN(std::vector<double> members, tensor_attr_doubles(node, "membership_values"), "");
    const std::vector<int64_t> targets = node.attr_ints("leaf_targetids");

    const size_t nn = features.size();
    auto same_len = [&](size_t n, const char* what) -> Status {
      if (n != nn)
        return invalid_argument(std::string(what) + " has " + std::to_string(n) + " entries but nodes_featureids has " +
                                std::to_string(nn));
      return Status::ok();
    };
    SDX_RETURN_IF_ERROR(same_len(true_ids.size(), "nodes_truenodeids"), "");
    SDX_RETURN_IF_ERROR(same_len(false_ids.size(), "nodes_falsenodeids"), "");
    SDX_RETURN_IF_ERROR(same_len(true_leafs.size(), "nodes_trueleafs"), "");
    SDX_RETURN_IF_ERROR(same_len(false_leafs.size(), "nodes_falseleafs"), "");
    SDX_RETURN_IF_ERROR(same_len(splits.size(), "nodes_splits"), "");
    SDX_RETURN_IF_ERROR(same_len(modes.size(), "nodes_modes"), "");
    if (!missing.empty()) SDX_RETURN_IF_ERROR(same_len(missing.size(), "nodes_missing_value_tracks_true"), "");
    if (weights.size() != targets.size())
      return invalid_argument("leaf_weights has " + std::to_string(weights.size()) + " entries but leaf_targetids has " +
                              std::to_string(targets.size()));

    // Leaves: one (target, weight) entry each.
    m.entry_target = targets;
    m.entry_weight = weights;
    m.leaf_begin.resize(targets.size() + 1);
    for (size_t i = 0; i <= targets.size(); ++i) m.leaf_begin[i] = static_cast<int64_t>(i);

    // Membership sets, in the order BRANCH_MEMBER nodes appear, NaN-delimited.
    size_t mpos = 0;
    m.nodes.resize(nn);
    for (size_t i = 0; i < nn; ++i) {
      ml::TreeNode& n = m.nodes[i];
      if (modes[i] < 0 || modes[i] > 6) return invalid_argument("nodes_modes[" + std::to_string(i) + "] must be in [0, 6]");
      n.mode = static_cast<ml::Mode>(static_cast<int>(modes[i]));
      n.feature = features[i];
      n.split = splits[i];
      n.missing_tracks_true = !missing.empty() && missing[i] != 0;
      n.true_ref = true_leafs[i] ? ~true_ids[i] : true_ids[i];
      n.false_ref = false_leafs[i] ? ~false_ids[i] : false_ids[i];
      if ((true_leafs[i] && true_ids[i] < 0) || (false_leafs[i] && false_ids[i] < 0) || true_ids[i] < 0 ||
          false_ids[i] < 0)
        return invalid_argument("node " + std::to_string(i) + " has a negative branch id");
      if (n.mode == ml::Mode::kMember) {
        n.member_begin = static_cast<int64_t>(m.members.size());
        while (mpos < members.size() && !std::isnan(members[mpos])) m.members.push_back(members[mpos++]);
        if (mpos >= members.size())
          return invalid_argument("membership_values has fewer NaN-delimited sets than BRANCH_MEMBER nodes");
        ++mpos;  // the NaN delimiter
        n.member_end = static_cast<int64_t>(m.members.size());
        std::sort(m.members.begin() + n.member_begin, m.members.end());
      }
    }
    for (int64_t root : node.attr_ints("tree_roots")) {
      if (root < 0 || static_cast<size_t>(root) >= nn)
        return invalid_argument("tree_roots entry " + std::to_string(root) + " is out of range [0, " +
                                std::to_string(nn) + ")");
      const ml::TreeNode& n = m.nodes[static_cast<size_t>(root)];
      // A tree that is a single leaf: both branches name the same leaf.
      const bool leaf_only = n.true_ref < 0 && n.false_ref < 0 && n.true_ref == n.false_ref;
      m.roots.push_back(leaf_only ? n.true_ref : root);
    }
    if (m.n_targets < 1) return invalid_argument("n_targets must be set to a value >= 1");
    return m.validate();
  }

  ml::TreeModel model_;
};

const backend::KernelRegistrar kTreeEnsemble(
    {"TreeEnsemble", "ai.onnx.ml", 1, backend::kAnyOpset, backend::kernel_factory<TreeEnsembleKernel>()});

}  // namespace
}  // namespace sdx::cpu
