#include "jit/jit_library.h"

#include <dlfcn.h>

#include <cstring>

#include "jit/cpp_emitter.h"

namespace sdx::jit {

Result<std::shared_ptr<JitLibrary>> JitLibrary::open(const std::string& path, int64_t expected_numel) {
  std::shared_ptr<JitLibrary> lib(new JitLibrary());
  lib->path_ = path;
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* err = dlerror();
    return failed_precondition("cannot load '" + path + "': " + (err ? err : "dlopen failed"));
  }
  const auto* abi = static_cast<const char*>(dlsym(lib->handle_, "sdx_jit_abi"));
  const auto* numel = static_cast<const long long*>(dlsym(lib->handle_, "sdx_jit_numel"));
  lib->fn_ = reinterpret_cast<SegmentFn>(dlsym(lib->handle_, "sdx_jit_segment"));
  if (!abi || std::strcmp(abi, kJitAbi) != 0 || !lib->fn_)
    return failed_precondition("'" + path + "' is not an sdx JIT library of ABI " + kJitAbi);
  if (!numel || *numel != expected_numel)
    return failed_precondition("'" + path + "' was generated for another shape");
  return lib;
}

JitLibrary::~JitLibrary() {
  if (handle_) dlclose(handle_);
}

}  // namespace sdx::jit
