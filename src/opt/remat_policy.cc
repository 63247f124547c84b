#include "opt/remat_policy.h"

#include <algorithm>

#include "opt/rewrite_util.h"

namespace sdx::opt {

bool is_rematerializable(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain().empty() || n.num_outputs() != 1 || !n.output(0) || !n.subgraphs().empty()) return false;
  const std::string& op = n.op_type();
  if (op != "ConstantOfShape" && op != "Expand" && op != "Range" && op != "Tile") return false;
  for (const ir::Value* v : n.inputs()) {
    if (!v) continue;
    if (constant_value(v) || (v->is_graph_input() && v->owner() == &g)) continue;
    auto shape = static_shape(v);
    if (!shape) return false;
    if (std::find(shape->begin(), shape->end(), 0) != shape->end()) continue;  // empty
    int64_t numel = 1;
    for (int64_t d : *shape)
      if ((numel *= d) > kRematTinyInputElements) return false;
  }
  if (auto shape = static_shape(n.output(0))) {
    const DType t = n.output(0)->type().elem;
    if (t == DType::kUndefined || !dtype_is_byte_addressable(t)) return false;
    if (std::find(shape->begin(), shape->end(), 0) != shape->end()) return false;  // empty
    int64_t bytes = std::max(1, dtype_bits(t) / 8);
    for (int64_t d : *shape)
      if ((bytes *= d) >= kRematMinBytes) return true;
    return false;
  }
  return true;
}

bool has_far_gap(std::vector<int> positions) {
  std::sort(positions.begin(), positions.end());
  for (size_t i = 1; i < positions.size(); ++i)
    if (positions[i] - positions[i - 1] > kRematDistance) return true;
  return false;
}

}  // namespace sdx::opt
