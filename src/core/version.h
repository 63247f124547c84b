// The sdx version this library was built as (CMake's project version): bundles and caches record it
// and refuse what another version wrote.
#pragma once

namespace sdx {

const char* version();

}  // namespace sdx
