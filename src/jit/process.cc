#include "jit/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace sdx::jit {

Result<int> run_process(const std::vector<std::string>& argv, const std::string& output_path,
                        const std::atomic<bool>* cancel, double timeout_s) {
  if (argv.empty()) return invalid_argument("run_process: no program");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  // posix_spawnp searches PATH when the program has no slash.
  const int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return not_found("cannot run '" + argv[0] + "': " + std::strerror(err));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return 255;
    }
    if (r < 0 && errno != EINTR) return internal_error(std::string("waitpid: ") + std::strerror(errno));
    const bool cancelled = cancel && cancel->load(std::memory_order_acquire);
    if (cancelled || std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);  // the child we started, by its id
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (cancelled) return failed_precondition("cancelled");
      return resource_exhausted("'" + argv[0] + "' ran past " + std::to_string(static_cast<int>(timeout_s)) + " s");
    }
    // A short poll: cancelling (a session being destroyed) must not wait long; ~1000 wakeups a
    // second of an otherwise idle thread cost nothing next to the compiler.
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::string s(max_bytes, '\0');
  f.read(s.data(), static_cast<std::streamsize>(max_bytes));
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

}  // namespace sdx::jit
