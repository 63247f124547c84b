// The sdx version this library was built as (CMake's project version): bundles and caches record it
// and refuse what another version wrote. build_id() tells two builds of one version apart (a
// developer's rebuilds, a patched package): caches of what a build computed key on it too.
#pragma once

#include <string>

namespace sdx {

const char* version();

// The GNU build ID of the binary sdx's code is linked into (hex; the linker hashes the binary's
// contents, so any change to the code changes it), or "" where there is none (not Linux, or linked
// without --build-id). Read once from the loaded image, no file I/O.
const std::string& build_id();

}  // namespace sdx
