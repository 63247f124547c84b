#include "api/load.h"

#include <fstream>
#include <sstream>

#include "api/bundle.h"
#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_loader.h"
#include "frontend/onnx/onnx_writer.h"

namespace sdx::api {

Result<std::unique_ptr<runtime::Session>> load_session_file(const std::string& path, runtime::SessionOptions options) {
  {
    std::ifstream f(path, std::ios::binary);
    char magic[8] = {};
    if (f && f.read(magic, 8) && bundle::looks_like_bundle(std::string(magic, 8))) {
      std::ostringstream ss;
      ss << f.rdbuf();
      auto s = load_bundle(std::string(magic, 8) + ss.str(), std::move(options));
      if (!s.is_ok()) return s.status().with_context("bundle '" + path + "'");
      return s;
    }
  }
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_file(path), "");
  auto s = runtime::Session::create(std::move(model), std::move(options));
  if (!s.is_ok()) return s.status().with_context("model '" + path + "'");
  return s;
}

Result<std::unique_ptr<runtime::Session>> load_session_bytes(const std::string& bytes, runtime::SessionOptions options) {
  if (bundle::looks_like_bundle(bytes)) return load_bundle(bytes, std::move(options));
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(bytes), "");
  return runtime::Session::create(std::move(model), std::move(options));
}

Result<ir::Model> load_model_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  if (!f || !f.read(magic, 8) || !bundle::looks_like_bundle(std::string(magic, 8))) return onnx::load_model_file(path);
  std::ostringstream ss;
  ss << f.rdbuf();
  SDX_ASSIGN_OR_RETURN(bundle::Bundle b, bundle::read_bundle(std::string(magic, 8) + ss.str()), "bundle '" + path + "'");
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(b.graph), "bundle '" + path + "'");
  SDX_RETURN_IF_ERROR(onnx::apply_node_opsets(model, b.node_opsets), "bundle '" + path + "'");
  return model;
}

}  // namespace sdx::api
