#include "serve/session_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace sdx::serve {
namespace {

using namespace std::chrono_literals;

// Leases on a fake clock: time moves only when the test says so.
struct FakeClock {
  SessionManager::Clock::time_point now{};
  SessionManager::Now fn() {
    return [this] { return now; };
  }
};

struct Ended {
  std::vector<std::pair<std::string, SessionEnd>> calls;
  SessionManager::OnEnd fn() {
    return [this](const std::string& id, SessionEnd why) { calls.emplace_back(id, why); };
  }
};

TEST(SessionManager, LeaseExpiresWithoutHeartbeat) {
  FakeClock clock;
  Ended ended;
  SessionManager m({}, ended.fn(), clock.fn());
  Result<SessionManager::Lease> l = m.open(1000);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l.value().id.size(), 32u);
  EXPECT_EQ(l.value().lease_ms, 1000);
  clock.now += 999ms;
  EXPECT_EQ(m.reap_expired(), 0u);
  EXPECT_TRUE(m.touch(l.value().id).is_ok());  // renewed: now expires at 1999 ms
  clock.now += 999ms;
  EXPECT_EQ(m.reap_expired(), 0u);
  clock.now += 1ms;
  // Expired: refused at once, before the reaper has run.
  EXPECT_EQ(m.touch(l.value().id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.open_count(), 1u);
  EXPECT_EQ(m.reap_expired(), 1u);
  EXPECT_EQ(m.open_count(), 0u);
  ASSERT_EQ(ended.calls.size(), 1u);
  EXPECT_EQ(ended.calls[0].first, l.value().id);
  EXPECT_EQ(ended.calls[0].second, SessionEnd::kExpired);
  EXPECT_EQ(m.reap_expired(), 0u);  // once only
}

TEST(SessionManager, CloseEndsOnceAndLeasesAreClamped) {
  FakeClock clock;
  Ended ended;
  SessionLimits limits;
  limits.default_lease_ms = 5000;
  limits.min_lease_ms = 100;
  limits.max_lease_ms = 60000;
  SessionManager m(limits, ended.fn(), clock.fn());
  EXPECT_EQ(m.open(0).value().lease_ms, 5000);
  EXPECT_EQ(m.open(1).value().lease_ms, 100);
  EXPECT_EQ(m.open(int64_t{1} << 40).value().lease_ms, 60000);
  const std::string id = m.open(1000).value().id;
  EXPECT_TRUE(m.close(id).is_ok());
  EXPECT_EQ(m.close(id).code(), StatusCode::kNotFound);
  EXPECT_EQ(m.touch(id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.touch("no-such-session").status().code(), StatusCode::kNotFound);
  ASSERT_EQ(ended.calls.size(), 1u);
  EXPECT_EQ(ended.calls[0].second, SessionEnd::kClosed);
  EXPECT_EQ(m.open_count(), 3u);
}

TEST(SessionManager, SessionLimitIsResourceExhausted) {
  SessionLimits limits;
  limits.max_sessions = 2;
  SessionManager m(limits, [](const std::string&, SessionEnd) {});
  ASSERT_TRUE(m.open(1000).is_ok());
  ASSERT_TRUE(m.open(1000).is_ok());
  EXPECT_EQ(m.open(1000).status().code(), StatusCode::kResourceExhausted);
}

TEST(SessionManager, ReaperThreadEndsExpiredSessions) {
  std::atomic<int> expired{0};
  SessionLimits limits;
  limits.min_lease_ms = 1;
  SessionManager m(limits, [&](const std::string&, SessionEnd why) {
    if (why == SessionEnd::kExpired) expired.fetch_add(1, std::memory_order_relaxed);
  });
  m.start_reaper(5ms);
  const std::string keep = m.open(60000).value().id;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.open(20).is_ok());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (expired.load(std::memory_order_relaxed) < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(expired.load(), 3);
  EXPECT_EQ(m.open_count(), 1u);
  EXPECT_TRUE(m.touch(keep).is_ok());
}

// Closing, touching and reaping race from several threads: every session ends exactly once.
TEST(SessionManager, EachSessionEndsOnceUnderRaces) {
  std::atomic<int> ends{0};
  SessionLimits limits;
  limits.min_lease_ms = 1;
  SessionManager m(limits, [&](const std::string&, SessionEnd) { ends.fetch_add(1, std::memory_order_relaxed); });
  m.start_reaper(1ms);
  std::vector<std::string> ids;
  for (int i = 0; i < 400; ++i) ids.push_back(m.open(1 + i % 5).value().id);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < ids.size(); i += 2) {
        (void)m.touch(ids[i]);
        (void)m.close(ids[i]);
      }
    });
  for (std::thread& t : threads) t.join();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (m.open_count() > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(m.open_count(), 0u);
  EXPECT_EQ(ends.load(), 400);
}

TEST(SessionManager, ClientProposedIdsAreCheckedAndUnique) {
  FakeClock clock;
  Ended ended;
  SessionManager m({}, ended.fn(), clock.fn());
  const std::string id = "0123456789abcdefABCDEF_-";
  SessionManager::Lease l;
  ASSERT_TRUE(m.open(1000, id, &l).ok());
  EXPECT_EQ(l.id, id);
  EXPECT_TRUE(m.touch(id).is_ok());
  // A live id again: ALREADY_EXISTS, and the live session is untouched.
  grpc::Status dup = m.open(1000, id, &l);
  EXPECT_EQ(dup.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(dup.error_message().find(id), std::string::npos) << dup.error_message();
  EXPECT_EQ(m.open_count(), 1u);
  // Expired but not reaped yet: still refused (its refs are being freed).
  clock.now += 1000ms;
  EXPECT_EQ(m.open(1000, id, &l).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(m.reap_expired(), 1u);
  // Ended: the id may be opened again, and on_end ran once for the first one.
  ASSERT_TRUE(m.open(1000, id, &l).ok());
  ASSERT_TRUE(m.close(id).is_ok());
  ASSERT_EQ(ended.calls.size(), 2u);
  EXPECT_EQ(ended.calls[0].second, SessionEnd::kExpired);
  EXPECT_EQ(ended.calls[1].second, SessionEnd::kClosed);

  // Malformed: INVALID_ARGUMENT saying why, nothing opened.
  for (const std::string& bad : {std::string("short"), std::string(65, 'a'), std::string("0123456789abcdef/x"),
                                 std::string("0123456789abcdef x"), std::string("0123456789abcdef\n\0", 18)}) {
    grpc::Status st = m.open(1000, bad, &l);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_NE(st.error_message().find("16 to 64 characters of [A-Za-z0-9_-]"), std::string::npos) << st.error_message();
  }
  EXPECT_EQ(m.open_count(), 0u);
  EXPECT_TRUE(valid_session_id(std::string(16, 'z')).is_ok());
  EXPECT_TRUE(valid_session_id(std::string(64, '9')).is_ok());
  EXPECT_FALSE(valid_session_id(std::string(15, 'z')).is_ok());
  // The message shows at most 24 characters of a hostile id.
  EXPECT_LT(valid_session_id(std::string(5000, '!')).message().size(), 200u);
  // Server-made ids pass the same check.
  Result<SessionManager::Lease> made = m.open(1000);
  ASSERT_TRUE(made.is_ok());
  EXPECT_TRUE(valid_session_id(made.value().id).is_ok());
}

}  // namespace
}  // namespace sdx::serve
