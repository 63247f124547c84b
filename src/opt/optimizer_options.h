// OptimizerOptions: the user controls of the graph optimizer (the DSP document's
// ADR 0100), a field of runtime::SessionOptions. Their environment variables (SDX_OPTIMIZER_*,
// SDX_VERIFY_EACH_PASS), defaults and ranges are rows of src/runtime/session_options.inc, read by
// SessionOptions::from_env when a session is created.
#pragma once

#include <string>
#include <vector>

namespace sdx::opt {

struct OptimizerOptions {
  bool enabled = true;
  std::vector<std::string> skip;  // pass names
  bool log_applied = false;
  int max_iterations = 3;
  bool fp16 = false;
  // Weight-only int8 with per-output-channel scales for MatMul/Gemm/sdx.Linear weights (wins over fp16
  // for those; QuantizationOptimizations).
  bool int8 = false;
  // With int8: those sdx.Linear also quantize X to 8 bits per row on every call and multiply in integers
  // (x_quant = "dynamic", onnxruntime's quantize_dynamic; AVX-512 VNNI where the CPU has it). Faster,
  // and less accurate than weight-only: the error now comes from X's rounding too.
  bool int8_dynamic = false;
  // Tests (and SDX_VERIFY_EACH_PASS=1): run the IR verifier after every pass (a failure names the pass).
  bool verify_each_pass = false;

  bool skips(const std::string& pass) const;
};

}  // namespace sdx::opt
