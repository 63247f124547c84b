// TreeEnsembleClassifier and TreeEnsembleRegressor (ai.onnx.ml opsets 1-3), the tree operators
// sklearn-onnx and onnxmltools emit. Their node lists (tree id, node id, mode string, children by node
// id) and leaf weight lists (tree id, node id, target or class, weight) are parsed into the shared
// ml::TreeModel (util/ml_tree.h), validated once at load. The classifier follows the ONNX reference:
// scores start at base_values; a model whose weights all name one class is binary (score s -> [-s, s]
// before LOGISTIC/SOFTMAX, [1 - s, s] otherwise); the label is the class of the largest probability.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/kernels/util/ml_tree.h"
#include "backend/kernel_registry.h"
#include "core/type_dispatch.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// Floats of `name`, or of `name`_as_tensor (opset 3), as doubles.
std::vector<double> doubles_attr(const ir::Node& node, const std::string& name) {
  if (const ir::Attribute* a = node.attr(name + "_as_tensor"); a && a->t.defined()) {
    std::vector<double> out(static_cast<size_t>(a->t.numel()));
    for (int64_t i = 0; i < a->t.numel(); ++i)
      out[static_cast<size_t>(i)] = a->t.dtype() == DType::kFloat64 ? a->t.data<double>()[i] : a->t.data<float>()[i];
    return out;
  }
  const std::vector<float> f = node.attr_floats(name);
  return std::vector<double>(f.begin(), f.end());
}

Result<ml::PostTransform> post_transform(const std::string& s) {
  static const std::pair<const char*, ml::PostTransform> kNames[] = {
      {"NONE", ml::PostTransform::kNone}, {"SOFTMAX", ml::PostTransform::kSoftmax},
      {"LOGISTIC", ml::PostTransform::kLogistic}, {"SOFTMAX_ZERO", ml::PostTransform::kSoftmaxZero},
      {"PROBIT", ml::PostTransform::kProbit}};
  for (const auto& [name, p] : kNames)
    if (s == name) return p;
  return invalid_argument("post_transform '" + s + "' is not NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT");
}

Result<ml::Mode> node_mode(const std::string& s) {
  static const std::pair<const char*, ml::Mode> kNames[] = {
      {"BRANCH_LEQ", ml::Mode::kLeq}, {"BRANCH_LT", ml::Mode::kLt}, {"BRANCH_GTE", ml::Mode::kGte},
      {"BRANCH_GT", ml::Mode::kGt},   {"BRANCH_EQ", ml::Mode::kEq}, {"BRANCH_NEQ", ml::Mode::kNeq}};
  for (const auto& [name, m] : kNames)
    if (s == name) return m;
  return invalid_argument("nodes_modes entry '" + s + "' is not a BRANCH_* mode or LEAF");
}

