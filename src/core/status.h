// Status: a cheap error value (code + message) used at every boundary inside sdx. The type itself is
// public (include/sdx/status.h); this header adds the constructors and macros the engine uses.
//
//   Status load(...) {
//     SDX_RETURN_IF_ERROR(check_header(f), "reading model header");
//     SDX_ASSIGN_OR_RETURN(Tensor t, parse_tensor(p), "initializer 'w'");
//     return Status::ok();
//   }
//
// An OK status holds no heap memory. Invariant violations use SDX_ASSERT instead.
#pragma once

#include <string>

#include "sdx/status.h"

namespace sdx {

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
