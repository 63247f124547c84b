#include "opt/optimizer_options.h"

#include <algorithm>

namespace sdx::opt {

bool OptimizerOptions::skips(const std::string& pass) const {
  return std::find(skip.begin(), skip.end(), pass) != skip.end();
}

}  // namespace sdx::opt
