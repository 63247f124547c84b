// A whole file mapped into memory, read-only to the file: a bundle is checked and used in place (its
// weights are borrowed by the tensors that read them, with this mapping as their keepalive).
//
//   SDX_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> f, MappedFile::open("model.sdx"), "");
//   std::string_view bytes = f->bytes();
//
// The mapping is read-only. Replace a mapped file by writing a new one and renaming it over the old (the disk plan cache
// does): truncating it in place would fault readers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sdx {

class MappedFile {
 public:
  // Maps the regular file at `path` (an empty file is an empty view). Errors name the path and reason.
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sdx
