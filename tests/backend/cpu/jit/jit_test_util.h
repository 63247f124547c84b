// Helpers shared by the JIT tests: temporary folders, a compiler wrapper script that records
// every run, an environment variable set for one scope, and a "planted" library whose
// constructor leaves a marker file (to prove a library was never loaded).
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "backend/cpu/jit/compiler.h"
#include "backend/cpu/jit/cpp_emitter.h"
#include "backend/cpu/jit/process.h"

namespace sdx::jit::test {

// A fresh folder under TMPDIR (or /tmp), removed by the destructor.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/sdx_jit_test.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    path_ = mkdtemp(buf.data());
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A shell script that appends its arguments to `log` and runs the real compiler; empty when
// this machine has no C++ compiler.
inline std::string recording_compiler(const std::string& dir, const std::string& log) {
  auto real = find_compiler("");
  if (!real.is_ok()) return "";
  const std::string path = dir + "/recording-c++";
  std::ofstream f(path);
  f << "#!/bin/sh\necho \"$@\" >> '" << log << "'\nexec '" << real.value() << "' \"$@\"\n";
  f.close();
  chmod(path.c_str(), 0755);
  return path;
}

// Sets (or, with nullptr, unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

// The uid the tests give folders that must look like "another user's": nobody (65534), unless
// that is who runs the tests.
inline uid_t other_uid() { return geteuid() == 65534 ? 65533 : 65534; }

// Whether this process may chown files to another user (root may; others skip those tests).
inline bool can_chown_to_other_user(const std::string& dir) {
  const std::string probe = dir + "/chown-probe";
  std::ofstream(probe) << "x";
  const bool ok = chown(probe.c_str(), other_uid(), other_uid()) == 0;
  std::remove(probe.c_str());
  return ok;
}

// Builds a library whose constructor creates `marker` as soon as it is loaded (and which even
// exports the symbols of an sdx JIT library), into `output`. False when there is no compiler.
inline bool build_planted_library(const std::string& dir, const std::string& output, const std::string& marker,
                                  long long numel = 15) {
  auto cxx = find_compiler("");
  if (!cxx.is_ok()) return false;
  const std::string src = dir + "/planted.cc";
  std::ofstream(src) << "#include <cstdio>\n"
                        "__attribute__((constructor)) static void planted() {\n"
                        "  if (FILE* f = std::fopen(\"" << marker << "\", \"w\")) { std::fputs(\"loaded\\n\", f); std::fclose(f); }\n"
                        "}\n"
                        "extern \"C\" { extern const char sdx_jit_abi[] = \"" << kJitAbi << "\"; extern const long long sdx_jit_numel = " << numel << ";\n"
                        "void sdx_jit_segment(const float* const*, float* const*, long long, long long) {} }\n";
  std::atomic<bool> cancel{false};
  return compile_shared_library(cxx.value(), src, output, dir + "/planted.log", &cancel).is_ok();
}

// A library of JIT ABI for a domain of 4 whose segment writes `value` everywhere, built in `dir`;
// its path, or "" when there is no working compiler.
inline std::string build_constant_library(const std::string& dir, int value) {
  auto cxx = find_compiler("");
  if (!cxx.is_ok()) return "";
  const std::string src = dir + "/k" + std::to_string(value) + ".cc", so = dir + "/k" + std::to_string(value) + ".so";
  std::ofstream(src) << "extern \"C\" { extern const char sdx_jit_abi[] = \"" << kJitAbi
                     << "\"; extern const long long sdx_jit_numel = 4;\n"
                        "void sdx_jit_segment(const float* const*, float* const* out, long long b, long long e) {\n"
                        "  for (long long i = b; i < e; ++i) out[0][i] = "
                     << value << ".0f; } }\n";
  std::atomic<bool> cancel{false};
  if (!compile_shared_library(cxx.value(), src, so, so + ".log", &cancel).is_ok()) return "";
  return so;
}

inline bool file_exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline int count_lines(const std::string& path) {
  const std::string s = read_text_file(path);
  int n = 0;
  for (char c : s) n += c == '\n' ? 1 : 0;
  return n;
}

}  // namespace sdx::jit::test
