// Loading a model into a session: the front end (ONNX protobuf, external data) meets the runtime here,
// and only here. Python, the C ABI, the CLI and the conformance runner load through these.
//
//   SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s, api::load_session_file("model.onnx"), "");
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "runtime/session.h"

namespace sdx::api {

// An ONNX model file (external data is read from its folder, confined to it), or a .sdx bundle
// (api/bundle.h; told apart by its magic, whatever the file is called).
Result<std::unique_ptr<runtime::Session>> load_session_file(const std::string& path,
                                                            runtime::SessionOptions options = {});
// An ONNX model's bytes (no external data), or a bundle's.
Result<std::unique_ptr<runtime::Session>> load_session_bytes(const std::string& bytes,
                                                             runtime::SessionOptions options = {});

// The model of a file without a session (sdx inspect): an ONNX model as written, or a bundle's optimized
// graph with its node opsets.
Result<ir::Model> load_model_file(const std::string& path);

}  // namespace sdx::api
