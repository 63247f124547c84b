#include "backend/cpu/jit/private_temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace sdx::jit {
namespace {

// Folders created with remove_at_exit and not yet removed. Heap-allocated and never freed, so the
// atexit handler can run after static destructors without touching a destroyed object.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::set<std::string>& registry() {
  static auto* s = new std::set<std::string>;
  return *s;
}

void remove_tree(const std::string& path) {
  // A compiler killed a moment ago may still be tearing down (a SIGKILLed process runs no more
  // user code, but one stuck in a file system call finishes it first), so a removal that meets a
  // folder filling up again is retried briefly.
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);  // does not follow symbolic links
    if (!ec || ec == std::errc::no_such_file_or_directory) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void remove_registered_at_exit() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const std::string& path : registry()) remove_tree(path);
  registry().clear();
}

}  // namespace

Result<PrivateTempDir> PrivateTempDir::create(const std::string& prefix, bool remove_at_exit) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  // mkdtemp creates the folder with mode 0700 and fails rather than reuse an existing name.
  if (!mkdtemp(buf.data())) return io_error("cannot create a private temporary folder '" + tmpl + "': " + std::strerror(errno));
  std::string path(buf.data());
  if (remove_at_exit) {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(remove_registered_at_exit); });
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().insert(path);
  }
  return PrivateTempDir(std::move(path), remove_at_exit);
}

PrivateTempDir::PrivateTempDir(PrivateTempDir&& other) noexcept : path_(std::move(other.path_)), at_exit_(other.at_exit_) {
  other.path_.clear();
}

PrivateTempDir& PrivateTempDir::operator=(PrivateTempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    at_exit_ = other.at_exit_;
    other.path_.clear();
  }
  return *this;
}

void PrivateTempDir::remove() {
  if (path_.empty()) return;
  remove_tree(path_);
  if (at_exit_) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().erase(path_);
  }
  path_.clear();
}

}  // namespace sdx::jit
