#include "serve/datatype.h"

#include <iterator>

namespace sdx::serve {
namespace {

struct DatatypeRow {
  const char* name;
  ElementType type;
  int64_t element_bytes;  // 0: variable-size (BYTES)
};

// The protocol's datatypes (KServe v2 "Tensor Data Types") and the sdx element type of each.
constexpr DatatypeRow kDatatypes[] = {
    {"BOOL", ElementType::kBool, 1},      {"UINT8", ElementType::kUint8, 1},
    {"UINT16", ElementType::kUint16, 2},  {"UINT32", ElementType::kUint32, 4},
    {"UINT64", ElementType::kUint64, 8},  {"INT8", ElementType::kInt8, 1},
    {"INT16", ElementType::kInt16, 2},    {"INT32", ElementType::kInt32, 4},
    {"INT64", ElementType::kInt64, 8},    {"FP16", ElementType::kFloat16, 2},
    {"FP32", ElementType::kFloat32, 4},   {"FP64", ElementType::kFloat64, 8},
    {"BF16", ElementType::kBFloat16, 2},  {"BYTES", ElementType::kString, 0},
};

const DatatypeRow* find_type(ElementType type) {
  for (const DatatypeRow& row : kDatatypes)
    if (row.type == type) return &row;
  return nullptr;
}

}  // namespace

const char* datatype_name(ElementType type) {
  const DatatypeRow* row = find_type(type);
  return row ? row->name : nullptr;
}

bool parse_datatype(std::string_view name, ElementType* out) {
  for (const DatatypeRow& row : kDatatypes) {
    if (name == row.name) {
      *out = row.type;
      return true;
    }
  }
  return false;
}

int64_t datatype_element_bytes(ElementType type) {
  const DatatypeRow* row = find_type(type);
  return row ? row->element_bytes : 0;
}

}  // namespace sdx::serve
