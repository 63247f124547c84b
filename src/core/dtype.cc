#include "core/dtype.h"

#include <string>

namespace sdx {
namespace {
struct DTypeInfo {
  const char* name;
  int bits;
  bool is_float;
};
constexpr DTypeInfo kInfo[] = {
#define SDX_DTYPE(name, onnx, bits, str, is_float) {str, bits, is_float},
#include "sdx/dtype_defs.inc"
#undef SDX_DTYPE
};
constexpr int kOnnxCodes[] = {
#define SDX_DTYPE(name, onnx, bits, str, is_float) onnx,
#include "sdx/dtype_defs.inc"
#undef SDX_DTYPE
};
constexpr bool codes_match_enum() {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kOnnxCodes[i] != i) return false;
  return true;
}
static_assert(codes_match_enum(), "dtype_defs.inc must list types in ONNX code order");
}  // namespace

std::optional<DType> dtype_from_onnx(int code) {
  if (code <= 0 || code >= kNumDTypes) return std::nullopt;
  return static_cast<DType>(code);
}

const char* dtype_name(DType t) { return kInfo[static_cast<int>(t)].name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 1; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  return std::nullopt;
}

int dtype_bits(DType t) { return kInfo[static_cast<int>(t)].bits; }
bool dtype_is_float(DType t) { return kInfo[static_cast<int>(t)].is_float; }

bool dtype_is_signed_int(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kInt4: case DType::kInt2:
      return true;
    default:
      return false;
  }
}

bool dtype_is_unsigned_int(DType t) {
  switch (t) {
    case DType::kUint8: case DType::kUint16: case DType::kUint32: case DType::kUint64:
    case DType::kUint4: case DType::kUint2:
      return true;
    default:
      return false;
  }
}

bool dtype_is_byte_addressable(DType t) {
  int b = dtype_bits(t);
  return b >= 8 && t != DType::kString;
}

size_t dtype_storage_bytes(DType t, int64_t n) {
  // Saturates at SIZE_MAX instead of wrapping, so an absurd element count can never
  // look like a small buffer to the length checks that follow.
  const size_t count = n < 0 ? 0 : static_cast<size_t>(n);
  const int bits = dtype_bits(t);
  const size_t unit = t == DType::kString ? sizeof(std::string) : static_cast<size_t>(bits >= 8 ? bits / 8 : bits);
  size_t total;
  if (__builtin_mul_overflow(count, unit, &total)) return SIZE_MAX;
  return (t == DType::kString || bits >= 8) ? total : total / 8 + (total % 8 != 0);
}

}  // namespace sdx
