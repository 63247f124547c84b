// libFuzzer target: arbitrary bytes as a .sdx bundle, through everything a bundle load does before a
// session exists: the container checks (frontend/bundle/bundle_format.h: checksum, version, every length
// and count), the optimized graph's import with its node opsets, the model gate and type inference.
// Links the small sdx_fuzz_frontend library, like onnx_loader_fuzzer.
//
//   bash scripts/fuzz.sh bundle 600

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_loader.h"
#include "frontend/onnx/onnx_writer.h"
#include "ir/model_verifier.h"
#include "ir/type_inference.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto b = sdx::bundle::read_bundle(bytes);
  if (!b.is_ok() && bytes.size() >= 24) {
    // A mutation almost never keeps the checksum right, which would stop the fuzzer at the first check:
    // seal it again so the structure behind the checksum is fuzzed too (the raw bytes were tried above).
    const uint64_t h = sdx::bundle::checksum(std::string_view(bytes).substr(0, bytes.size() - 16));
    std::memcpy(bytes.data() + bytes.size() - 16, &h, 8);
    std::memcpy(bytes.data() + bytes.size() - 8, "SDXBEND!", 8);
    b = sdx::bundle::read_bundle(bytes);
  }
  if (!b.is_ok()) return 0;
  // Written back, a bundle that was accepted reads the same (the format has one encoding).
  const std::string rewritten = sdx::bundle::write_bundle(*b);
  auto again = sdx::bundle::read_bundle(rewritten);
  if (!again.is_ok() || again->graph != b->graph || again->weights != b->weights ||
      again->node_opsets != b->node_opsets || again->packed.size() != b->packed.size())
    __builtin_trap();
  // The graph's initializers borrow from the weights section, as a loaded bundle's do.
  auto model = sdx::onnx::load_model_bytes(b->graph, sdx::onnx::ExternalData{"", b->weights, nullptr});
  if (!model.is_ok() || !model->graph) return 0;
  if (!sdx::onnx::apply_node_opsets(*model, b->node_opsets).is_ok()) return 0;
  if (!sdx::ir::verify_model(*model).is_ok()) return 0;
  (void)sdx::ir::infer_types(*model->graph);
  return 0;
}
