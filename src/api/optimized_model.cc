#include "api/optimized_model.h"

#include <algorithm>
#include <fstream>

#include "frontend/onnx/onnx_writer.h"

namespace sdx::api {

namespace {

Status write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error("cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return io_error("writing '" + path + "' failed");
  return Status::ok();
}

bool plain_relative(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  for (size_t pos = 0; pos <= name.size();) {
    const size_t end = std::min(name.find('/', pos), name.size());
    if (name.compare(pos, end - pos, "..") == 0 && end - pos == 2) return false;
    pos = end + 1;
  }
  return true;
}

}  // namespace

Status save_optimized_model(const runtime::Session& session, const std::string& path,
                            const ExternalInitializers& external) {
  if (path.empty()) return invalid_argument("optimized model path is empty");
  onnx::SaveOptions opts;
  opts.node_opsets_in_metadata = true;
  if (!external.file.empty()) {
    if (!plain_relative(external.file))
      return invalid_argument("external initializers file '" + external.file +
                              "' must be a relative name inside the optimized model's folder (no '..', not absolute)");
    opts.weights_in_blob = true;
    opts.blob_min_bytes = external.min_bytes;
    opts.blob_location = external.file;
  }
  SDX_ASSIGN_OR_RETURN(onnx::SavedModel saved, onnx::save_model(session.model(), opts), "optimized model");
  if (!external.file.empty()) {
    const size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    SDX_RETURN_IF_ERROR(write_file(dir + external.file, saved.blob), "external initializers");
  }
  return write_file(path, saved.bytes).with_context("optimized model");
}

}  // namespace sdx::api
