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
//
// Both services (KServe ModelInfer, inference_service.h, and sdx.v1 Run, remote_service.h) answer through
// the same helpers below, so a refusal reads, hints and counts the same on either:
//
//   serve::AdmissionGates gates(/*max_queue=*/64, /*concurrency=*/8);    // one gate per key, made on first use
//   AdmissionGate* g = gates.get("sha256:...");                           // or a repository model's name
//   AdmissionGate::Ticket t = g->enter();
//   if (!t.admitted()) return serve::refuse_queue_full(ctx, *g, metrics, "model 'add'");
//   double waited = 0;
//   if (grpc::Status st = serve::wait_to_run(ctx, &t, metrics, "model 'add'", &waited); !st.ok()) return st;
//   { serve::GaugeHold running(metrics->inflight); ...run... }
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <semaphore>
#include <shared_mutex>
#include <string>
#include <vector>

namespace grpc {
class ServerContext;
}

namespace sdx::serve {

class Metric;
class ModelMetrics;

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

// The gates of one service, by key (a repository model's name, or an uploaded model's fingerprint), each
// made on first use and kept for the service's life (a gate is small; tickets point into it). Thread-safe.
class AdmissionGates {
 public:
  AdmissionGates(int max_queue, int concurrency) : max_queue_(max_queue), concurrency_(concurrency) {}
  // The key's gate with `concurrency` run slots (0: the default given above; a model's config.json
  // instance_group count otherwise). A key whose model came back with another count (a reload) gets a new
  // gate; the old one is kept, for the tickets that still point into it.
  AdmissionGate* get(const std::string& key, int concurrency = 0);

 private:
  const int max_queue_, concurrency_;
  std::shared_mutex mutex_;  // guards gates_ and retired_ (lookups shared, creation exclusive)
  std::map<std::string, std::unique_ptr<AdmissionGate>> gates_;
  std::vector<std::unique_ptr<AdmissionGate>> retired_;
};

// A gauge raised for a scope (exceptions included).
class GaugeHold {
 public:
  explicit GaugeHold(Metric* gauge);
  ~GaugeHold();
  GaugeHold(const GaugeHold&) = delete;
  GaugeHold& operator=(const GaugeHold&) = delete;

 private:
  Metric* gauge_;
};

// How long a refused caller should wait: the model's mean request time (metrics->duration), once per full
// round of run slots ahead of it; 1 ms to 10 s.
int64_t retry_hint_ms(const AdmissionGate& gate, const ModelMetrics& metrics);

// The answer to a request the gate did not admit: RESOURCE_EXHAUSTED naming `what` (e.g. "model 'add'
// version 1") and the limit, the hint in the message and in the trailing metadata grpc-retry-pushback-ms
// (which grpcio's and sdx.remote's retries honour); counted in metrics->rejected_queue_full.
grpc::Status refuse_queue_full(grpc::ServerContext* context, const AdmissionGate& gate, ModelMetrics* metrics,
                               const std::string& what);

// Waits (metrics->queue_depth raised meanwhile) for the ticket's run slot until the call's deadline. OK: run
// now. DEADLINE_EXCEEDED (counted in metrics->rejected_deadline): the deadline passed first, or by the time
// the slot came; the request must not run. `waited`: seconds spent waiting.
grpc::Status wait_to_run(grpc::ServerContext* context, AdmissionGate::Ticket* ticket, ModelMetrics* metrics,
                         const std::string& what, double* waited);

}  // namespace sdx::serve
