// Helpers shared by the JIT tests: temporary folders, a compiler wrapper script that records
// every run, and chain models of elementwise ops.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "jit/compiler.h"
#include "jit/process.h"

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

inline int count_lines(const std::string& path) {
  const std::string s = read_text_file(path);
  int n = 0;
  for (char c : s) n += c == '\n' ? 1 : 0;
  return n;
}

}  // namespace sdx::jit::test
