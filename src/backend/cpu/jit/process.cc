#include "backend/cpu/jit/process.h"

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

#include "backend/cpu/jit/private_temp_dir.h"

extern char** environ;

namespace sdx::jit {
namespace {

// This process's environment with TMPDIR replaced by `tmpdir`.
std::vector<std::string> child_environment(const std::string& tmpdir) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) env.emplace_back(*e);
  env.push_back("TMPDIR=" + tmpdir);
  return env;
}

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// Kills the child's whole group, then reaps the child. The child is not reaped before the
// kill, so its pid (= the group's id) cannot have been given to another process meanwhile.
int kill_group_and_reap(pid_t pid) {
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

Result<int> run_process(const std::vector<std::string>& argv, const std::string& output_path,
                        const std::atomic<bool>* cancel, double timeout_s) {
  if (argv.empty()) return invalid_argument("run_process: no program");
  // Removed when this function returns, however it returns (after the group is dead).
  SDX_ASSIGN_OR_RETURN(PrivateTempDir tmpdir, PrivateTempDir::create("sdx-cc"), "running '" + argv[0] + "'");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = child_environment(tmpdir.path());
  std::vector<char*> env;
  for (std::string& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // a new group whose id is the child's pid
  pid_t pid = -1;
  // posix_spawnp searches PATH when the program has no slash.
  const int err = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return not_found("cannot run '" + argv[0] + "': " + std::strerror(err));

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    // WNOWAIT: see the exit without reaping, so the group can still be signalled safely.
    siginfo_t info;
    info.si_pid = 0;
    const int r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) return decode(kill_group_and_reap(pid));
    if (r < 0 && errno != EINTR) {
      kill_group_and_reap(pid);
      return internal_error(std::string("waitid: ") + std::strerror(errno));
    }
    const bool cancelled = cancel && cancel->load(std::memory_order_acquire);
    if (cancelled || std::chrono::steady_clock::now() > deadline) {
      kill_group_and_reap(pid);
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
