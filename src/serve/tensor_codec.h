// KServe v2 tensors <-> sdx values: the inputs of a ModelInferRequest decoded into feeds for
// sdx::Session::run, and a run's outputs encoded into a ModelInferResponse.
//
//   sdx::Session::Feeds feeds;
//   std::vector<std::string> names;
//   sdx::Status st = decode_inputs(request, session.inputs(), &feeds);   // InvalidArgument, naming the input
//   if (st.is_ok()) st = requested_outputs(request, session.outputs(), &names);
//   auto outs = session.run(feeds, names);
//   if (outs.is_ok()) st = encode_outputs(names, outs.value(), &response);
//
// Every input is checked before anything runs: its datatype is a KServe datatype and the one the model
// declares, its contents hold exactly dtype x shape bytes (BYTES: exactly as many length-prefixed
// elements as the shape has), and no input is missing, unknown or given twice. Fixed-size raw contents
// are borrowed, not copied, when they are aligned: the request must outlive the run that reads the feeds.
// Outputs always go back as raw_output_contents (what tritonclient reads first).
#pragma once

#include <string>
#include <vector>

#include "kserve/grpc_service.pb.h"
#include "sdx/session.h"
#include "sdx/status.h"
#include "sdx/tensor.h"

namespace sdx::serve {

// One input tensor: `raw` is its raw_input_contents entry, or null when the request uses typed contents.
// `declared` is the model's element type for it (kUndefined: not checked).
Status decode_input(const inference::ModelInferRequest::InferInputTensor& tensor, const std::string* raw,
                    ElementType declared, Value* out);

// Every input of the request, checked against the model's inputs.
Status decode_inputs(const inference::ModelInferRequest& request, const std::vector<ValueInfo>& model_inputs,
                     Session::Feeds* feeds);

// The outputs the request asks for (all the model's outputs when it names none), checked against the model.
Status requested_outputs(const inference::ModelInferRequest& request, const std::vector<ValueInfo>& model_outputs,
                         std::vector<std::string>* names);

// Appends each output, as raw contents, to the response.
Status encode_outputs(const std::vector<std::string>& names, const std::vector<Value>& values,
                      inference::ModelInferResponse* response);

// "[2, 3]": a shape as error messages print it.
std::string shape_string(const std::vector<int64_t>& dims);

}  // namespace sdx::serve
