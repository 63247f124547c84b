#include "core/status.h"

#include <cstdio>
#include <cstdlib>

namespace sdx {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kInvalidGraph: return "InvalidGraph";
    case StatusCode::kCancelled: return "Cancelled";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) state_ = std::make_shared<const State>(State{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code())) + ": " + message();
}

Status Status::with_context(const std::string& context) const {
  if (is_ok() || context.empty()) return *this;
  return Status(code(), context + ": " + message());
}

Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
Status unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
Status out_of_range(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
Status failed_precondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
Status resource_exhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
Status data_loss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
Status io_error(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
Status invalid_graph(std::string msg) { return {StatusCode::kInvalidGraph, std::move(msg)}; }

void assert_fail(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "sdx: assertion failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace sdx
