// The system C++ compiler, as the JIT uses it: found once (SDX_JIT_COMPILER, else c++ then g++
// on PATH), identified by its version line (part of every disk-cache key), and run to build
// one generated source file into a shared library.
//
//   SDX_ASSIGN_OR_RETURN(std::string cxx, find_compiler(options.compiler), "");
//   SDX_ASSIGN_OR_RETURN(std::string version, query_compiler_version(cxx, dir, &cancel), "");
//   SDX_RETURN_IF_ERROR(compile_shared_library(cxx, "k.cc", "k.so.tmp", "k.log", &cancel), "");
#pragma once

#include <atomic>
#include <string>

#include "core/status.h"

namespace sdx::jit {

// The absolute path of the compiler: `requested` (a path, or a name searched on PATH), or c++,
// then g++, from PATH when it is empty. not_found names what was looked for.
Result<std::string> find_compiler(const std::string& requested);

// A fingerprint of the compiler executable that needs no run of it: its resolved path, size and
// modification time (a changed or upgraded compiler gets a new one). Errors when it cannot be read.
Result<std::string> compiler_fingerprint(const std::string& path);

// The first line of `compiler --version` (runs the compiler; `scratch_dir` holds its output).
Result<std::string> query_compiler_version(const std::string& compiler, const std::string& scratch_dir,
                                           const std::atomic<bool>* cancel);

// Builds `source` into the shared library `output` with the JIT's flags (cpp_emitter.h); the
// compiler's messages go to `log_path`. The error carries the start of the log.
Status compile_shared_library(const std::string& compiler, const std::string& source, const std::string& output,
                              const std::string& log_path, const std::atomic<bool>* cancel);

}  // namespace sdx::jit
