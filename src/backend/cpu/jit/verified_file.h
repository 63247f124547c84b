// VerifiedFile: a file of the JIT disk cache, opened and checked the way a file we are about to
// run code from must be. It is opened without following a symbolic link (O_NOFOLLOW, O_CLOEXEC);
// then, on the open descriptor: a regular file, owned by the effective user, not writable by group
// or others, at most max_bytes; its XXH3-128 digest is computed from the bytes read through that same
// descriptor. Loading through the descriptor (/proc/self/fd/N, backend/cpu/jit/jit_library.h) makes the file
// checked the file loaded: renaming another file over the path afterwards changes nothing.
//
//   SDX_ASSIGN_OR_RETURN(VerifiedFile f, VerifiedFile::open(path, kMaxLibraryBytes), "kernel k");
//   if (f.digest() != manifest.digest) return data_loss("...");   // compared BEFORE any dlopen
//   SDX_ASSIGN_OR_RETURN(auto lib, JitLibrary::load(std::move(f), numel), "kernel k");
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/status.h"

namespace sdx::jit {

class VerifiedFile {
 public:
  // not_found when there is no such file; failed_precondition when a check fails (which, in the
  // message); io_error when reading fails. With make_private the file's mode is first set to
  // 0600 through the descriptor: for a file this process just had written (the compiler's output
  // follows the umask, which may grant group write).
  static Result<VerifiedFile> open(const std::string& path, int64_t max_bytes, bool make_private = false);

  VerifiedFile(VerifiedFile&& other) noexcept;
  VerifiedFile& operator=(VerifiedFile&& other) noexcept;
  VerifiedFile(const VerifiedFile&) = delete;
  VerifiedFile& operator=(const VerifiedFile&) = delete;
  ~VerifiedFile();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  int64_t size() const { return size_; }
  const std::string& digest() const { return digest_; }  // 64 lowercase hex digits
  dev_t device() const { return dev_; }
  ino_t inode() const { return ino_; }
  // Hands the descriptor to the caller, who closes it from then on.
  int release();
  // After the file was renamed: the name to report it by (the descriptor is unaffected).
  void set_path(std::string path) { path_ = std::move(path); }

 private:
  VerifiedFile() = default;
  std::string path_, digest_;
  int fd_ = -1;
  int64_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// The contents of a small file under the same checks (no symbolic link, a regular file, the
// user's, not writable by group or others, at most max_bytes): the cache's manifests and
// compiler version lines. not_found when there is no such file.
Result<std::string> read_private_file(const std::string& path, size_t max_bytes);

}  // namespace sdx::jit
