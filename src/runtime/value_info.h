// ValueInfo: a graph input or output as a session presents it: its name and declared type.
#pragma once

#include <string>

#include "ir/type_info.h"

namespace sdx::runtime {

struct ValueInfo {
  std::string name;
  ir::TypeInfo type;
};

}  // namespace sdx::runtime
