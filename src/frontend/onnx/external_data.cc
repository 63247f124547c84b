#include "frontend/onnx/external_data.h"

#include <fcntl.h>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdlib>
#include <memory>

namespace sdx::onnx {

Result<int64_t> parse_external_data_number(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (!digits || ec != std::errc() || ptr != end)
    return invalid_argument("'" + text.substr(0, 40) + "' is not a non-negative decimal integer" +
                            (ec == std::errc::result_out_of_range ? " within int64" : ""));
  return v;
}

Result<std::string> read_external_data(const std::string& model_dir, const std::string& location, int64_t offset,
                                       int64_t length) {
  const std::string what = "external data '" + location + "'";
  if (model_dir.empty()) return invalid_argument(what + ": a model loaded from bytes cannot reference external data");
  if (location.empty()) return invalid_argument("external data entry has an empty location");
  if (location[0] == '/' || location[0] == '\\') return invalid_argument(what + ": absolute paths are not allowed");
  if (location.find('\0') != std::string::npos) return invalid_argument(what + ": path contains a NUL byte");
  // Reject any ".." component (either separator).
  size_t start = 0;
  std::string walked = model_dir;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    std::string part = location.substr(start, end - start);
    if (part == "..") return invalid_argument(what + ": path escapes the model folder ('..')");
    if (!part.empty() && part != ".") {
      walked += "/" + part;
      struct stat st;
      if (lstat(walked.c_str(), &st) != 0) return not_found(what + ": file not found in the model folder");
      if (S_ISLNK(st.st_mode)) return invalid_argument(what + ": symbolic links are not allowed");
    }
    start = end + 1;
  }
  // Belt and braces: the canonical path must still be inside the canonical folder.
  std::unique_ptr<char, decltype(&std::free)> dir_real(realpath(model_dir.c_str(), nullptr), &std::free);
  std::unique_ptr<char, decltype(&std::free)> file_real(realpath(walked.c_str(), nullptr), &std::free);
  if (!dir_real || !file_real) return not_found(what + ": cannot resolve path");
  std::string d = dir_real.get(), f = file_real.get();
  if (f.compare(0, d.size(), d) != 0 || (f.size() > d.size() && f[d.size()] != '/'))
    return invalid_argument(what + ": path escapes the model folder");

  // O_NONBLOCK: opening a FIFO with no writer (or some devices) would otherwise block forever before the
  // regular-file check below could refuse it.
  int fd = open(walked.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return io_error(what + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return invalid_argument(what + ": not a regular file");
  }
  if (st.st_nlink > 1) {
    close(fd);
    return invalid_argument(what + ": hard links are not allowed");
  }
  int64_t size = static_cast<int64_t>(st.st_size);
  if (offset < 0 || offset > size) {
    close(fd);
    return out_of_range(what + ": offset " + std::to_string(offset) + " is past the end of the file (" +
                        std::to_string(size) + " bytes)");
  }
  if (length < 0) length = size - offset;
  if (length > size - offset) {
    close(fd);
    return out_of_range(what + ": offset " + std::to_string(offset) + " + length " + std::to_string(length) +
                        " exceeds the file size " + std::to_string(size));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  int64_t done = 0;
  while (done < length) {
    ssize_t r = pread(fd, bytes.data() + done, static_cast<size_t>(length - done), offset + done);
    if (r <= 0) {
      close(fd);
      return io_error(what + ": read failed");
    }
    done += r;
  }
  close(fd);
  return bytes;
}

}  // namespace sdx::onnx
