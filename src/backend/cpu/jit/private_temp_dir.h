// PrivateTempDir: a folder only this process uses, made with mkdtemp (mode 0700, a name nobody
// can predict) under $TMPDIR (else /tmp) and removed with everything in it when its owner lets go.
// The JIT runs every compiler with one as its TMPDIR, so the compiler's temporary files (cc*.s,
// ...) vanish whatever the outcome, and keeps its kernels in one when the user has no home folder
// (backend/cpu/jit/disk_cache.h): never a predictable shared path another user could prepare.
//
//   SDX_ASSIGN_OR_RETURN(PrivateTempDir tmp, PrivateTempDir::create("sdx-cc"), "compiling");
//   env.push_back("TMPDIR=" + tmp.path());
//   ...                                          // ~PrivateTempDir removes it
#pragma once

#include <string>

#include "core/status.h"

namespace sdx::jit {

class PrivateTempDir {
 public:
  // `prefix` starts the folder's name. With remove_at_exit the folder is also removed by an
  // atexit handler if its owner is still alive when the process exits (a session never released).
  static Result<PrivateTempDir> create(const std::string& prefix, bool remove_at_exit = false);

  PrivateTempDir(PrivateTempDir&& other) noexcept;
  PrivateTempDir& operator=(PrivateTempDir&& other) noexcept;
  PrivateTempDir(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(const PrivateTempDir&) = delete;
  ~PrivateTempDir() { remove(); }

  const std::string& path() const { return path_; }
  // Removes the folder and everything in it now (symbolic links are removed, never followed);
  // idempotent. Best effort: a folder that cannot be removed is left behind.
  void remove();

 private:
  PrivateTempDir(std::string path, bool at_exit) : path_(std::move(path)), at_exit_(at_exit) {}
  std::string path_;  // "" once removed or moved from
  bool at_exit_ = false;
};

}  // namespace sdx::jit
