#include "opt/algebra_util.h"

#include <algorithm>

namespace sdx::opt {

const std::vector<ir::Dim>* known_dims(const ir::Value* v) {
  if (!v || v->type().kind != ir::TypeInfo::Kind::kTensor || !v->type().shape) return nullptr;
  return &*v->type().shape;
}

bool broadcasts_into(const std::vector<int64_t>& dims, const ir::Value* x) {
  const std::vector<ir::Dim>* xd = known_dims(x);
  if (!xd || dims.size() > xd->size()) return false;
  const size_t off = xd->size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    const ir::Dim& d = (*xd)[off + i];
    if (dims[i] != 1 && !(d.is_fixed() && d.value == dims[i])) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> broadcast_static(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[off + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) return std::nullopt;
      o = s[i];
    }
  }
  return out;
}

bool uses_numpy_broadcast(const ir::Node& n) {
  return n.domain().empty() && n.opset() >= 7 && !n.attr("broadcast") && !n.attr("axis");
}

void remove_if_unused(ir::Graph& g, ir::Node* n) {
  if (!n || n->removed()) return;
  for (const ir::Value* v : n->outputs())
    if (v && (!v->users().empty() || g.is_output(v))) return;
  g.remove_node(n);
}

}  // namespace sdx::opt
