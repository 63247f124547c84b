// OptimizerOptions: the user controls of the graph optimizer (the DSP document's
// ADR 0100), a field of runtime::SessionOptions. Environment variables overlay
// the fields when a session is created (see the README table):
//   SDX_OPTIMIZER_ENABLED=0            run no pass at all
//   SDX_OPTIMIZER_SKIP=A,B             skip the passes named A and B
//   SDX_OPTIMIZER_LOG_APPLIED=1        log every rewrite as "pass: before -> after" (stderr)
//   SDX_OPTIMIZER_MAX_ITERATIONS=N     rounds of the pipeline (default 3; stops early at a fixpoint)
//   SDX_OPTIMIZER_FP16=1               float16 weights for MatMul/Gemm/sdx.Linear (read directly) and Conv (Cast)
//   SDX_OPTIMIZER_INT8=1               int8 weight-only quantization (per-column scales) of MatMul/Gemm/sdx.Linear
//   SDX_OPTIMIZER_INT8=dynamic         the same int8 weights, and X quantized per row on every call (int8_dynamic)
//   SDX_VERIFY_EACH_PASS=1             type inference + the IR verifier after every pass (on in tests)
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
  static OptimizerOptions from_env(OptimizerOptions base);
};

}  // namespace sdx::opt
