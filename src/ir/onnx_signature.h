// The ONNX spec's own signature of each operator version (ai.onnx and ai.onnx.ml): which inputs are
// required, optional or variadic, which value kinds they accept, which attributes are required; and
// the newest IR version and opsets sdx knows. The verifier's gate (ir/model_verifier.h) checks every
// imported node against it, so that passes and kernels never meet a required input given as "" or a
// sequence where a tensor belongs. The table is generated from the onnx package
// (tools/onnx_signatures.py -> ir/schemas/onnx_signatures.inc).
//
//   if (const OnnxSignature* s = find_onnx_signature("Reshape", "", 13))
//     SDX_RETURN_IF_ERROR(check_onnx_signature(node, *s), "");
#pragma once

#include <string>

#include "core/status.h"

namespace sdx::ir {

class Node;

struct OnnxLimits {
  int ir_version;  // the newest IR version the table's onnx knows
  int opset;       // the newest ai.onnx opset
  int ml_opset;    // the newest ai.onnx.ml opset
};
const OnnxLimits& onnx_limits();

struct OnnxSignature {
  const char* domain;
  const char* op;
  int since_version;
  // Two letters per formal input: option (r required, o optional, V variadic of at least one, v variadic)
  // then kind (t tensor, s sequence, p optional, m map, a several kinds).
  const char* inputs;
  const char* required_attributes;  // comma-separated
  const char* input_names;          // comma-separated
};

// True when `op` is an operator of the ONNX domain `domain` ("" or "ai.onnx", "ai.onnx.ml") in any opset.
bool is_onnx_op(const std::string& op, const std::string& domain);
// The newest version of `op` at or below `opset`; null when the domain's ops are not in the table, the
// op is unknown, or its first version is newer than `opset` (first_onnx_version says which).
const OnnxSignature* find_onnx_signature(const std::string& op, const std::string& domain, int opset);
// The opset that introduced `op` (0 when unknown).
int first_onnx_version(const std::string& op, const std::string& domain);

// Checks a node against its signature: no required or variadic input given as "", no more inputs than
// the signature takes, every required attribute present, and every input whose kind is known of a
// kind the input accepts. Failures are InvalidGraph naming the node, the input and the rule.
Status check_onnx_signature(const Node& node, const OnnxSignature& sig);

}  // namespace sdx::ir
