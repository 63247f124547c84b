#include "api/load.h"

#include <fstream>
#include <string_view>

#include "api/bundle.h"
#include "core/mapped_file.h"
#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_loader.h"
#include "frontend/onnx/onnx_writer.h"

namespace sdx::api {

namespace {

// Whether `path` starts with the bundle magic (false when it cannot be read: the ONNX loader says why).
bool is_bundle_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  return f && f.read(magic, 8) && bundle::looks_like_bundle(std::string(magic, 8));
}

}  // namespace

Result<std::unique_ptr<runtime::Session>> load_session_file(const std::string& path, runtime::SessionOptions options) {
  if (is_bundle_file(path)) {
    SDX_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path), "");
    const std::string_view bytes = file->bytes();
    auto s = load_bundle(bytes, std::move(file), std::move(options));
    if (!s.is_ok()) return s.status().with_context("bundle '" + path + "'");
    return s;
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
  if (!is_bundle_file(path)) return onnx::load_model_file(path);
  SDX_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path), "");
  SDX_ASSIGN_OR_RETURN(bundle::Bundle b, bundle::read_bundle(file->bytes()), "bundle '" + path + "'");
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(b.graph, onnx::ExternalData{"", b.weights, file}),
                       "bundle '" + path + "'");
  SDX_RETURN_IF_ERROR(onnx::apply_node_opsets(model, b.node_opsets), "bundle '" + path + "'");
  return model;
}

}  // namespace sdx::api
