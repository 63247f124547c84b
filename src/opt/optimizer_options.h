// OptimizerOptions: the user controls of the graph optimizer (the DSP document's
// ADR 0100), a field of runtime::SessionOptions. Environment variables overlay
// the fields when a session is created (see the README table):
//   SDX_OPTIMIZER_ENABLED=0            run no pass at all
//   SDX_OPTIMIZER_SKIP=A,B             skip the passes named A and B
//   SDX_OPTIMIZER_LOG_APPLIED=1        log every rewrite as "pass: before -> after" (stderr)
//   SDX_OPTIMIZER_MAX_ITERATIONS=N     rounds of the pipeline (default 3; stops early at a fixpoint)
//   SDX_OPTIMIZER_FP16=1               pre-cast float weights of MatMul/Gemm/Conv to float16
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
  // Tests (and SDX_VERIFY_EACH_PASS=1): run the IR verifier after every pass (a failure names the pass).
  bool verify_each_pass = false;

  bool skips(const std::string& pass) const;
  static OptimizerOptions from_env(OptimizerOptions base);
};

}  // namespace sdx::opt
