// libFuzzer target: arbitrary bytes as TensorProto / SequenceProto / OptionalProto
// (the ONNX test-data formats and every initializer form). Must never crash. Links only the small
// sdx_fuzz_frontend library (CMakeLists.txt); scripts/fuzz.sh tensor_proto 60.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/onnx/tensor_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)sdx::onnx::parse_tensor_proto(bytes);
  (void)sdx::onnx::parse_sequence_proto(bytes);
  (void)sdx::onnx::parse_optional_proto(bytes);
  return 0;
}
