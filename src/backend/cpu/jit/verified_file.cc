#include "backend/cpu/jit/verified_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/xxh3_digest.h"

namespace sdx::jit {
namespace {

class Fd {  // closes on scope exit unless released
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Opens `path` for reading with the checks of the header; `st` receives its fstat.
Result<int> open_checked(const std::string& path, int64_t max_bytes, bool make_private, struct stat* st) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found("'" + path + "' does not exist");
    if (err == ELOOP) return failed_precondition("'" + path + "' is a symbolic link");
    return io_error("cannot open '" + path + "': " + std::strerror(err));
  }
  if (fstat(fd.get(), st) != 0) return io_error("cannot inspect '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st->st_mode)) return failed_precondition("'" + path + "' is not a regular file");
  if (st->st_uid != geteuid())
    return failed_precondition("'" + path + "' belongs to uid " + std::to_string(st->st_uid) + ", not to this user (uid " +
                               std::to_string(geteuid()) + ")");
  if (make_private && (st->st_mode & 07777) != 0600) {
    if (fchmod(fd.get(), 0600) != 0 || fstat(fd.get(), st) != 0)
      return io_error("cannot make '" + path + "' private: " + std::strerror(errno));
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st->st_mode & 07777));
    return failed_precondition("'" + path + "' is writable by group or others (mode " + mode + ")");
  }
  if (st->st_size > max_bytes)
    return failed_precondition("'" + path + "' is larger (" + std::to_string(static_cast<long long>(st->st_size)) +
                               " bytes) than any file the cache writes");
  // O_NONBLOCK only guarded the open (a FIFO planted under the name must not block it).
  fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd.release();
}

// Reads the whole file through `fd` from offset 0, feeding each chunk to `sink`; the byte
// count must match `expected` (a file truncated or grown meanwhile is not the file we checked).
template <typename Sink>
Status read_all(int fd, const std::string& path, int64_t expected, Sink&& sink) {
  char buf[1 << 16];
  int64_t total = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(total));
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot read '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    sink(buf, static_cast<size_t>(n));
    total += n;
    if (total > expected) break;
  }
  if (total != expected) return failed_precondition("'" + path + "' changed size while it was read");
  return Status::ok();
}

}  // namespace

Result<VerifiedFile> VerifiedFile::open(const std::string& path, int64_t max_bytes, bool make_private) {
  struct stat st;
  SDX_ASSIGN_OR_RETURN(int raw, open_checked(path, max_bytes, make_private, &st), "");
  VerifiedFile f;
  f.fd_ = raw;  // owned by f from here on
  f.path_ = path;
  f.size_ = static_cast<int64_t>(st.st_size);
  f.dev_ = st.st_dev;
  f.ino_ = st.st_ino;
  Xxh3Digest h;
  SDX_RETURN_IF_ERROR(read_all(f.fd_, path, f.size_, [&](const char* p, size_t n) { h.update(p, n); }), "");
  f.digest_ = h.finish();
  return f;
}

VerifiedFile::VerifiedFile(VerifiedFile&& other) noexcept
    : path_(std::move(other.path_)),
      digest_(std::move(other.digest_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      dev_(other.dev_),
      ino_(other.ino_) {}

VerifiedFile& VerifiedFile::operator=(VerifiedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    digest_ = std::move(other.digest_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    dev_ = other.dev_;
    ino_ = other.ino_;
  }
  return *this;
}

VerifiedFile::~VerifiedFile() {
  if (fd_ >= 0) ::close(fd_);
}

int VerifiedFile::release() { return std::exchange(fd_, -1); }

Result<std::string> read_private_file(const std::string& path, size_t max_bytes) {
  struct stat st;
  SDX_ASSIGN_OR_RETURN(int raw, open_checked(path, static_cast<int64_t>(max_bytes), false, &st), "");
  Fd fd(raw);
  std::string out;
  SDX_RETURN_IF_ERROR(read_all(fd.get(), path, static_cast<int64_t>(st.st_size),
                               [&](const char* p, size_t n) { out.append(p, n); }),
                      "");
  return out;
}

}  // namespace sdx::jit
