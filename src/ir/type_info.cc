#include "ir/type_info.h"

namespace sdx::ir {

std::string TypeInfo::to_string() const {
  switch (kind) {
    case Kind::kTensor: return std::string("tensor(") + dtype_name(elem) + ")";
    case Kind::kSequence: return "seq(" + (inner ? inner->to_string() : std::string("?")) + ")";
    case Kind::kOptional: return "optional(" + (inner ? inner->to_string() : std::string("?")) + ")";
    case Kind::kMap: return "map";
    case Kind::kUnknown: break;
  }
  return "unknown";
}

std::string TypeInfo::shape_string() const {
  if (!shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i) s += ", ";
    const Dim& d = (*shape)[i];
    s += d.is_fixed() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
  }
  return s + "]";
}

}  // namespace sdx::ir
