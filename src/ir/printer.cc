#include "ir/printer.h"

namespace sdx::ir {
namespace {

// "y: float[N, 3]" when the type is known (shape only when known), else "y".
std::string typed_name(const Value* v) {
  if (!v) return "_";
  const TypeInfo& t = v->type();
  switch (t.kind) {
    case TypeInfo::Kind::kUnknown:
      return v->name();
    case TypeInfo::Kind::kTensor:
      return v->name() + ": " + dtype_name(t.elem) + (t.shape ? t.shape_string() : "");
    default:
      return v->name() + ": " + t.to_string();
  }
}

}  // namespace

std::string print_graph(const Graph& g, int indent) {
  std::string pad(static_cast<size_t>(indent), ' ');
  std::string s = pad + "graph " + g.name() + " (";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    s += (i ? ", " : "") + v->name() + ": " + v->type().to_string() + v->type().shape_string();
  }
  s += ") -> (";
  for (size_t i = 0; i < g.outputs().size(); ++i) s += (i ? ", " : "") + g.outputs()[i]->name();
  s += ")\n";
  for (const auto& n : g.nodes()) {
    std::string line = pad + "  ";
    for (int i = 0; i < n->num_outputs(); ++i) line += (i ? ", " : "") + typed_name(n->output(i));
    line += " = " + (n->domain().empty() ? "" : n->domain() + ".") + n->op_type() + "(";
    for (int i = 0; i < n->num_inputs(); ++i) line += (i ? ", " : "") + (n->input(i) ? n->input(i)->name() : "_");
    line += ")";
    if (!n->attributes().empty()) {
      line += " {";
      for (size_t i = 0; i < n->attributes().size(); ++i) line += (i ? ", " : "") + n->attributes()[i].name;
      line += "}";
    }
    s += line + "  # '" + n->name() + "'\n";
    for (const Graph* sg : n->subgraphs()) s += print_graph(*sg, indent + 4);
  }
  return s;
}

}  // namespace sdx::ir
