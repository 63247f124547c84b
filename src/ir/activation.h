// The vocabulary of fused-op activations, from its one table (ir/activation_defs.inc):
//
//   const ir::ActivationInfo* a = ir::find_activation("leaky_relu");   // null: no such activation
//   a->kind == ir::ActivationKind::kLeakyRelu; a->params[0].attribute == "alpha"; a->params[0].default_value == 0.01f
//
//   for (const ir::ActivationInfo& a : ir::activations()) ...            // every row, in table order
//
// kNone ("none") is the identity: no row, no parameters.
#pragma once

#include <limits>
#include <span>
#include <string_view>

namespace sdx::ir {

enum class ActivationKind {
  kNone,
#define SDX_ACTIVATION(kind, name, op, min_params, max_params, a0, d0, a1, d1) kind,
#include "ir/activation_defs.inc"
#undef SDX_ACTIVATION
};

struct ActivationParam {
  std::string_view attribute;  // the ONNX attribute it is read from; "" when none
  float default_value = 0.f;
};

struct ActivationInfo {
  ActivationKind kind;
  std::string_view name;     // the `activation` attribute's value
  std::string_view onnx_op;  // the ONNX op it stands for
  int min_params, max_params;
  ActivationParam params[2];
};

inline constexpr ActivationInfo kActivations[] = {
#define SDX_ACTIVATION(kind, name, op, min_params, max_params, a0, d0, a1, d1) \
  {ActivationKind::kind, name, op, min_params, max_params, {{a0, d0}, {a1, d1}}},
#include "ir/activation_defs.inc"
#undef SDX_ACTIVATION
};

inline std::span<const ActivationInfo> activations() { return kActivations; }

// The row named `name`, or null ("none" has no row).
inline const ActivationInfo* find_activation(std::string_view name) {
  for (const ActivationInfo& a : kActivations)
    if (a.name == name) return &a;
  return nullptr;
}

// The row of `kind` (not kNone).
inline const ActivationInfo& activation_info(ActivationKind kind) { return kActivations[static_cast<int>(kind) - 1]; }

}  // namespace sdx::ir
