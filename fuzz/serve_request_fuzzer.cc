// libFuzzer target: arbitrary bytes as a KServe v2 inference.ModelInferRequest (what sdx-serve's ModelInfer
// receives), decoded against a fixed small model's inputs and outputs exactly as the server does
// (src/serve/tensor_codec.h): every input checked and turned into a Value, the requested outputs checked,
// and the decoded values encoded back as a response. Must never crash, whatever the shapes, datatypes,
// byte counts or typed contents say. Links the decoder, the public Value and sdx_fuzz_frontend, not gRPC
// (cmake/serve.cmake); scripts/fuzz.sh serve_request 60. Seeds: fuzz/make_serve_corpus.py.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "kserve/grpc_service.pb.h"
#include "serve/tensor_codec.h"

namespace {

sdx::ValueInfo input(const char* name, sdx::ElementType type, const char* onnx_type, std::vector<int64_t> dims) {
  sdx::ValueInfo info;
  info.name = name;
  info.type = onnx_type;
  info.is_tensor = true;
  info.element_type = type;
  info.has_shape = true;
  for (int64_t d : dims) info.shape.push_back(sdx::Dim{d, d < 0 ? "N" : ""});
  return info;
}

// The model: a [N, 3] float, a [2] int64, an [N] string and a [2, 2] float16 input; two outputs.
const std::vector<sdx::ValueInfo>& model_inputs() {
  static const std::vector<sdx::ValueInfo> inputs = {
      input("a", sdx::ElementType::kFloat32, "tensor(float)", {-1, 3}),
      input("idx", sdx::ElementType::kInt64, "tensor(int64)", {2}),
      input("s", sdx::ElementType::kString, "tensor(string)", {-1}),
      input("h", sdx::ElementType::kFloat16, "tensor(float16)", {2, 2})};
  return inputs;
}

const std::vector<sdx::ValueInfo>& model_outputs() {
  static const std::vector<sdx::ValueInfo> outputs = {
      input("sum", sdx::ElementType::kFloat32, "tensor(float)", {-1, 3}),
      input("t", sdx::ElementType::kString, "tensor(string)", {-1})};
  return outputs;
}

}  // namespace

// protobuf logs every string field that is not UTF-8 (a parse failure, as gRPC's would be): not news here.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;  // gRPC answers INTERNAL for these
  sdx::Session::Feeds feeds;
  if (!sdx::serve::decode_inputs(request, model_inputs(), &feeds).is_ok()) return 0;
  std::vector<std::string> names;
  (void)sdx::serve::requested_outputs(request, model_outputs(), &names);
  // Encode what was decoded (the decoded inputs stand in for outputs): BYTES and raw paths both.
  std::vector<std::string> out_names;
  std::vector<sdx::Value> values;
  for (auto& [name, value] : feeds) {
    out_names.push_back(name);
    values.push_back(value);
  }
  inference::ModelInferResponse response;
  (void)sdx::serve::encode_outputs(out_names, values, &response);
  return 0;
}
