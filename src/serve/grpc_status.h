// sdx::Status -> grpc::Status: the engine's error codes as the gRPC codes a client branches on.
//
//   if (sdx::Status st = repo.load(name); !st.is_ok()) return serve::to_grpc(st);   // NotFound -> NOT_FOUND
#pragma once

#include <grpcpp/support/status.h>

#include "sdx/status.h"

namespace sdx::serve {

grpc::StatusCode to_grpc_code(StatusCode code);

// The code mapped, and the message as the engine wrote it (it names the model, input and what was expected).
grpc::Status to_grpc(const Status& status);

}  // namespace sdx::serve
