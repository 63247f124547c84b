// Status: a cheap error value (code + message) used at every boundary inside sdx.
//
//   Status load(...) {
//     SDX_RETURN_IF_ERROR(check_header(f), "reading model header");
//     SDX_ASSIGN_OR_RETURN(Tensor t, parse_tensor(p), "initializer 'w'");
//     return Status::ok();
//   }
//
// An OK status holds no heap memory. Invariant violations use SDX_ASSERT instead.
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

Status invalid_argument(std::string msg);
Status not_found(std::string msg);
Status unimplemented(std::string msg);
Status out_of_range(std::string msg);
Status failed_precondition(std::string msg);
Status resource_exhausted(std::string msg);
Status data_loss(std::string msg);
Status io_error(std::string msg);
Status internal_error(std::string msg);
Status invalid_graph(std::string msg);

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

[[noreturn]] void assert_fail(const char* expr, const char* file, int line);

}  // namespace sdx

#define SDX_CONCAT_INNER_(a, b) a##b
#define SDX_CONCAT_(a, b) SDX_CONCAT_INNER_(a, b)

// Returns early with "context: message" when expr is not OK. context may be a
// std::string expression; it is only evaluated on error.
#define SDX_RETURN_IF_ERROR(expr, context)                      \
  do {                                                          \
    ::sdx::Status sdx_status_ = (expr);                         \
    if (!sdx_status_.is_ok()) return sdx_status_.with_context(context); \
  } while (0)

#define SDX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr, context)    \
  auto tmp = (expr);                                           \
  if (!tmp.is_ok()) return tmp.status().with_context(context); \
  lhs = std::move(tmp).value()

#define SDX_ASSIGN_OR_RETURN(lhs, expr, context) \
  SDX_ASSIGN_OR_RETURN_IMPL_(SDX_CONCAT_(sdx_result_, __LINE__), lhs, expr, context)

#define SDX_ASSERT(expr) \
  do {                   \
    if (!(expr)) ::sdx::assert_fail(#expr, __FILE__, __LINE__); \
  } while (0)
