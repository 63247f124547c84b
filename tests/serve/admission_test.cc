#include "serve/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace sdx::serve {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

TEST(AdmissionGate, RefusesBeyondTheQueueAndGivesPlacesBack) {
  AdmissionGate gate(/*max_queue=*/2, /*concurrency=*/1);
  {
    AdmissionGate::Ticket a = gate.enter();
    AdmissionGate::Ticket b = gate.enter();
    AdmissionGate::Ticket c = gate.enter();
    EXPECT_TRUE(a.admitted());
    EXPECT_TRUE(b.admitted());
    EXPECT_FALSE(c.admitted());  // full: refused at once
    EXPECT_EQ(gate.admitted(), 2);
  }
  EXPECT_EQ(gate.admitted(), 0);
  EXPECT_TRUE(gate.enter().admitted());
}

TEST(AdmissionGate, WaitingPastTheDeadlineFails) {
  AdmissionGate gate(4, 1);
  AdmissionGate::Ticket running = gate.enter();
  ASSERT_TRUE(running.wait_for_slot(system_clock::time_point::max()));
  AdmissionGate::Ticket waiting = gate.enter();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiting.wait_for_slot(system_clock::now() + milliseconds(20)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(15));
  EXPECT_FALSE(gate.enter().wait_for_slot(system_clock::now() - milliseconds(1)));  // already past
}

TEST(AdmissionGate, AReleasedSlotGoesToAWaiter) {
  AdmissionGate gate(4, 1);
  std::optional<AdmissionGate::Ticket> running(gate.enter());
  ASSERT_TRUE(running->wait_for_slot(system_clock::time_point::max()));
  std::thread release([&] {
    std::this_thread::sleep_for(milliseconds(20));
    running.reset();  // gives its slot back
  });
  AdmissionGate::Ticket waiting = gate.enter();
  EXPECT_TRUE(waiting.wait_for_slot(system_clock::now() + std::chrono::seconds(30)));
  release.join();
}

TEST(AdmissionGate, AtMostConcurrencyRunAtOnce) {
  AdmissionGate gate(64, 3);
  std::atomic<int> running{0}, most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      AdmissionGate::Ticket t = gate.enter();
      ASSERT_TRUE(t.admitted());
      ASSERT_TRUE(t.wait_for_slot(system_clock::time_point::max()));
      const int now = running.fetch_add(1) + 1;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      std::this_thread::sleep_for(milliseconds(2));
      running.fetch_sub(1);
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(gate.admitted(), 0);
}

TEST(AdmissionGates, OneGatePerKeyKeptForTheServicesLife) {
  AdmissionGates gates(/*max_queue=*/1, /*concurrency=*/1);
  AdmissionGate* a = gates.get("sha256:aa");
  EXPECT_EQ(gates.get("sha256:aa"), a);
  AdmissionGate* b = gates.get("add");
  EXPECT_NE(a, b);
  EXPECT_EQ(a->max_queue(), 1);
  AdmissionGate::Ticket held = a->enter();
  EXPECT_TRUE(held.admitted());
  EXPECT_FALSE(gates.get("sha256:aa")->enter().admitted());  // full, the same gate
  EXPECT_TRUE(b->enter().admitted());                         // another key: its own queue
}

// A model's instance count gives its gate that many run slots; a reload with another count gets a new gate
// while the old one, which tickets may still point into, is kept.
TEST(AdmissionGates, InstanceCountsSetTheRunSlots) {
  AdmissionGates gates(/*max_queue=*/8, /*concurrency=*/2);
  EXPECT_EQ(gates.get("plain")->concurrency(), 2);
  AdmissionGate* three = gates.get("mlp", 3);
  EXPECT_EQ(three->concurrency(), 3);
  EXPECT_EQ(gates.get("mlp", 3), three);
  AdmissionGate::Ticket held = three->enter();  // a request on the old gate when the count changes
  AdmissionGate* one = gates.get("mlp", 1);
  EXPECT_NE(one, three);
  EXPECT_EQ(one->concurrency(), 1);
  EXPECT_EQ(three->admitted(), 1);  // still alive: the ticket gives its place back there
  EXPECT_EQ(gates.get("mlp", 0)->concurrency(), 2);  // 0: the server's default
}

}  // namespace
}  // namespace sdx::serve
