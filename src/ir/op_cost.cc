#include "ir/op_cost.h"

namespace sdx::ir {
namespace {

const Shape* at(const std::vector<const Shape*>& v, size_t i) { return i < v.size() ? v[i] : nullptr; }

double numel(const Shape* s) { return s ? static_cast<double>(s->numel()) : 0.0; }

}  // namespace

double flops_matmul(const Node&, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out) {
  const Shape* a = at(in, 0);
  const Shape* y = at(out, 0);
  if (!a || !y || a->rank() == 0) return 0;
  return 2.0 * numel(y) * static_cast<double>((*a)[a->rank() - 1]);
}

double flops_gemm(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out) {
  const Shape* a = at(in, 0);
  const Shape* y = at(out, 0);
  if (!a || !y || a->rank() != 2) return 0;
  const int64_t k = node.attr_int("transA", 0) ? (*a)[0] : (*a)[1];
  return 2.0 * numel(y) * static_cast<double>(k);
}

double flops_conv(const Node&, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out) {
  const Shape* w = at(in, 1);
  const Shape* y = at(out, 0);
  if (!w || !y || w->rank() == 0 || (*w)[0] == 0) return 0;
  return 2.0 * numel(y) * numel(w) / static_cast<double>((*w)[0]);
}

double flops_conv_transpose(const Node&, const std::vector<const Shape*>& in, const std::vector<const Shape*>&) {
  const Shape* x = at(in, 0);
  const Shape* w = at(in, 1);
  if (!x || !w || w->rank() == 0 || (*w)[0] == 0) return 0;
  return 2.0 * numel(x) * numel(w) / static_cast<double>((*w)[0]);
}

double flops_attention(const Node&, const std::vector<const Shape*>& in, const std::vector<const Shape*>&) {
  const Shape* q = at(in, 0);
  const Shape* k = at(in, 1);
  if (!q || !k || (k->rank() != 3 && k->rank() != 4)) return 0;
  const int64_t skv = k->rank() == 4 ? (*k)[2] : (*k)[1];
  return 4.0 * numel(q) * static_cast<double>(skv);
}

}  // namespace sdx::ir
