// Shared tree-ensemble model for the ONNX-ML tree operators (ml family).
//
// Interior nodes and leaves live in flat arrays. A child reference is a node index
// (>= 0) or ~leaf_index (< 0). A leaf owns a range of (target, weight) entries, so the
// one-entry leaves of TreeEnsemble and the multi-target leaves of the older
// TreeEnsembleRegressor/Classifier share one representation. validate() checks every
// index and rejects cycles, after which predict() always terminates.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"

namespace sdx::cpu::ml {

enum class Mode : uint8_t { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };
enum class Aggregate : uint8_t { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
enum class PostTransform : uint8_t { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };

struct TreeNode {
  int64_t feature = 0;
  double split = 0.0;
  int64_t true_ref = 0, false_ref = 0;  // node index or ~leaf index
  int64_t member_begin = 0, member_end = 0;  // sorted range in TreeModel::members
  Mode mode = Mode::kLeq;
  bool missing_tracks_true = false;
};

struct TreeModel {
  std::vector<TreeNode> nodes;
  std::vector<int64_t> leaf_begin{0};  // leaf i owns entries [leaf_begin[i], leaf_begin[i + 1])
  std::vector<int64_t> entry_target;
  std::vector<double> entry_weight;
  std::vector<int64_t> roots;  // node index or ~leaf index, one per tree
  std::vector<double> members;
  std::vector<double> base_values;  // empty or n_targets values added after aggregation
  int64_t n_targets = 1;
  Aggregate aggregate = Aggregate::kSum;
  PostTransform post = PostTransform::kNone;
  int64_t max_feature = -1;  // largest feature id used, set by validate()

  int64_t num_leaves() const { return static_cast<int64_t>(leaf_begin.size()) - 1; }

  // Checks references, targets and acyclicity; computes max_feature.
  Status validate() {
    const int64_t nn = static_cast<int64_t>(nodes.size()), nl = num_leaves();
    if (n_targets < 1) return invalid_argument("n_targets must be >= 1, got " + std::to_string(n_targets));
    for (int64_t t : entry_target)
      if (t < 0 || t >= n_targets)
        return invalid_argument("leaf target id " + std::to_string(t) + " is out of range [0, " +
                                std::to_string(n_targets) + ")");
    if (!base_values.empty() && static_cast<int64_t>(base_values.size()) != n_targets)
      return invalid_argument("base_values has " + std::to_string(base_values.size()) + " values, expected " +
                              std::to_string(n_targets));
    auto check_ref = [&](int64_t r, const char* what) -> Status {
      if (r >= 0 ? r >= nn : ~r >= nl)
        return invalid_argument(std::string(what) + " references " + (r >= 0 ? "node " : "leaf ") +
                                std::to_string(r >= 0 ? r : ~r) + " which does not exist");
      return Status::ok();
    };
    for (int64_t r : roots) SDX_RETURN_IF_ERROR(check_ref(r, "a tree root"), "");
    for (const TreeNode& n : nodes) {
      SDX_RETURN_IF_ERROR(check_ref(n.true_ref, "a true branch"), "");
      SDX_RETURN_IF_ERROR(check_ref(n.false_ref, "a false branch"), "");
    }
    // Iterative three-colour DFS from every root: 1 = on the current path, 2 = done.
    std::vector<uint8_t> state(nodes.size(), 0);
    std::vector<std::pair<int64_t, int>> stack;
    for (int64_t root : roots) {
      if (root < 0 || state[static_cast<size_t>(root)] == 2) continue;
      stack.push_back({root, 0});
      state[static_cast<size_t>(root)] = 1;
      while (!stack.empty()) {
        auto& [id, step] = stack.back();
        const TreeNode& n = nodes[static_cast<size_t>(id)];
        if (step == 0) {
          if (n.feature < 0) return invalid_argument("node " + std::to_string(id) + " has a negative feature id");
          max_feature = std::max(max_feature, n.feature);
        }
        if (step == 2) {
          state[static_cast<size_t>(id)] = 2;
          stack.pop_back();
          continue;
        }
        const int64_t child = step == 0 ? n.true_ref : n.false_ref;
        ++step;
        if (child < 0) continue;
        if (state[static_cast<size_t>(child)] == 1)
          return invalid_argument("the trees contain a cycle through node " + std::to_string(child));
        if (state[static_cast<size_t>(child)] == 0) {
          state[static_cast<size_t>(child)] = 1;
          stack.push_back({child, 0});
        }
      }
    }
    return Status::ok();
  }

