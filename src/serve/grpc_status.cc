#include "serve/grpc_status.h"

namespace sdx::serve {

grpc::StatusCode to_grpc_code(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kInvalidGraph: return grpc::StatusCode::INVALID_ARGUMENT;  // a model the verifier refused
    case StatusCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kUnimplemented: return grpc::StatusCode::UNIMPLEMENTED;
    case StatusCode::kOutOfRange: return grpc::StatusCode::OUT_OF_RANGE;
    case StatusCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case StatusCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kDataLoss: return grpc::StatusCode::DATA_LOSS;
    case StatusCode::kIoError: return grpc::StatusCode::UNAVAILABLE;  // a model file the server cannot read
    case StatusCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case StatusCode::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

grpc::Status to_grpc(const Status& status) {
  if (status.is_ok()) return grpc::Status::OK;
  return grpc::Status(to_grpc_code(status.code()), status.message());
}

}  // namespace sdx::serve