// The trees of the node attributes and the leaf entries of `prefix` ("target" or "class") into `m`.
Status parse_trees(const ir::Node& node, const std::string& prefix, ml::TreeModel& m) {
  const std::vector<int64_t> tree = node.attr_ints("nodes_treeids"), id = node.attr_ints("nodes_nodeids");
  const std::vector<int64_t> feature = node.attr_ints("nodes_featureids");
  const std::vector<int64_t> yes = node.attr_ints("nodes_truenodeids"), no = node.attr_ints("nodes_falsenodeids");
  const std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
  const std::vector<double> split = doubles_attr(node, "nodes_values");
  const ir::Attribute* modes = node.attr("nodes_modes");
  const size_t n = tree.size();
  for (const auto& [len, what] : {std::pair<size_t, const char*>{id.size(), "nodes_nodeids"}, {feature.size(), "nodes_featureids"},
                                  {yes.size(), "nodes_truenodeids"}, {no.size(), "nodes_falsenodeids"},
                                  {split.size(), "nodes_values"}, {modes ? modes->strings.size() : 0, "nodes_modes"}})
    if (len != n)
      return invalid_argument(std::string(what) + " has " + std::to_string(len) + " entries but nodes_treeids has " +
                              std::to_string(n));
  if (!missing.empty() && missing.size() != n)
    return invalid_argument("nodes_missing_value_tracks_true has " + std::to_string(missing.size()) + " entries, not " +
                            std::to_string(n));
  // Interior nodes and leaves numbered separately; ref_of maps (tree, node id) to a reference.
  std::map<std::pair<int64_t, int64_t>, int64_t> ref_of;
  std::vector<int64_t> leaf_count_of;  // entries per leaf
  for (size_t i = 0; i < n; ++i) {
    const bool leaf = modes->strings[i] == "LEAF";
    const int64_t ref = leaf ? ~static_cast<int64_t>(leaf_count_of.size()) : static_cast<int64_t>(m.nodes.size());
    if (!ref_of.emplace(std::make_pair(tree[i], id[i]), ref).second)
      return invalid_argument("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) + " is listed twice");
    if (leaf) {
      leaf_count_of.push_back(0);
      continue;
    }
    ml::TreeNode t;
    SDX_ASSIGN_OR_RETURN(t.mode, node_mode(modes->strings[i]), "");
    t.feature = feature[i];
    t.split = split[i];
    t.missing_tracks_true = !missing.empty() && missing[i] != 0;
    m.nodes.push_back(t);
  }
  for (size_t i = 0, interior = 0; i < n; ++i) {
    if (modes->strings[i] == "LEAF") continue;
    ml::TreeNode& t = m.nodes[interior++];
    for (auto [child, dst] : {std::pair<int64_t, int64_t*>{yes[i], &t.true_ref}, {no[i], &t.false_ref}}) {
      auto it = ref_of.find({tree[i], child});
      if (it == ref_of.end())
        return invalid_argument("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) +
                                " branches to node " + std::to_string(child) + ", which the tree does not have");
      *dst = it->second;
    }
  }
  // A tree's root is its first node in the list (as the ONNX reference reads it).
  std::map<int64_t, bool> seen_tree;
  for (size_t i = 0; i < n; ++i)
    if (!seen_tree[tree[i]]) {
      seen_tree[tree[i]] = true;
      m.roots.push_back(ref_of[{tree[i], id[i]}]);
    }
  const std::vector<int64_t> etree = node.attr_ints(prefix + "_treeids"), enode = node.attr_ints(prefix + "_nodeids");
  const std::vector<int64_t> eid = node.attr_ints(prefix + "_ids");
  const std::vector<double> weight = doubles_attr(node, prefix + "_weights");
  if (enode.size() != etree.size() || eid.size() != etree.size() || weight.size() != etree.size())
    return invalid_argument(prefix + "_treeids, _nodeids, _ids and _weights differ in length");
  std::vector<std::vector<std::pair<int64_t, double>>> entries(leaf_count_of.size());
  for (size_t e = 0; e < etree.size(); ++e) {
    auto it = ref_of.find({etree[e], enode[e]});
    if (it == ref_of.end() || it->second >= 0)
      return invalid_argument(prefix + " weight " + std::to_string(e) + " names node " + std::to_string(enode[e]) +
                              " of tree " + std::to_string(etree[e]) + ", which is not a leaf");
    entries[static_cast<size_t>(~it->second)].emplace_back(eid[e], weight[e]);
  }
  for (const auto& leaf : entries) {
    for (const auto& [target, w] : leaf) {
      m.entry_target.push_back(target);
      m.entry_weight.push_back(w);
    }
    m.leaf_begin.push_back(static_cast<int64_t>(m.entry_target.size()));
  }
  return Status::ok();
}

// X as doubles, row by row (float, double, int32, int64).
template <typename F>
Status for_each_row(const Tensor& x, int64_t max_feature, const char* op, F&& f) {
  if (x.rank() != 1 && x.rank() != 2) return invalid_argument(std::string(op) + ": X must be [N, F] or [F], got " + x.type_string());
  const int64_t rows = x.rank() == 2 ? x.shape().dim(0) : 1, feats = x.shape().dim(x.rank() - 1);
  if (max_feature >= feats)
    return invalid_argument(std::string(op) + ": the trees use feature " + std::to_string(max_feature) + " but X " +
                            x.type_string() + " has " + std::to_string(feats));
  std::vector<double> row(static_cast<size_t>(feats));
  return dispatch<float, double, int32_t, int64_t>(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < feats; ++c) row[static_cast<size_t>(c)] = static_cast<double>(p[r * feats + c]);
      f(r, row.data());
    }
    return Status::ok();
  }, op);
}

class TreeEnsembleRegressorKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    m_.n_targets = node.attr_int("n_targets", 1);
    const std::string agg = node.attr_string("aggregate_function", "SUM");
    if (agg == "SUM") m_.aggregate = ml::Aggregate::kSum;
    else if (agg == "AVERAGE") m_.aggregate = ml::Aggregate::kAverage;
    else if (agg == "MIN") m_.aggregate = ml::Aggregate::kMin;
    else if (agg == "MAX") m_.aggregate = ml::Aggregate::kMax;
    else return invalid_argument("TreeEnsembleRegressor: aggregate_function '" + agg + "' is not SUM, AVERAGE, MIN or MAX");
    SDX_ASSIGN_OR_RETURN(m_.post, post_transform(node.attr_string("post_transform", "NONE")), "TreeEnsembleRegressor");
    m_.base_values = doubles_attr(node, "base_values");
    SDX_RETURN_IF_ERROR(parse_trees(node, "target", m_), "TreeEnsembleRegressor");
    return m_.validate().with_context("TreeEnsembleRegressor");
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rows = x.rank() == 2 ? x.shape().dim(0) : 1;
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kFloat32, Shape{rows, m_.n_targets}), "");
    std::vector<double> out(static_cast<size_t>(m_.n_targets));
    std::vector<uint8_t> seen;
    float* py = y.data<float>();
    return for_each_row(x, m_.max_feature, "TreeEnsembleRegressor", [&](int64_t r, const double* row) {
      m_.predict_row(row, out.data(), seen, static_cast<double>(std::numeric_limits<float>::max()));
      for (int64_t t = 0; t < m_.n_targets; ++t) py[r * m_.n_targets + t] = static_cast<float>(out[static_cast<size_t>(t)]);
    });
  }

 private:
  ml::TreeModel m_;
};

class TreeEnsembleClassifierKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    int_labels_ = node.attr_ints("classlabels_int64s");
    if (const ir::Attribute* a = node.attr("classlabels_strings")) string_labels_ = a->strings;
    const size_t classes = std::max(int_labels_.size(), string_labels_.size());
    if (classes == 0) return invalid_argument("TreeEnsembleClassifier: classlabels_int64s or classlabels_strings is required");
    SDX_ASSIGN_OR_RETURN(post_, post_transform(node.attr_string("post_transform", "NONE")), "TreeEnsembleClassifier");
    base_ = doubles_attr(node, "base_values");
    const std::vector<int64_t> ids = node.attr_ints("class_ids");
    binary_ = !ids.empty() && std::all_of(ids.begin(), ids.end(), [&](int64_t c) { return c == ids.front(); });
    if (binary_ && classes == 1 && int_labels_.size() == 1 && int_labels_[0] != 1)
      return invalid_argument("TreeEnsembleClassifier: one int64 class label must be 1");
    if (binary_ && string_labels_.size() == 1)
      return invalid_argument("TreeEnsembleClassifier: a binary model needs two string class labels");
    columns_ = binary_ && classes == 1 ? 2 : static_cast<int64_t>(classes);
    m_.n_targets = std::max<int64_t>(columns_, ids.empty() ? 1 : *std::max_element(ids.begin(), ids.end()) + 1);
    if (m_.n_targets > columns_)
      return invalid_argument("TreeEnsembleClassifier: a class id exceeds the " + std::to_string(classes) + " class labels");
    if (!base_.empty() && base_.size() != 1 && static_cast<int64_t>(base_.size()) != columns_)
      return invalid_argument("TreeEnsembleClassifier: base_values has " + std::to_string(base_.size()) +
                              " values for " + std::to_string(columns_) + " classes");
    SDX_RETURN_IF_ERROR(parse_trees(node, "class", m_), "TreeEnsembleClassifier");
    return m_.validate().with_context("TreeEnsembleClassifier");
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rows = x.rank() == 2 ? x.shape().dim(0) : 1, n = columns_;
    const bool strings = !string_labels_.empty();
    SDX_ASSIGN_OR_RETURN(Tensor labels, ctx.allocate_output(0, strings ? DType::kString : DType::kInt64, Shape{rows}), "");
    SDX_ASSIGN_OR_RETURN(Tensor probs, ctx.allocate_output(1, DType::kFloat32, Shape{rows, n}), "");
    std::vector<double> s(static_cast<size_t>(n));
    std::vector<uint8_t> seen;
    return for_each_row(x, m_.max_feature, "TreeEnsembleClassifier", [&](int64_t r, const double* row) {
      m_.predict_row(row, s.data(), seen, 0.0);
      for (int64_t c = 0; c < n; ++c) s[static_cast<size_t>(c)] += base_.empty() ? 0.0 : base_[base_.size() == 1 ? 0 : c];
      if (binary_) {
        s[1] = s[0];
        s[0] = (post_ == ml::PostTransform::kNone || post_ == ml::PostTransform::kProbit) ? 1.0 - s[1] : -s[1];
      }
      ml::TreeModel::apply_post(post_, s.data(), n);
      const int64_t best = std::max_element(s.begin(), s.end()) - s.begin();
      for (int64_t c = 0; c < n; ++c) probs.data<float>()[r * n + c] = static_cast<float>(s[static_cast<size_t>(c)]);
      if (strings) labels.data<std::string>()[r] = string_labels_[static_cast<size_t>(best)];
      else labels.data<int64_t>()[r] = int_labels_.size() == 1 ? (best == 1 ? 1 : 0) : int_labels_[static_cast<size_t>(best)];
    });
  }

 private:
  ml::TreeModel m_;  // aggregate SUM, no base values, no post transform: the classifier applies those
  std::vector<int64_t> int_labels_;
  std::vector<std::string> string_labels_;
  std::vector<double> base_;
  ml::PostTransform post_ = ml::PostTransform::kNone;
  bool binary_ = false;
  int64_t columns_ = 0;
};

const backend::KernelRegistrar kRegressor({"TreeEnsembleRegressor", "ai.onnx.ml", 1, backend::kAnyOpset,
                                           backend::kernel_factory<TreeEnsembleRegressorKernel>()});
const backend::KernelRegistrar kClassifier({"TreeEnsembleClassifier", "ai.onnx.ml", 1, backend::kAnyOpset,
                                            backend::kernel_factory<TreeEnsembleClassifierKernel>()});

}  // namespace
}  // namespace sdx::cpu
