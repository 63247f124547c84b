#include "backend/cpu/jit/compiler.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

#include "backend/cpu/jit/cpp_emitter.h"
#include "backend/cpu/jit/process.h"

namespace sdx::jit {
namespace {

constexpr double kVersionTimeoutS = 30;
constexpr double kCompileTimeoutS = 300;

bool executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string search_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
  }
  return "";
}

}  // namespace

Result<std::string> find_compiler(const std::string& requested) {
  if (!requested.empty()) {
    if (requested.find('/') != std::string::npos) {
      if (executable(requested)) return requested;
      return not_found("C++ compiler '" + requested + "' (SDX_JIT_COMPILER) does not exist or is not executable");
    }
    std::string found = search_path(requested);
    if (found.empty()) return not_found("C++ compiler '" + requested + "' (SDX_JIT_COMPILER) is not on PATH");
    return found;
  }
  for (const char* name : {"c++", "g++"}) {
    std::string found = search_path(name);
    if (!found.empty()) return found;
  }
  return not_found("no C++ compiler: neither c++ nor g++ is on PATH (set SDX_JIT_COMPILER)");
}

Result<std::string> compiler_fingerprint(const std::string& path) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) return not_found("cannot resolve compiler path '" + path + "'");
  struct stat st;
  if (stat(resolved, &st) != 0) return not_found("cannot stat compiler '" + std::string(resolved) + "'");
  return std::string(resolved) + "|" + std::to_string(static_cast<long long>(st.st_size)) + "|" +
         std::to_string(static_cast<long long>(st.st_mtim.tv_sec)) + "." +
         std::to_string(static_cast<long long>(st.st_mtim.tv_nsec));
}

Result<std::string> query_compiler_version(const std::string& compiler, const std::string& scratch_dir,
                                           const std::atomic<bool>* cancel) {
  static std::atomic<uint64_t> sequence{0};  // unique names within the process (relaxed: only a counter)
  const std::string out = scratch_dir + "/version." + std::to_string(getpid()) + "." +
                          std::to_string(sequence.fetch_add(1, std::memory_order_relaxed)) + ".txt";
  Result<int> rc = run_process({compiler, "--version"}, out, cancel, kVersionTimeoutS);
  std::string text = read_text_file(out, 4096);
  unlink(out.c_str());
  if (!rc.is_ok()) return rc.status().with_context("compiler '" + compiler + "' --version");
  const std::string first = text.substr(0, text.find('\n'));
  if (rc.value() != 0 || first.empty())
    return failed_precondition("compiler '" + compiler + "' --version failed (exit status " + std::to_string(rc.value()) +
                               ")" + (first.empty() ? "" : ": " + first));
  return first;
}

Status compile_shared_library(const std::string& compiler, const std::string& source, const std::string& output,
                              const std::string& log_path, const std::atomic<bool>* cancel) {
  std::vector<std::string> argv = {compiler};
  std::stringstream flags(compile_flags());
  for (std::string f; flags >> f;) argv.push_back(f);
  argv.insert(argv.end(), {"-o", output, source, "-lm"});
  Result<int> rc = run_process(argv, log_path, cancel, kCompileTimeoutS);
  if (!rc.is_ok()) return rc.status().with_context("compiling " + source);
  if (rc.value() != 0) {
    std::string log = read_text_file(log_path, 600);
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return failed_precondition("compiler '" + compiler + "' failed (exit status " + std::to_string(rc.value()) + ")" +
                               (log.empty() ? "" : ": " + log));
  }
  if (!executable(output) && access(output.c_str(), R_OK) != 0)
    return failed_precondition("compiler '" + compiler + "' reported success but wrote no library");
  return Status::ok();
}

}  // namespace sdx::jit
