#include "core/version.h"

#ifndef SDX_VERSION_STRING
#error "SDX_VERSION_STRING is set by CMakeLists.txt (the project version)"
#endif

namespace sdx {

const char* version() { return SDX_VERSION_STRING; }

}  // namespace sdx
