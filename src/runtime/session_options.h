// SessionOptions: typed configuration for a Session. Environment variables
// (SDX_*) are parsed once into this struct by from_env(); see the README table.
#pragma once

#include <string>

namespace sdx::runtime {

struct SessionOptions {
  // Intra-op threads for kernels that parallelize (0 = default: physical cores).
  int intra_op_num_threads = 0;
  // Log level: 0 = errors only, 1 = warnings, 2 = info, 3 = verbose.
  int log_level = 1;

  // Overlays SDX_* environment variables onto `base`.
  static SessionOptions from_env(SessionOptions base);
};

}  // namespace sdx::runtime
