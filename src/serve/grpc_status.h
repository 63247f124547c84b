// sdx::Status -> grpc::Status: the engine's error codes as the gRPC codes a client branches on.
//
//   if (sdx::Status st = repo.load(name); !st.is_ok()) return serve::to_grpc(st);   // NotFound -> NOT_FOUND
#pragma once

#include <grpcpp/support/status.h>

#include <exception>
#include <string>

#include "sdx/status.h"

namespace sdx::serve {

grpc::StatusCode to_grpc_code(StatusCode code);

// The code mapped, and the message as the engine wrote it (it names the model, input and what was expected).
grpc::Status to_grpc(const Status& status);

// Runs an RPC handler's body: an exception escaping it (a bug, or memory running out) becomes INTERNAL
// naming the RPC, instead of terminating the server with every other client's request.
template <typename Body>
grpc::Status guarded(const char* rpc, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(rpc) + ": " + e.what());
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(rpc) + ": unknown exception");
  }
}

}  // namespace sdx::serve
