// Runs a child process (the system compiler) and waits for it, with a time limit and a cancel
// flag checked while waiting, so a session being destroyed never waits for a compile. stdout and
// stderr go to one file.
//
// Hygiene: the child leads its own process group (POSIX_SPAWN_SETPGROUP), so on cancel or
// timeout the whole group is killed (SIGKILL): the compiler driver and the cc1plus, as, ld it
// started, not the driver alone. It runs with TMPDIR set to a private folder made for this run
// (PrivateTempDir: mkdtemp, 0700), removed with everything in it afterwards whatever the outcome,
// so a killed compile leaves no cc*.s behind. The group is also signalled when the driver exits on
// its own (before it is reaped, so its id cannot have been reused), so nothing it left running
// outlives the call. The price of the own group: a terminal's Ctrl-C no longer reaches the
// compiler directly; the process that runs sdx cancels it (destroying its sessions) instead.
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
