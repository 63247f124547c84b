// The optimized graph of a session as an ONNX model file (onnxruntime's
// SessionOptions.optimized_model_filepath), which sdx loads back as it was saved.
//
//   SDX_RETURN_IF_ERROR(api::save_optimized_model(session, "opt.onnx", {"opt.bin", 1024}), "");
//
// Nodes the optimizer made (sdx.FusedConv, sdx.Attention, ...) keep sdx's domain, so the file is for sdx
// (as onnxruntime's own optimized files hold com.microsoft nodes); the opset of every node travels in the
// model's metadata (onnx_writer.h, kNodeOpsetsKey).
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"
#include "runtime/session.h"

namespace sdx::api {

struct ExternalInitializers {
  // A file name beside the model file for initializers of at least min_bytes ("" keeps every initializer
  // inside the model). A plain relative name: no "..", not absolute.
  std::string file;
  size_t min_bytes = 1024;
};

Status save_optimized_model(const runtime::Session& session, const std::string& path,
                            const ExternalInitializers& external = {});

}  // namespace sdx::api
