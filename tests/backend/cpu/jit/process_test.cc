#include "backend/cpu/jit/process.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "jit_test_util.h"

namespace sdx::jit {
namespace {

std::vector<std::string> list(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

// Running (or stopped) — not gone and not a zombie waiting for whoever adopted it.
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

bool all_gone_within(const std::vector<pid_t>& pids, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    bool any = false;
    for (pid_t p : pids) any = any || alive(p);
    if (!any) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<pid_t> read_pids(const std::string& path) {
  std::vector<pid_t> pids;
  std::ifstream f(path);
  for (long p; f >> p;) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

TEST(Process, ExitStatusAndOutput) {
  test::TempDir tmp;
  const std::string out = tmp.path() + "/out.txt";
  auto rc = run_process({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, out, nullptr, 30);
  ASSERT_TRUE(rc.is_ok()) << rc.status().to_string();
  EXPECT_EQ(rc.value(), 3);
  EXPECT_EQ(read_text_file(out), "hello\noops\n");
}

TEST(Process, MissingProgram) {
  test::TempDir tmp;
  auto rc = run_process({"/nonexistent/sdx-no-such-compiler"}, tmp.path() + "/o", nullptr, 30);
  EXPECT_FALSE(rc.is_ok());
}

TEST(Process, CancelKillsTheChild) {
  test::TempDir tmp;
  std::atomic<bool> cancel{true};
  const auto t0 = std::chrono::steady_clock::now();
  auto rc = run_process({"/bin/sleep", "30"}, tmp.path() + "/o", &cancel, 60);
  EXPECT_FALSE(rc.is_ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(Process, TimeLimit) {
  test::TempDir tmp;
  auto rc = run_process({"/bin/sleep", "30"}, tmp.path() + "/o", nullptr, 0.2);
  EXPECT_FALSE(rc.is_ok());
  EXPECT_NE(rc.status().message().find("ran past"), std::string::npos);
}

// A compiler driver's children (cc1plus, as) are what a kill of the driver alone leaves running.
TEST(Process, CancelKillsTheWholeProcessGroup) {
  test::TempDir tmp;
  const std::string pids = tmp.path() + "/pids";
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (read_pids(pids).size() < 3 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cancel.store(true, std::memory_order_release);
  });
  // The shell, a background sleep and a foreground sleep: three processes of one group.
  auto rc = run_process({"/bin/sh", "-c", "echo $$ > " + pids + ".t; sleep 30 & echo $! >> " + pids +
                                              ".t; (sleep 30; true) & echo $! >> " + pids + ".t; mv " + pids + ".t " +
                                              pids + "; wait"},
                        tmp.path() + "/o", &cancel, 60);
  canceller.join();
  ASSERT_FALSE(rc.is_ok());
  EXPECT_EQ(rc.status().message(), "cancelled");
  const std::vector<pid_t> started = read_pids(pids);
  ASSERT_EQ(started.size(), 3u) << read_text_file(tmp.path() + "/o");
  EXPECT_TRUE(all_gone_within(started, 1.0)) << "a process of the cancelled group survived";
}

TEST(Process, TimeoutKillsTheWholeProcessGroup) {
  test::TempDir tmp;
  const std::string pids = tmp.path() + "/pids";
  auto rc = run_process({"/bin/sh", "-c", "sleep 30 & echo $! > " + pids + "; sleep 30"}, tmp.path() + "/o", nullptr, 1.0);
  ASSERT_FALSE(rc.is_ok());
  const std::vector<pid_t> started = read_pids(pids);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_TRUE(all_gone_within(started, 1.0));
}

TEST(Process, ChildLeadsItsOwnGroupWithAPrivateTmpdirRemovedAfterwards) {
  test::TempDir base, other;
  test::ScopedEnv env("TMPDIR", base.path().c_str());
  const std::string out = other.path() + "/out";
  // pid, pgid (field 5 of /proc/self/stat of the shell), $TMPDIR, its mode; then a temp file
  // like the compiler's cc*.s, left behind on purpose.
  auto rc = run_process({"/bin/sh", "-c",
                         "echo $$; cut -d' ' -f5 /proc/$$/stat; echo \"$TMPDIR\"; stat -c %a \"$TMPDIR\"; "
                         "touch \"$TMPDIR/cc0xyz.s\"; mkdir \"$TMPDIR/sub\"; touch \"$TMPDIR/sub/x\""},
                        out, nullptr, 30);
  ASSERT_TRUE(rc.is_ok()) << rc.status().to_string();
  EXPECT_EQ(rc.value(), 0) << read_text_file(out);
  std::stringstream ss(read_text_file(out));
  std::string pid, pgid, tmpdir, mode;
  ss >> pid >> pgid >> tmpdir >> mode;
  EXPECT_EQ(pid, pgid);  // its own process group
  EXPECT_EQ(tmpdir.rfind(base.path() + "/sdx-cc.", 0), 0u) << tmpdir;
  EXPECT_EQ(mode, "700");
  EXPECT_FALSE(test::file_exists(tmpdir));
  EXPECT_TRUE(list(base.path()).empty());
}

TEST(Process, CancelledRunLeavesNoTemporaryFiles) {
  test::TempDir base, other;  // both made before TMPDIR points into base
  test::ScopedEnv env("TMPDIR", base.path().c_str());
  const std::string ready = other.path() + "/ready";
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!test::file_exists(ready) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cancel.store(true, std::memory_order_release);
  });
  auto rc = run_process({"/bin/sh", "-c", "touch \"$TMPDIR/cc1.s\" && (sleep 30 > \"$TMPDIR/cc2.o\" &) && touch " + ready +
                                              " && sleep 30"},
                        other.path() + "/o", &cancel, 60);
  canceller.join();
  EXPECT_FALSE(rc.is_ok());
  EXPECT_TRUE(list(base.path()).empty()) << testing::PrintToString(list(base.path()));
}

}  // namespace
}  // namespace sdx::jit
