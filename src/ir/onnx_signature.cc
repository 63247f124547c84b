#include "ir/onnx_signature.h"

#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace sdx::ir {
namespace {

#define SDX_ONNX_LIMITS(ir, opset, ml) constexpr OnnxLimits kLimits{ir, opset, ml};
#define SDX_ONNX_SIGNATURE(domain, op, since, inputs, attrs, names)
#include "ir/schemas/onnx_signatures.inc"
#undef SDX_ONNX_SIGNATURE
#undef SDX_ONNX_LIMITS

constexpr OnnxSignature kSignatures[] = {
#define SDX_ONNX_LIMITS(ir, opset, ml)
#define SDX_ONNX_SIGNATURE(domain, op, since, inputs, attrs, names) {domain, op, since, inputs, attrs, names},
#include "ir/schemas/onnx_signatures.inc"
#undef SDX_ONNX_SIGNATURE
#undef SDX_ONNX_LIMITS
};

std::string table_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

// "domain::op" -> the op's rows in kSignatures (the table is sorted by domain, op, since_version).
const std::unordered_map<std::string, std::pair<int, int>>& index() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string, std::pair<int, int>>();
    const int n = static_cast<int>(std::size(kSignatures));
    for (int i = 0; i < n; ++i) {
      auto [it, fresh] = m->try_emplace(std::string(kSignatures[i].domain) + "::" + kSignatures[i].op, i, 0);
      ++it->second.second;
    }
    return m;
  }();
  return *map;
}

const std::pair<int, int>* rows_of(const std::string& op, const std::string& domain) {
  auto it = index().find(table_domain(domain) + "::" + op);
  return it == index().end() ? nullptr : &it->second;
}

// The name-th comma-separated field of `list` ("" past the end).
std::string_view field(const char* list, int index) {
  std::string_view s(list);
  for (int i = 0; i < index; ++i) {
    const size_t comma = s.find(',');
    if (comma == std::string_view::npos) return {};
    s.remove_prefix(comma + 1);
  }
  return s.substr(0, s.find(','));
}

const char* kind_name(TypeInfo::Kind k) {
  switch (k) {
    case TypeInfo::Kind::kTensor:
      return "a tensor";
    case TypeInfo::Kind::kSequence:
      return "a sequence";
    case TypeInfo::Kind::kOptional:
      return "an optional";
    case TypeInfo::Kind::kMap:
      return "a map";
    case TypeInfo::Kind::kUnknown:
      break;
  }
  return "of unknown kind";
}

// Whether a value of kind k may be passed to an input of table kind letter `kind`.
bool kind_accepts(char kind, TypeInfo::Kind k) {
  switch (kind) {
    case 't':
      return k == TypeInfo::Kind::kTensor;
    case 's':
      return k == TypeInfo::Kind::kSequence;
    case 'p':
      return k == TypeInfo::Kind::kOptional;
    case 'm':
      return k == TypeInfo::Kind::kMap;
    default:
      return true;
  }
}

const char* kind_wanted(char kind) {
  switch (kind) {
    case 't':
      return "a tensor";
    case 's':
      return "a sequence";
    case 'p':
      return "an optional";
    case 'm':
      return "a map";
    default:
      return "any value";
  }
}

}  // namespace

const OnnxLimits& onnx_limits() { return kLimits; }

bool is_onnx_op(const std::string& op, const std::string& domain) { return rows_of(op, domain) != nullptr; }

const OnnxSignature* find_onnx_signature(const std::string& op, const std::string& domain, int opset) {
  const std::pair<int, int>* rows = rows_of(op, domain);
  if (!rows) return nullptr;
  const OnnxSignature* best = nullptr;
  for (int i = rows->first; i < rows->first + rows->second; ++i)
    if (kSignatures[i].since_version <= opset) best = &kSignatures[i];
  return best;
}

int first_onnx_version(const std::string& op, const std::string& domain) {
  const std::pair<int, int>* rows = rows_of(op, domain);
  return rows ? kSignatures[rows->first].since_version : 0;
}

Status check_onnx_signature(const Node& node, const OnnxSignature& sig) {
  const std::string who = node.describe();
  const int formal = static_cast<int>(std::strlen(sig.inputs) / 2);
  const bool variadic_tail = formal > 0 && (sig.inputs[2 * formal - 2] == 'V' || sig.inputs[2 * formal - 2] == 'v');
  if (node.num_inputs() > formal && !variadic_tail)
    return invalid_graph(who + " has " + std::to_string(node.num_inputs()) + " inputs; " + sig.op + "-" +
                         std::to_string(sig.since_version) + " takes at most " + std::to_string(formal));
  auto input_label = [&](int i, int f) {
    std::string label = "input " + std::to_string(i);
    const std::string_view name = field(sig.input_names, f);
    if (!name.empty()) label += " ('" + std::string(name) + "')";
    return label;
  };
  for (int f = 0; f < formal; ++f) {
    const char option = sig.inputs[2 * f];
    if (option == 'r' && f >= node.num_inputs())
      return invalid_graph(who + ": " + input_label(f, f) + " is required by " + sig.op + "-" +
                           std::to_string(sig.since_version) + " but missing (the node has " +
                           std::to_string(node.num_inputs()) + " inputs)");
    if (option == 'V' && f >= node.num_inputs())
      return invalid_graph(who + ": " + sig.op + " needs at least one " + input_label(f, f) + " input");
  }
  for (int i = 0; i < node.num_inputs(); ++i) {
    const int f = i < formal ? i : formal - 1;
    const char option = sig.inputs[2 * f], kind = sig.inputs[2 * f + 1];
    const Value* v = node.input(i);
    if (!v) {
      if (option == 'o') continue;
      return invalid_graph(who + ": " + input_label(i, f) + " is " +
                           (option == 'r' ? "required" : "part of a variadic list") +
                           " but given as \"\" (omitted); only optional inputs may be omitted");
    }
    const TypeInfo::Kind k = v->type().kind;
    if (k != TypeInfo::Kind::kUnknown && !kind_accepts(kind, k))
      return invalid_graph(who + ": " + input_label(i, f) + " '" + v->name() + "' is " + kind_name(k) + " but " +
                           sig.op + " takes " + kind_wanted(kind) + " there");
  }
  for (int a = 0;; ++a) {
    const std::string_view name = field(sig.required_attributes, a);
    if (name.empty()) break;
    if (!node.attr(std::string(name)))
      return invalid_graph(who + ": required attribute '" + std::string(name) + "' of " + sig.op + "-" +
                           std::to_string(sig.since_version) + " is missing");
  }
  return Status::ok();
}

}  // namespace sdx::ir
