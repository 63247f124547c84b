#include "backend/cpu/jit/jit_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "backend/cpu/jit/cpp_emitter.h"

namespace sdx::jit {
namespace {

// Loaded libraries by file identity (device, inode). Heap-allocated and never freed: a library
// may be released during static destruction.
struct Registry {
  std::mutex mutex;  // guards by_file; held across dlopen/dlclose so loads and unloads of one file never interleave
  struct Entry {
    std::weak_ptr<JitLibrary> library;
    const JitLibrary* raw;  // to recognize its own entry in the destructor, when the weak_ptr has expired
  };
  std::map<std::pair<dev_t, ino_t>, Entry> by_file;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

}  // namespace

Status JitLibrary::check_exports(int64_t expected_numel) {
  const auto* abi = static_cast<const char*>(dlsym(handle_, "sdx_jit_abi"));
  numel_ = static_cast<const long long*>(dlsym(handle_, "sdx_jit_numel"));
  fn_ = reinterpret_cast<SegmentFn>(dlsym(handle_, "sdx_jit_segment"));
  if (!abi || std::strcmp(abi, kJitAbi) != 0 || !fn_)
    return failed_precondition("'" + path_ + "' is not an sdx JIT library of ABI " + kJitAbi);
  if (!numel_ || *numel_ != expected_numel) return failed_precondition("'" + path_ + "' was generated for another shape");
  return Status::ok();
}

Result<std::shared_ptr<JitLibrary>> JitLibrary::load(VerifiedFile file, int64_t expected_numel) {
  // Declared before the lock: a library dropped on an error path is destroyed after the unlock
  // (its destructor takes the lock).
  std::shared_ptr<JitLibrary> lib;
  Registry& reg = registry();
  const std::pair<dev_t, ino_t> id{file.device(), file.inode()};
  std::unique_lock<std::mutex> lock(reg.mutex);
  for (;;) {
    auto it = reg.by_file.find(id);
    if (it == reg.by_file.end()) break;
    lib = it->second.library.lock();
    if (lib) {
      if (lib->digest_ != file.digest())
        return failed_precondition("'" + file.path() + "' changed on disk while this process had it loaded");
      if (!lib->numel_ || *lib->numel_ != expected_numel)
        return failed_precondition("'" + file.path() + "' was generated for another shape");
      return lib;  // `file` closes its own descriptor
    }
    // Its last owner let go and its destructor is waiting for the lock to unload it: loading
    // the file again before that would get the old object back from the loader.
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  lib.reset(new JitLibrary());
  lib->path_ = file.path();
  lib->digest_ = file.digest();
  lib->dev_ = id.first;
  lib->ino_ = id.second;
  lib->fd_ = file.release();
  lib->proc_name_ = "/proc/self/fd/" + std::to_string(lib->fd_);
  lib->handle_ = dlopen(lib->proc_name_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* err = dlerror();
    return failed_precondition("cannot load '" + lib->path_ + "' (through " + lib->proc_name_ +
                               "; the JIT needs /proc): " + (err ? err : "dlopen failed"));
  }
  // The loader must have made a new object under our name; anything else means this file was
  // already loaded under another name, outside this table.
  struct link_map* lm = nullptr;
  if (dlinfo(lib->handle_, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || lib->proc_name_ != lm->l_name)
    return failed_precondition("'" + lib->path_ + "' is already loaded in this process under another name");
  lib->named_ = true;
  SDX_RETURN_IF_ERROR(lib->check_exports(expected_numel), "");
  reg.by_file[id] = {lib, lib.get()};
  return lib;
}

JitLibrary::~JitLibrary() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto& by_file = registry().by_file;
  if (auto it = by_file.find({dev_, ino_}); it != by_file.end() && it->second.raw == this) by_file.erase(it);
  if (handle_) dlclose(handle_);
  if (fd_ < 0) return;
  if (named_) {
    if (void* still = dlopen(proc_name_.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      // The loader kept the object (NODELETE), still named proc_name_: fd_ must never name
      // another file, so it stays open for the life of the process.
      dlclose(still);
      return;
    }
  }
  ::close(fd_);
}

}  // namespace sdx::jit
