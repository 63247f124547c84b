// Admission control for one model: a bounded queue (requests in flight plus those waiting) and a bound on
// the requests running at once, with gRPC deadlines honoured while waiting.
//
//   serve::AdmissionGate gate(/*max_queue=*/64, /*concurrency=*/8);
//   serve::AdmissionGate::Ticket t = gate.enter();          // !t.admitted(): full -> RESOURCE_EXHAUSTED
//   if (t.admitted() && t.wait_for_slot(ctx->deadline())) {  // false: the deadline passed while waiting
//     ...run...
//   }                                                        // the ticket gives back what it took
//
// A request is refused at once when max_queue requests are already admitted, so a full queue never hangs
// a caller. An admitted request waits for one of `concurrency` run slots until its deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <semaphore>

namespace sdx::serve {

class AdmissionGate {
 public:
  using Deadline = std::chrono::system_clock::time_point;

  AdmissionGate(int max_queue, int concurrency);

  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();
    bool admitted() const { return gate_ != nullptr; }
    // Waits for a run slot; false when `deadline` (system_clock::time_point::max(): none) passes first.
    bool wait_for_slot(Deadline deadline);

   private:
    friend class AdmissionGate;
    explicit Ticket(AdmissionGate* gate) : gate_(gate) {}
    AdmissionGate* gate_;  // null: not admitted
    bool has_slot_ = false;
  };

  Ticket enter();

  // Requests admitted now (running or waiting), and the bounds.
  int64_t admitted() const { return admitted_.load(std::memory_order_relaxed); }
  int max_queue() const { return max_queue_; }
  int concurrency() const { return concurrency_; }

 private:
  const int max_queue_, concurrency_;
  // Relaxed is enough: the count guards a bound, it publishes no data (the semaphore orders the run slots).
  std::atomic<int64_t> admitted_{0};
  std::counting_semaphore<> slots_;
};

}  // namespace sdx::serve
