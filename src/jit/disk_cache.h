// DiskCache: compiled JIT kernels on disk, shared by every process of the user.
//
//   <root>/v1/<key>.so          a compiled segment (<key>.cc next to it: its source)
//   <root>/v1/compilers/<h>.txt the version line of a compiler, by its fingerprint (compiler.h),
//                               so a process with a warm cache never runs the compiler at all
//
// root is SessionOptions::jit.cache_dir / SDX_JIT_CACHE_DIR, else $SDX_CACHE_DIR/jit, else
// $XDG_CACHE_HOME/sdx/jit, else ~/.cache/sdx/jit; v1 changes whenever the kernel ABI or the
// layout does. key = FNV-1a 64 of (source, compiler version line, compiler flags, ABI): the
// same model on the same compiler finds its kernels. Every file is written under a unique
// temporary name in the same folder and renamed into place, so concurrent processes never see
// a partial file (the last rename wins; they are identical).
//
//   DiskCache cache(options.cache_dir);
//   std::string so = cache.library_path(DiskCache::key(source, version));
//   if (!cache.exists(so)) { compile to cache.temp_path(so); cache.publish(tmp, so); }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sdx::jit {

inline constexpr const char* kCacheLayoutVersion = "v1";

uint64_t fnv1a64(std::string_view data, uint64_t h = 14695981039346656037ULL);

class DiskCache {
 public:
  explicit DiskCache(const std::string& root);
  static std::string default_root();

  const std::string& dir() const { return dir_; }
  // Creates the folder (and its parents) when missing.
  Status ensure_dir() const;

  static std::string key(const std::string& source, const std::string& compiler_version);
  std::string library_path(const std::string& key) const { return dir_ + "/" + key + ".so"; }
  std::string source_path(const std::string& key) const { return dir_ + "/" + key + ".cc"; }
  static bool exists(const std::string& path);

  // A fresh name in the same folder as `final_path` (pid + counter + random suffix).
  std::string temp_path(const std::string& final_path) const;
  // Renames `tmp` over `final_path` (atomic within one file system); removes tmp on failure.
  Status publish(const std::string& tmp, const std::string& final_path) const;
  // Writes `contents` to a temporary file and publishes it as `path`.
  Status write_file(const std::string& path, const std::string& contents) const;

  // The cached version line of the compiler with this fingerprint ("" when unknown).
  std::string compiler_version(const std::string& fingerprint) const;
  Status store_compiler_version(const std::string& fingerprint, const std::string& version) const;

 private:
  std::string dir_;
};

}  // namespace sdx::jit
