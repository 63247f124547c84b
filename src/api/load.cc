#include "api/load.h"

#include "frontend/onnx/onnx_loader.h"

namespace sdx::api {

Result<std::unique_ptr<runtime::Session>> load_session_file(const std::string& path, runtime::SessionOptions options) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_file(path), "");
  auto s = runtime::Session::create(std::move(model), std::move(options));
  if (!s.is_ok()) return s.status().with_context("model '" + path + "'");
  return s;
}

Result<std::unique_ptr<runtime::Session>> load_session_bytes(const std::string& bytes, runtime::SessionOptions options) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(bytes), "");
  return runtime::Session::create(std::move(model), std::move(options));
}

}  // namespace sdx::api
