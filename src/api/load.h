// Loading a model into a session: the front end (ONNX protobuf, external data) meets the runtime here,
// and only here. Python, the C ABI, the CLI and the conformance runner load through these.
//
//   SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s, api::load_session_file("model.onnx"), "");
#pragma once

#include <memory>
#include <string>

#include <map>
#include <string_view>

#include "core/status.h"
#include "frontend/onnx/model_edits.h"
#include "runtime/session.h"

namespace sdx::api {

// What the caller changes in an ONNX model as it loads (sdx::ModelOverrides): free dimensions and
// initializers (onnx::ModelEdits), and external data files from memory by location. A model loaded with
// edits bypasses the disk plan cache, whose key does not cover them; a bundle refuses them.
struct LoadEdits {
  onnx::ModelEdits model;
  std::map<std::string, std::string_view> files;
  bool empty() const { return model.empty() && files.empty(); }
};

// An ONNX model file (external data is read from its folder, confined to it), or a .sdx bundle
// (api/bundle.h; told apart by its magic, whatever the file is called).
Result<std::unique_ptr<runtime::Session>> load_session_file(const std::string& path,
                                                            runtime::SessionOptions options = {},
                                                            const LoadEdits* edits = nullptr);
// An ONNX model's bytes (external data only from edits->files), or a bundle's.
Result<std::unique_ptr<runtime::Session>> load_session_bytes(const std::string& bytes,
                                                             runtime::SessionOptions options = {},
                                                             const LoadEdits* edits = nullptr);

// The model of a file without a session (sdx inspect): an ONNX model as written, or a bundle's optimized
// graph with its node opsets.
Result<ir::Model> load_model_file(const std::string& path);

}  // namespace sdx::api
