// TypeInfo: the static type of a graph value: tensor (element type + optional
// shape with symbolic dims), sequence of T, or optional T.
//
//   TypeInfo t = TypeInfo::tensor(DType::kFloat32, {Dim::symbolic("batch"), Dim::fixed(3)});
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace sdx::ir {

struct Dim {
  int64_t value = -1;  // >= 0 when fixed
  std::string param;   // symbolic name when not fixed (may be empty: unknown)
  static Dim fixed(int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string name) { return Dim{-1, std::move(name)}; }
  bool is_fixed() const { return value >= 0; }
};

struct TypeInfo {
  enum class Kind : uint8_t { kUnknown, kTensor, kSequence, kOptional, kMap };
  Kind kind = Kind::kUnknown;
  DType elem = DType::kUndefined;           // for tensors
  std::optional<std::vector<Dim>> shape;    // for tensors; nullopt = unknown rank
  std::shared_ptr<TypeInfo> inner;          // for sequence/optional

  static TypeInfo tensor(DType t, std::optional<std::vector<Dim>> s = std::nullopt) {
    TypeInfo ti;
    ti.kind = Kind::kTensor;
    ti.elem = t;
    ti.shape = std::move(s);
    return ti;
  }
  // "tensor(float)", "seq(tensor(int64))", "optional(tensor(float))"
  std::string to_string() const;
  // "[batch, 3]" or "?" when rank unknown
  std::string shape_string() const;
};

}  // namespace sdx::ir
