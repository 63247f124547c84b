// libFuzzer target: arbitrary bytes as an ONNX model, through the front end only, in Session::init's
// order: parsing, import (opsets, initializers, subgraphs with outer-scope names), the model gate
// (ir/model_verifier.h), type inference and the structural verifier.
// It links the small sdx_fuzz_frontend library (src/core, src/frontend, src/ir) instead of all of
// libsdx, so it builds in a fraction of onnx_model_fuzzer's time; that is what CI runs.
// onnx_model_fuzzer goes on to create sessions and run kernels.
//
//   bash scripts/fuzz.sh onnx_loader 60
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/onnx/onnx_loader.h"
#include "ir/model_verifier.h"
#include "ir/type_inference.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto model = sdx::onnx::load_model_bytes(bytes);
  if (!model.is_ok() || !model->graph) return 0;
  if (!sdx::ir::verify_model(*model).is_ok()) return 0;
  if (!sdx::ir::infer_types(*model->graph).is_ok()) return 0;
  (void)sdx::ir::verify(*model->graph);
  return 0;
}
