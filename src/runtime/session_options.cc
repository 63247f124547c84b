#include "runtime/session_options.h"

#include <cstdlib>

namespace sdx::runtime {

SessionOptions SessionOptions::from_env(SessionOptions base) {
  if (const char* v = std::getenv("SDX_INTRA_OP_THREADS")) base.intra_op_num_threads = std::atoi(v);
  if (const char* v = std::getenv("SDX_LOG_LEVEL")) base.log_level = std::atoi(v);
  return base;
}

}  // namespace sdx::runtime
