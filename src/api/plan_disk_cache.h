// The disk plan cache: what a process learned about a model (its optimized graph, the frozen plans of
// the input shapes it saw, the weights its kernels packed) kept as an .sdx bundle (api/bundle.h), so
// that the next process that loads the same model bytes with the same options starts from it: no
// optimizer, no warmup, no packing, the bundle's weights used in place. On by default
// (SessionOptions::disk_plan_cache, SDX_DISK_PLAN_CACHE=0 turns it off).
//
//   <root>/v1/<key>.sdx    root = disk_plan_cache_dir, else $SDX_CACHE_DIR/plans, else
//                          $XDG_CACHE_HOME/sdx/plans, else ~/.cache/sdx/plans
//   key = FNV-1a 64 of (XXH3-64 of the model's bytes, the options that shape the compiled result, the
//         sdx version and build ID (core/version.h: a rebuilt library with other passes or kernels
//         must not replay the plans of the old one), the CPU's ISA, the bundle format)
//
// The model's bytes are digested with XXH3-64 (xxHash, the bundle checksum's hash), not FNV-1a: over a
// 46.8 MB ResNet-18 FNV-1a takes 77 ms, and every load pays it; XXH3 takes 1-4 ms per 25 MB here (memory-
// bound, the page cache's state decides). FNV-1a then hashes the short key text, as the DSP design's cache does. Models whose weights live in files beside them (ONNX external data) are not
// kept: their bytes do not determine them.
//
// Lifecycle, in api/load.cc: a load computes the key and maps the entry when there is one (a hit:
// PLAN_CACHE_HIT); a miss loads the ONNX model as usual (PLAN_CACHE_MISS). Either way the session gets
// a writer (PlanCacheWriter): when one of its contexts captures a plan whose input signature the entry
// lacks, the writer rewrites the entry with that plan added, on a thread of its own (PLAN_CACHE_WRITTEN),
// so the call that captured does not wait for the disk. A miss records the weights kernels pack until
// the first write, then frees the copies.
//
// Trust: entries are checked as any bundle is (checksum, format and sdx version, every length); one
// that fails is deleted with a warning and the model is loaded from ONNX (PLAN_CACHE_REFUSED). Packed
// weights are used only where the kernel would pack exactly that layout (backend/packed_weights.h), so
// an entry from another CPU or thread count costs a re-pack, never a wrong answer. The folders are
// created 0700 and refused when another user could write them (backend/cpu/jit/cache_permissions.h). Writes go to
// a unique temporary file renamed into place, so concurrent processes never see a partial entry (the
// last rename wins); readers keep their mapping of the file they opened. After each write, the least
// recently used entries (by modification time, which a hit refreshes) beyond disk_plan_cache_max_bytes
// are deleted, as are temporary files an interrupted writer left over an hour ago.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/mapped_file.h"
#include "core/status.h"
#include "runtime/session.h"

namespace sdx::api {

class PlanDiskCache {
 public:
  // The cache `options` ask for; null when they turn it off, or when its folder is refused (a warning
  // on stderr says why, once per folder and process).
  static std::shared_ptr<PlanDiskCache> open(const runtime::SessionOptions& options);

  // The entry key of a model's bytes under `options` (16 hex digits).
  static std::string key(std::string_view model_bytes, const runtime::SessionOptions& options);
  const std::string& dir() const { return dir_; }
  std::string path(const std::string& key) const { return dir_ + "/" + key + ".sdx"; }

  // The entry, mapped (and marked as just used); not_found when there is none.
  Result<std::shared_ptr<MappedFile>> find(const std::string& key) const;
  // Replaces the entry atomically, then deletes least recently used entries beyond the size cap.
  Status store(const std::string& key, const std::string& bundle_bytes) const;
  void remove(const std::string& key) const;
  // Bytes held by the entries now.
  int64_t size_bytes() const;

 private:
  std::string root_, dir_;
  int64_t max_bytes_ = 0;
  void evict(const std::string& keep) const;
};

// Gives `session` (loaded as `key`; from the cache's entry when `hit`) the writer that persists each
// plan it captures whose signature the entry lacks.
void attach_plan_cache_writer(runtime::Session& session, std::shared_ptr<PlanDiskCache> cache, std::string key,
                              bool hit);

}  // namespace sdx::api
