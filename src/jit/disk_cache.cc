#include "jit/disk_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "jit/cpp_emitter.h"
#include "jit/process.h"

namespace sdx::jit {
namespace {

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Status make_dirs(const std::string& path) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      return io_error("cannot create folder '" + cur + "': " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

uint64_t fnv1a64(std::string_view data, uint64_t h) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string DiskCache::default_root() {
  if (const char* v = std::getenv("SDX_CACHE_DIR"); v && *v) return std::string(v) + "/jit";
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return std::string(v) + "/sdx/jit";
  if (const char* v = std::getenv("HOME"); v && *v) return std::string(v) + "/.cache/sdx/jit";
  return "/tmp/sdx-cache-" + std::to_string(getuid()) + "/jit";
}

DiskCache::DiskCache(const std::string& root)
    : dir_((root.empty() ? default_root() : root) + "/" + kCacheLayoutVersion) {}

Status DiskCache::ensure_dir() const {
  SDX_RETURN_IF_ERROR(make_dirs(dir_ + "/compilers"), "JIT disk cache");
  return Status::ok();
}

std::string DiskCache::key(const std::string& source, const std::string& compiler_version) {
  uint64_t h = fnv1a64(source);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(compiler_version, h);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(kCompileFlags, h);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(kJitAbi, h);
  return hex64(h);
}

bool DiskCache::exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

std::string DiskCache::temp_path(const std::string& final_path) const {
  static std::atomic<uint64_t> sequence{0};  // unique within the process (relaxed: only a counter)
  thread_local std::mt19937_64 rng(std::random_device{}());
  return final_path + ".tmp." + std::to_string(getpid()) + "." +
         std::to_string(sequence.fetch_add(1, std::memory_order_relaxed)) + "." + hex64(rng()).substr(0, 8);
}

Status DiskCache::publish(const std::string& tmp, const std::string& final_path) const {
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return io_error("cannot rename '" + tmp + "' to '" + final_path + "': " + err);
  }
  return Status::ok();
}

Status DiskCache::write_file(const std::string& path, const std::string& contents) const {
  const std::string tmp = temp_path(path);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return io_error("cannot write '" + tmp + "'");
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      return io_error("cannot write '" + tmp + "'");
    }
  }
  return publish(tmp, path);
}

std::string DiskCache::compiler_version(const std::string& fingerprint) const {
  std::string v = read_text_file(dir_ + "/compilers/" + hex64(fnv1a64(fingerprint)) + ".txt", 4096);
  // The file holds "fingerprint\nversion\n": a hash collision must not hand out another compiler's version.
  const size_t nl = v.find('\n');
  if (nl == std::string::npos || v.compare(0, nl, fingerprint) != 0) return "";
  v = v.substr(nl + 1);
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

Status DiskCache::store_compiler_version(const std::string& fingerprint, const std::string& version) const {
  return write_file(dir_ + "/compilers/" + hex64(fnv1a64(fingerprint)) + ".txt", fingerprint + "\n" + version + "\n");
}

}  // namespace sdx::jit
