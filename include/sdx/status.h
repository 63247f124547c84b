// Status and Result<T>: errors as values, the one error type of sdx's public C++ API and of the engine
// inside it (src/core/status.h adds the constructors and macros the engine uses).
//
//   sdx::Result<sdx::Session> s = sdx::Session::load("model.onnx");
//   if (!s.is_ok()) { std::cerr << s.status().to_string() << "\n"; return 1; }   // "InvalidGraph: model ..."
//
// Codes are those of the C ABI's sdx_status_t (include/sdx/sdx_runtime_c.h). An OK status holds no heap
// memory; a Result<T> holds a T or a non-OK Status.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace sdx {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kUnimplemented = 3,
  kOutOfRange = 4,
  kFailedPrecondition = 5,
  kResourceExhausted = 6,
  kDataLoss = 7,
  kIoError = 8,
  kInternal = 9,
  kInvalidGraph = 10,  // a model that breaks a structural rule of the ONNX IR spec (the verifier's gate)
  kCancelled = 11,     // the caller asked a run to stop (a terminate flag) and it stopped between two steps
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status ok() { return Status(); }

  bool is_ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "InvalidArgument: message"
  std::string to_string() const;

  // Returns a copy whose message is "context: message".
  Status with_context(const std::string& context) const;

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

// Result<T>: a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).is_ok()) v_ = Status(StatusCode::kInternal, "Result constructed from OK status");
  }

  bool is_ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sdx