  bool goes_true(const TreeNode& n, double v) const {
    if (std::isnan(v) && n.missing_tracks_true) return true;
    switch (n.mode) {
      case Mode::kLeq: return v <= n.split;
      case Mode::kLt: return v < n.split;
      case Mode::kGte: return v >= n.split;
      case Mode::kGt: return v > n.split;
      case Mode::kEq: return v == n.split;
      case Mode::kNeq: return v != n.split;
      case Mode::kMember:
        return std::binary_search(members.begin() + n.member_begin, members.begin() + n.member_end, v);
    }
    return false;
  }

  // The leaf reached by one row of features (caller guarantees max_feature < row length).
  int64_t leaf_for(int64_t root, const double* row) const {
    int64_t r = root;
    while (r >= 0) {
      const TreeNode& n = nodes[static_cast<size_t>(r)];
      r = goes_true(n, row[n.feature]) ? n.true_ref : n.false_ref;
    }
    return ~r;
  }

  // Aggregated, base-adjusted, transformed scores for one row into out[n_targets].
  // `extreme` is the output type's largest finite value (MIN/MAX targets no leaf reached).
  void predict_row(const double* row, double* out, std::vector<uint8_t>& seen, double extreme) const {
    const bool minmax = aggregate == Aggregate::kMin || aggregate == Aggregate::kMax;
    std::fill(out, out + n_targets, 0.0);
    if (minmax) seen.assign(static_cast<size_t>(n_targets), 0);
    for (int64_t root : roots) {
      const int64_t leaf = leaf_for(root, row);
      for (int64_t e = leaf_begin[static_cast<size_t>(leaf)]; e < leaf_begin[static_cast<size_t>(leaf) + 1]; ++e) {
        const int64_t t = entry_target[static_cast<size_t>(e)];
        const double w = entry_weight[static_cast<size_t>(e)];
        if (!minmax) {
          out[t] += w;
        } else if (!seen[static_cast<size_t>(t)]) {
          out[t] = w;
          seen[static_cast<size_t>(t)] = 1;
        } else {
          out[t] = aggregate == Aggregate::kMin ? std::min(out[t], w) : std::max(out[t], w);
        }
      }
    }
    if (aggregate == Aggregate::kAverage && !roots.empty())
      for (int64_t t = 0; t < n_targets; ++t) out[t] /= static_cast<double>(roots.size());
    if (minmax)  // targets no leaf reached: the ONNX reference leaves them at the type's extreme
      for (int64_t t = 0; t < n_targets; ++t)
        if (!seen[static_cast<size_t>(t)])
          out[t] = aggregate == Aggregate::kMin ? extreme : -extreme;
    if (!base_values.empty())
      for (int64_t t = 0; t < n_targets; ++t) out[t] += base_values[static_cast<size_t>(t)];
    apply_post_transform(out);
  }

  void apply_post_transform(double* v) const { apply_post(post, v, n_targets); }

  static void apply_post(PostTransform post, double* v, int64_t n) {
    switch (post) {
      case PostTransform::kNone: return;
      case PostTransform::kLogistic:
        for (int64_t i = 0; i < n; ++i) {
          const double e = 1.0 / (1.0 + std::exp(-std::fabs(v[i])));
          v[i] = v[i] < 0 ? 1.0 - e : e;
        }
        return;
      case PostTransform::kSoftmax: {
        const double mx = *std::max_element(v, v + n);
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += (v[i] = std::exp(v[i] - mx));
        for (int64_t i = 0; i < n; ++i) v[i] /= s;
        return;
      }
      case PostTransform::kSoftmaxZero: {  // zeros stay (scaled) zeros
        const double mx = *std::max_element(v, v + n);
        const double scale = std::exp(-mx);
        double s = 0;
        for (int64_t i = 0; i < n; ++i) {
          v[i] = (v[i] > 1e-7 || v[i] < -1e-7) ? std::exp(v[i] - mx) : v[i] * scale;
          s += v[i];
        }
        for (int64_t i = 0; i < n; ++i) v[i] = s == 0 ? 0.5 : v[i] / s;
        return;
      }
      case PostTransform::kProbit:
        for (int64_t i = 0; i < n; ++i) v[i] = 1.41421356 * erf_inv(v[i] * 2 - 1);
        return;
    }
  }

  // The approximation onnxruntime and the ONNX reference use.
  static double erf_inv(double x) {
    const double sgn = x < 0 ? -1.0 : 1.0;
    x = (1.0 - x) * (1.0 + x);
    if (x == 0) return 0;
    const double lg = std::log(x);
    const double a = 2.0 / (3.14159265358979323846 * 0.147) + 0.5 * lg;
    const double b = 1.0 / 0.147 * lg;
    return sgn * std::sqrt(-a + std::sqrt(a * a - b));
  }
};

}  // namespace sdx::cpu::ml
