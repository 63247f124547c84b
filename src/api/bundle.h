// .sdx bundles: a model compiled once — optimized, and warmed up for the input shapes it will see — so a
// new process starts at the first call with no optimizer and no warmup run (the DSP design's bundles).
// The container and its checks are frontend/bundle/bundle_format.h.
//
//   // sdx compile MODEL -o model.sdx --shape x=1,3,224,224
//   SDX_ASSIGN_OR_RETURN(std::string bytes, api::compile_bundle(onnx_bytes, options, {{{"x", x_arg}}}), "");
//   // later, any process: api::load_session_file("model.sdx") (load.h tells bundles by their magic)
//
// What a bundle holds: the optimized graph (ONNX, with each node's opset beside it), and per compiled
// input signature the warmup record of its plan (every slot's type and shape, views and sharing). A
// session loaded from it skips the optimizer, and load_bundle freezes memory from each record and binds
// every step without running one, on the context the session's first create_context() returns, so its
// first call replays (a plan with a step that has no bound form captures by running instead, and its
// second call replays; other contexts freeze and bind on their first call with a recorded signature). The initializers are stored
// apart from the graph, 64-byte aligned, and borrowed in place from the mapped file; weights that kernels
// packed when compile_bundle captured its plans are stored too (backend/packed_weights.h), and a kernel
// that would pack the same bytes (same node, same packed layout) uses them in place instead. CPU_JIT
// kernels come from the JIT's disk cache, which compile_bundle fills before it returns.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "frontend/bundle/bundle_format.h"
#include "runtime/session.h"
#include "runtime/tensor_arg.h"

namespace sdx::api {

// One warmup call: a value for every graph input, by name.
using NamedInputs = std::vector<std::pair<std::string, runtime::TensorArg>>;

// Optimizes the ONNX model `model_bytes` with `options`, runs each entry of `calls` through its warmup,
// and returns the bundle's bytes. A missing or unknown input name is an error naming the model's inputs.
Result<std::string> compile_bundle(const std::string& model_bytes, runtime::SessionOptions options,
                                   const std::vector<NamedInputs>& calls);

// A session from bundle bytes (checked: version, checksum, every length); `options` apply as for an
// ONNX model, except that the optimizer does not run again. The session uses the bytes in place (its
// initializers and packed weights borrow them): `owner` keeps them alive (a MappedFile, core/mapped_file.h).
Result<std::unique_ptr<runtime::Session>> load_bundle(std::string_view bytes, std::shared_ptr<void> owner,
                                                      runtime::SessionOptions options);
// The warmup record of a frozen plan entry, by value name (what a bundle keeps of a plan).
bundle::PlanRecord plan_record(const runtime::PlanEntry& e);
// The same from a plan and a warmup record of it (Session::seeded_plans()).
bundle::PlanRecord plan_record(const plan::Plan& plan, const runtime::ShapeSignature& signature,
                               const std::vector<plan::RecordedSlot>& shapes);
// The bundle of a session as it stands: its graph (initializers in the weights section), `plans`, and
// every packed weight its store holds (Session::packed_weights()). source_digest names the model it
// came from (manifest only).
Result<std::string> write_session_bundle(const runtime::Session& s, std::vector<bundle::PlanRecord> plans,
                                         const std::string& source_digest);

// The same over a copy of `bytes`.
Result<std::unique_ptr<runtime::Session>> load_bundle(const std::string& bytes, runtime::SessionOptions options);

}  // namespace sdx::api
