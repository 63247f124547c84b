// The tensor datatypes of the KServe v2 protocol ("FP32", "INT64", "BYTES", ...) and sdx's element types.
//
//   sdx::ElementType t;
//   if (!serve::parse_datatype("FP32", &t)) ...          // t == sdx::ElementType::kFloat32
//   serve::datatype_name(sdx::ElementType::kInt64);       // "INT64"; nullptr for a type KServe lacks
//   serve::datatype_element_bytes(t);                     // 4; 0 for BYTES (variable-size elements)
#pragma once

#include <cstdint>
#include <string_view>

#include "sdx/element_type.h"

namespace sdx::serve {

// The KServe name of an element type, or nullptr when the protocol has none (complex, float8, int4, ...).
const char* datatype_name(ElementType type);

// The element type of a KServe datatype name; false for a name the protocol does not define.
bool parse_datatype(std::string_view name, ElementType* out);

// Bytes per element of a fixed-size datatype; 0 for BYTES (kString), whose elements vary in size.
int64_t datatype_element_bytes(ElementType type);

}  // namespace sdx::serve
