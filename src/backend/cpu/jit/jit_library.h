// JitLibrary: one compiled segment library, loaded with dlopen (RTLD_NOW | RTLD_LOCAL) from a
// VerifiedFile (backend/cpu/jit/verified_file.h: opened without following links, the user's own, hashed and
// compared with its manifest by the caller), checked against the ABI and frozen domain size it
// must export (cpp_emitter.h), unloaded when the last owner lets go. Bound kernels hold a
// shared_ptr to it, so its code stays mapped while they live.
//
// It is loaded through the verified descriptor, dlopen("/proc/self/fd/N"), so the file that was
// checked is the file that is loaded (no window in which another file could be renamed over the
// path). Two facts of glibc's loader shape the rest:
//  - dlopen first matches the name against every loaded object's name, so "/proc/self/fd/N" would
//    return a library still loaded under that name even when N now names another file. The
//    descriptor therefore stays open while the library is loaded (no other file can get N), and
//    if the loader keeps an object after the last dlclose (a NODELETE object), N stays open for
//    good.
//  - it matches files by device and inode, so loading a file that is already loaded returns the
//    existing object under its first name. Libraries are therefore kept in a process-wide table by
//    file identity and one already loaded is shared, not loaded twice.
//
//   SDX_ASSIGN_OR_RETURN(VerifiedFile f, VerifiedFile::open(path, kMaxLibraryBytes), "");
//   // ... f.digest() and f.size() compared with the manifest ...
//   SDX_ASSIGN_OR_RETURN(std::shared_ptr<JitLibrary> lib, JitLibrary::load(std::move(f), ir.domain.numel()), "");
//   lib->segment()(inputs, outputs, 0, n);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "backend/cpu/jit/verified_file.h"

namespace sdx::jit {

using SegmentFn = void (*)(const float* const* in, float* const* out, long long begin, long long end);

class JitLibrary {
 public:
  // Takes over the file's descriptor. failed_precondition when the loader refuses the file or it
  // is not an sdx JIT library of this ABI and domain size.
  static Result<std::shared_ptr<JitLibrary>> load(VerifiedFile file, int64_t expected_numel);
  ~JitLibrary();
  JitLibrary(const JitLibrary&) = delete;
  JitLibrary& operator=(const JitLibrary&) = delete;

  SegmentFn segment() const { return fn_; }
  const std::string& path() const { return path_; }
  const std::string& digest() const { return digest_; }

 private:
  JitLibrary() = default;
  Status check_exports(int64_t expected_numel);

  void* handle_ = nullptr;
  SegmentFn fn_ = nullptr;
  std::string path_, digest_;
  int fd_ = -1;               // the verified file; open while the loader may know it by proc_name_
  std::string proc_name_;     // "/proc/self/fd/<fd_>": the loader's name for this library
  bool named_ = false;        // the loader's object is ours, under proc_name_
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  const long long* numel_ = nullptr;
};

}  // namespace sdx::jit
