// Log records and their sink (obs/log.h): the session levels each severity passes, a sink receiving
// records, and a sink replaced while other threads log (under ThreadSanitizer: Concurrent in the name).
#include "obs/log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace sdx::obs {
namespace {

TEST(Log, SessionLevelsPassTheSeveritiesTheyName) {
  EXPECT_TRUE(session_logs(0, LogSeverity::kError));
  EXPECT_FALSE(session_logs(0, LogSeverity::kWarning));
  EXPECT_TRUE(session_logs(1, LogSeverity::kWarning));
  EXPECT_FALSE(session_logs(1, LogSeverity::kInfo));
  EXPECT_TRUE(session_logs(3, LogSeverity::kVerbose));
}

TEST(Log, TheSinkReceivesRecordsAndBuildsMessagesOnlyWhenLogged) {
  std::vector<std::string> got;
  set_log_sink([&](const LogRecord& r) { got.push_back(std::string(r.category) + ": " + std::string(r.message)); });
  int built = 0;
  log_for(1, LogSeverity::kVerbose, "session", [&] { ++built; return std::string("hidden"); });
  log_for(3, LogSeverity::kVerbose, "session", [&] { ++built; return std::string("shown"); });
  set_log_sink({});
  EXPECT_EQ(built, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "session: shown");
}

TEST(Log, ConcurrentLoggingWhileTheSinkIsReplaced) {
  std::atomic<int> received{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> loggers;
  set_log_sink([&](const LogRecord&) { received.fetch_add(1, std::memory_order_relaxed); });
  for (int t = 0; t < 3; ++t)
    loggers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) log(LogSeverity::kInfo, "test", "record");
    });
  // At least 200 replacements, and on until the loggers' records have reached a sink (the threads may not
  // have started before 200 quick replacements are over); at most 10 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; (i < 200 || received.load(std::memory_order_relaxed) == 0) &&
                  std::chrono::steady_clock::now() < give_up;
       ++i)
    set_log_sink([&](const LogRecord&) { received.fetch_add(1, std::memory_order_relaxed); });
  done.store(true, std::memory_order_release);
  for (auto& t : loggers) t.join();
  set_log_sink({});
  EXPECT_GT(received.load(), 0);
}

}  // namespace
}  // namespace sdx::obs
