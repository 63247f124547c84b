// DiskCache: compiled JIT kernels on disk, shared by every process of the user.
//
//   <root>/v1/<key>.so          a compiled segment (<key>.cc next to it: its source)
//   <root>/v1/<key>.manifest    its CacheManifest (format version, key, size, XXH3-128)
//   <root>/v1/compilers/<h>.txt the version line of a compiler, by its fingerprint (compiler.h),
//                               so a process with a warm cache never runs the compiler at all
//
// root is SessionOptions::jit.cache_dir / SDX_JIT_CACHE_DIR, else $SDX_CACHE_DIR/jit, else
// $XDG_CACHE_HOME/sdx/jit, else $HOME/.cache/sdx/jit, else <home of the user in the password
// database>/.cache/sdx/jit. A user with none of these gets no shared cache: a private folder
// (PrivateTempDir) for this DiskCache only, removed with it (or at exit): never a predictable
// path in /tmp that another user could prepare. v1 changes whenever the kernel ABI or the layout
// does. key = FNV-1a 64 of (source, compiler version line, compiler flags, ABI): the same model
// on the same compiler finds its kernels.
//
// Trust: loading a library runs its code, so
//  - ensure_dir() creates the folders with mode 0700 and refuses a cache whose folders another
//    user could write or swap (the rule is in backend/cpu/jit/cache_permissions.h); the JIT then fuses
//    nothing and says why;
//  - load() hands a library to the loader only after checking it against its manifest (size and
//    XXH3-128 of the bytes read through the descriptor that is then loaded, backend/cpu/jit/verified_file.h);
//    a truncated, altered, replaced or manifest-less entry is deleted (data_loss) and the caller
//    compiles it again.
// Every file is written under a unique temporary name in the same folder (mode 0600, O_EXCL) and
// renamed into place, so concurrent processes never see a partial file (the last rename wins; they
// are identical). The manifest is written after its library: a process that meets a library
// without its manifest in that moment deletes and rebuilds it, which is wasteful but safe.
//
//   DiskCache cache(options.cache_dir);
//   SDX_RETURN_IF_ERROR(cache.ensure_dir(), "");
//   Result<std::shared_ptr<JitLibrary>> lib = cache.load(key, numel);   // not_found: compile
//   ... compile into cache.temp_path(cache.library_path(key)) ...
//   lib = cache.publish_library(tmp, key, numel);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/fnv1a.h"
#include "core/status.h"
#include "backend/cpu/jit/cache_manifest.h"
#include "backend/cpu/jit/jit_library.h"
#include "backend/cpu/jit/private_temp_dir.h"

namespace sdx::jit {

inline constexpr const char* kCacheLayoutVersion = "v1";
// Larger files are never libraries the JIT wrote (its kernels are a few KiB to a few hundred).
inline constexpr int64_t kMaxLibraryBytes = int64_t{64} << 20;

using sdx::fnv1a64;  // core/fnv1a.h

class DiskCache {
 public:
  // root "" = default_root(); when that is "" too, a private cache (see above).
  explicit DiskCache(const std::string& root);
  // A private cache whatever the environment says (what a user without a home folder gets).
  static DiskCache private_cache();
  // The default root from the environment and the password database; "" when there is no home.
  // leaf: the folder under the sdx cache root ("jit" for kernels; the disk plan cache uses "plans").
  static std::string default_root(const std::string& leaf = "jit");
  // The same from explicit values (null or "" = unset), in order of precedence.
  static std::string default_root_from(const char* sdx_cache_dir, const char* xdg_cache_home, const char* home,
                                       const char* passwd_home, const std::string& leaf = "jit");

  const std::string& dir() const { return dir_; }
  // False for a private cache (nothing survives this object).
  bool persistent() const { return !private_root_; }
  // Creates the folders (mode 0700) when missing and checks them and the folders above against
  // the rule of cache_permissions.h: failed_precondition "JIT disk cache '<root>' refused: ...".
  Status ensure_dir() const;

  static std::string key(const std::string& source, const std::string& compiler_version);
  std::string library_path(const std::string& key) const { return dir_ + "/" + key + ".so"; }
  std::string source_path(const std::string& key) const { return dir_ + "/" + key + ".cc"; }
  std::string manifest_path(const std::string& key) const { return dir_ + "/" + key + ".manifest"; }
  static bool exists(const std::string& path);

  // The kernel `key`, checked against its manifest, then loaded through the checked descriptor.
  // not_found: no entry. data_loss: the entry was corrupt (why, in the message) and has been
  // deleted. Other errors: a sound entry the loader refused (left in place).
  Result<std::shared_ptr<JitLibrary>> load(const std::string& key, int64_t expected_numel) const;
  // A library the compiler just wrote to `tmp` (in this folder): made 0600, hashed, renamed to
  // library_path(key), its manifest written, and loaded through the descriptor that was hashed.
  Result<std::shared_ptr<JitLibrary>> publish_library(const std::string& tmp, const std::string& key,
                                                      int64_t expected_numel) const;
  // Deletes the entry's library and manifest (missing files are fine).
  void remove_entry(const std::string& key) const;

  // A fresh name in the same folder as `final_path` (pid + counter + random suffix).
  std::string temp_path(const std::string& final_path) const;
  // Renames `tmp` over `final_path` (atomic within one file system); removes tmp on failure.
  Status publish(const std::string& tmp, const std::string& final_path) const;
  // Writes `contents` to a new temporary file (0600) and publishes it as `path`.
  Status write_file(const std::string& path, const std::string& contents) const;

  // The cached version line of the compiler with this fingerprint ("" when unknown).
  std::string compiler_version(const std::string& fingerprint) const;
  Status store_compiler_version(const std::string& fingerprint, const std::string& version) const;

 private:
  DiskCache() = default;
  void make_private();

  std::string root_, dir_;
  std::unique_ptr<PrivateTempDir> private_root_;  // set for a private cache; removes it
  Status private_status_;                         // why a private cache has no folder
};

}  // namespace sdx::jit
