// Runs a child process (the system compiler) and waits for it, with a time limit and a
// cancel flag checked while waiting, so a session being destroyed never waits for a compile:
// the child is killed (SIGKILL) and reaped. stdout and stderr go to one file.
//
//   std::atomic<bool> cancel{false};
//   Result<int> rc = run_process({"g++", "--version"}, "/tmp/out.txt", &cancel, 60.0);
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/status.h"

namespace sdx::jit {

// The exit status (0..255; 128 + signal when killed by one), or an error when the program
// cannot be started, was cancelled or ran past timeout_s.
Result<int> run_process(const std::vector<std::string>& argv, const std::string& output_path,
                        const std::atomic<bool>* cancel, double timeout_s);

// The first `max_bytes` of a text file ("" when unreadable).
std::string read_text_file(const std::string& path, size_t max_bytes = 1 << 16);

}  // namespace sdx::jit
