#include "backend/cpu/jit/cache_permissions.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace sdx::jit {
namespace {

std::string octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

// "/", "/a", "/a/b", ... for an absolute path (empty components and a trailing '/' skipped).
std::vector<std::string> prefixes(const std::string& abs) {
  std::vector<std::string> out = {"/"};
  std::string cur;
  size_t pos = 0;
  while (pos < abs.size()) {
    const size_t next = abs.find('/', pos);
    const std::string part = abs.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!part.empty()) {
      cur += "/" + part;
      out.push_back(cur);
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

bool owner_trusted(uid_t uid) { return uid == geteuid() || uid == 0; }

Status check_folder_above(const std::string& path, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return failed_precondition("'" + path + "' is not a folder");
  if (!owner_trusted(st.st_uid))
    return failed_precondition("folder '" + path + "' above the cache belongs to uid " + std::to_string(st.st_uid) +
                               ", neither this user (uid " + std::to_string(geteuid()) + ") nor root");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    return failed_precondition("folder '" + path + "' above the cache is writable by group or others (mode " +
                               octal(st.st_mode) + ") and not sticky");
  return Status::ok();
}

}  // namespace

Status make_private_dirs(const std::string& path) {
  for (const std::string& p : prefixes(absolute(path))) {
    if (mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
      return io_error("cannot create folder '" + p + "': " + std::strerror(errno));
  }
  return Status::ok();
}

Status check_private_dir(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return io_error("cannot inspect '" + path + "': " + std::strerror(errno));
  if (S_ISLNK(st.st_mode))
    return failed_precondition("'" + path + "' is a symbolic link (the cache's folders must be real folders)");
  if (!S_ISDIR(st.st_mode)) return failed_precondition("'" + path + "' is not a folder");
  if (st.st_uid != geteuid())
    return failed_precondition("'" + path + "' belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                               std::to_string(geteuid()) + ")");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return failed_precondition("'" + path + "' is writable by group or others (mode " + octal(st.st_mode) + ")");
  return Status::ok();
}

Status check_folders_above(const std::string& path) {
  std::vector<std::string> written = prefixes(absolute(path));
  written.pop_back();  // `path` itself: check_private_dir judges it
  if (written.empty()) return failed_precondition("'/' cannot be a cache folder");
  // As written: lstat, so a symbolic link is seen as one. (Components after a link resolve
  // through it; the resolved walk below covers where it points.)
  for (const std::string& p : written) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) return io_error("cannot inspect '" + p + "': " + std::strerror(errno));
    if (S_ISLNK(st.st_mode)) {
      if (!owner_trusted(st.st_uid))
        return failed_precondition("symbolic link '" + p + "' above the cache belongs to uid " +
                                   std::to_string(st.st_uid) + ", neither this user nor root");
      continue;
    }
    if (Status s = check_folder_above(p, st); !s.is_ok()) return s;
  }
  // As resolved.
  char resolved[PATH_MAX];
  if (!realpath(written.back().c_str(), resolved))
    return io_error("cannot resolve '" + written.back() + "': " + std::strerror(errno));
  for (const std::string& p : prefixes(resolved)) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return io_error("cannot inspect '" + p + "': " + std::strerror(errno));
    if (Status s = check_folder_above(p, st); !s.is_ok()) return s;
  }
  return Status::ok();
}

}  // namespace sdx::jit
