#include "backend/cpu/jit/disk_cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/jit/cache_permissions.h"
#include "backend/cpu/jit/cpp_emitter.h"
#include "backend/cpu/jit/verified_file.h"

namespace sdx::jit {
namespace {

constexpr size_t kMaxManifestBytes = 4096;

// The home folder of the effective user (the one that owns what the cache writes) in the
// password database; "" when it has none.
std::string passwd_home() {
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) != 0 || !found || !found->pw_dir) return "";
  return found->pw_dir;
}

}  // namespace

std::string DiskCache::default_root_from(const char* sdx_cache_dir, const char* xdg_cache_home, const char* home,
                                         const char* pw_home, const std::string& leaf) {
  if (sdx_cache_dir && *sdx_cache_dir) return std::string(sdx_cache_dir) + "/" + leaf;
  if (xdg_cache_home && *xdg_cache_home) return std::string(xdg_cache_home) + "/sdx/" + leaf;
  if (home && *home) return std::string(home) + "/.cache/sdx/" + leaf;
  if (pw_home && *pw_home) return std::string(pw_home) + "/.cache/sdx/" + leaf;
  return "";  // no home at all: a private cache, never a shared path in /tmp
}

std::string DiskCache::default_root(const std::string& leaf) {
  const char* home = std::getenv("HOME");
  const std::string pw = home && *home ? std::string() : passwd_home();  // only looked up when needed
  return default_root_from(std::getenv("SDX_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), home, pw.c_str(), leaf);
}

DiskCache::DiskCache(const std::string& root) {
  root_ = root.empty() ? default_root() : root;
  if (root_.empty()) {
    make_private();
    return;
  }
  dir_ = root_ + "/" + kCacheLayoutVersion;
}

DiskCache DiskCache::private_cache() {
  DiskCache c;
  c.make_private();
  return c;
}

void DiskCache::make_private() {
  // Removed with this object, or at exit if it is never destroyed (a session left to the end).
  Result<PrivateTempDir> tmp = PrivateTempDir::create("sdx-jit-private", /*remove_at_exit=*/true);
  if (!tmp.is_ok()) {
    private_status_ = tmp.status().with_context("JIT kernel folder (the user has no home folder)");
    return;
  }
  private_root_ = std::make_unique<PrivateTempDir>(std::move(tmp).value());
  root_ = private_root_->path();
  dir_ = root_ + "/" + kCacheLayoutVersion;
}

Status DiskCache::ensure_dir() const {
  if (!private_status_.is_ok()) return private_status_;
  SDX_RETURN_IF_ERROR(make_private_dirs(dir_ + "/compilers"), "JIT disk cache");
  Status st = check_folders_above(root_);
  for (const std::string& d : {root_, dir_, dir_ + "/compilers"})
    if (st.is_ok()) st = check_private_dir(d);
  if (!st.is_ok()) return st.with_context("JIT disk cache '" + root_ + "' refused");
  return Status::ok();
}

std::string DiskCache::key(const std::string& source, const std::string& compiler_version) {
  uint64_t h = fnv1a64(source);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(compiler_version, h);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(compile_flags(), h);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(kJitAbi, h);
  return hex64(h);
}

bool DiskCache::exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

Result<std::shared_ptr<JitLibrary>> DiskCache::load(const std::string& key, int64_t expected_numel) const {
  const std::string so = library_path(key);
  Result<std::string> text = read_private_file(manifest_path(key), kMaxManifestBytes);
  Result<VerifiedFile> file = VerifiedFile::open(so, kMaxLibraryBytes);
  const bool no_manifest = !text.is_ok() && text.status().code() == StatusCode::kNotFound;
  const bool no_library = !file.is_ok() && file.status().code() == StatusCode::kNotFound;
  if (no_library) {
    if (!no_manifest) remove_entry(key);  // a manifest left alone: the compile writes both again
    return not_found("kernel " + key + " is not in the disk cache");
  }
  // Whatever is wrong below, the library is never handed to the loader.
  std::string why;
  if (no_manifest) {
    why = "its manifest is missing";
  } else if (!text.is_ok()) {
    why = "its manifest cannot be used: " + text.status().message();
  } else if (Result<CacheManifest> m = CacheManifest::parse(text.value()); !m.is_ok()) {
    why = m.status().message();
  } else if (m.value().key != key) {
    why = "its manifest is for kernel " + m.value().key;
  } else if (!file.is_ok()) {
    why = file.status().message();
  } else if (file.value().size() != m.value().size) {
    why = "it has " + std::to_string(static_cast<long long>(file.value().size())) + " bytes, its manifest says " +
          std::to_string(static_cast<long long>(m.value().size));
  } else if (file.value().digest() != m.value().digest) {
    why = "its XXH3-128 digest differs from its manifest's";
  } else {
    return JitLibrary::load(std::move(file).value(), expected_numel);
  }
  remove_entry(key);
  return data_loss("cached kernel " + key + " was not loaded (" + why + "); deleted, to be compiled again");
}

Result<std::shared_ptr<JitLibrary>> DiskCache::publish_library(const std::string& tmp, const std::string& key,
                                                               int64_t expected_numel) const {
  Result<VerifiedFile> file = VerifiedFile::open(tmp, kMaxLibraryBytes, /*make_private=*/true);
  if (!file.is_ok()) {
    std::remove(tmp.c_str());
    return file.status().with_context("the compiled kernel " + key);
  }
  const std::string so = library_path(key);
  SDX_RETURN_IF_ERROR(publish(tmp, so), "publishing kernel " + key);
  file.value().set_path(so);  // the descriptor follows the rename: it is the file now named `so`
  const CacheManifest manifest{key, file.value().size(), file.value().digest()};
  // Best effort: without its manifest the entry is rebuilt by the next process that wants it.
  (void)write_file(manifest_path(key), manifest.to_text());
  return JitLibrary::load(std::move(file).value(), expected_numel);
}

void DiskCache::remove_entry(const std::string& key) const {
  unlink(library_path(key).c_str());
  unlink(manifest_path(key).c_str());
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
  // O_EXCL | O_NOFOLLOW: a name planted in advance is never written through.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      unlink(tmp.c_str());
      return io_error("cannot write '" + tmp + "': " + err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    unlink(tmp.c_str());
    return io_error("cannot write '" + tmp + "'");
  }
  return publish(tmp, path);
}

std::string DiskCache::compiler_version(const std::string& fingerprint) const {
  Result<std::string> text = read_private_file(dir_ + "/compilers/" + hex64(fnv1a64(fingerprint)) + ".txt", 4096);
  if (!text.is_ok()) return "";
  std::string v = text.value();
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
