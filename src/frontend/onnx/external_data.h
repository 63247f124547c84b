// Reads tensor bytes stored outside the model file, confined to the model's folder.
//
// A location is rejected when it is absolute, contains "..", names a symlink
// anywhere along its path, is a hard link (link count > 1), or resolves outside
// the folder. The file is opened without following a final symlink and without
// blocking (a FIFO or device never hangs the load) and must be a regular file
// before any byte is read. offset/length are checked against the file size.
//
//   SDX_ASSIGN_OR_RETURN(std::string bytes,
//       read_external_data("/models/m", "weights.bin", 0, 4096), "initializer 'w'");
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace sdx::onnx {

// The value of an external data "offset" or "length" entry: decimal digits only (no sign, no "0x", no
// trailing characters), within int64.
Result<int64_t> parse_external_data_number(const std::string& text);

// length < 0 means "to the end of the file".
Result<std::string> read_external_data(const std::string& model_dir, const std::string& location, int64_t offset,
                                       int64_t length);

}  // namespace sdx::onnx
