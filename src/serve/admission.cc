#include "serve/admission.h"

#include <grpcpp/server_context.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "serve/serve_metrics.h"

namespace sdx::serve {

AdmissionGate::AdmissionGate(int max_queue, int concurrency)
    : max_queue_(std::max(1, max_queue)), concurrency_(std::max(1, concurrency)), slots_(std::max(1, concurrency)) {}

AdmissionGate::Ticket AdmissionGate::enter() {
  if (admitted_.fetch_add(1, std::memory_order_relaxed) >= max_queue_) {
    admitted_.fetch_sub(1, std::memory_order_relaxed);
    return Ticket(nullptr);
  }
  return Ticket(this);
}

AdmissionGate::Ticket::Ticket(Ticket&& other) noexcept : gate_(other.gate_), has_slot_(other.has_slot_) {
  other.gate_ = nullptr;
  other.has_slot_ = false;
}

AdmissionGate::Ticket::~Ticket() {
  if (!gate_) return;
  if (has_slot_) gate_->slots_.release();
  gate_->admitted_.fetch_sub(1, std::memory_order_relaxed);
}

bool AdmissionGate::Ticket::wait_for_slot(Deadline deadline) {
  if (!gate_ || has_slot_) return has_slot_;
  if (deadline == Deadline::max()) {
    gate_->slots_.acquire();
    has_slot_ = true;
  } else {
    has_slot_ = gate_->slots_.try_acquire_until(deadline);
  }
  return has_slot_;
}

AdmissionGate* AdmissionGates::get(const std::string& key, int concurrency) {
  const int want = concurrency > 0 ? concurrency : concurrency_;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = gates_.find(key);
    if (it != gates_.end() && it->second->concurrency() == want) return it->second.get();
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  auto& g = gates_[key];
  if (g && g->concurrency() != want) retired_.push_back(std::move(g));  // tickets may still point into it
  if (!g) g = std::make_unique<AdmissionGate>(max_queue_, want);
  return g.get();
}

GaugeHold::GaugeHold(Metric* gauge) : gauge_(gauge) { gauge_->add(1); }
GaugeHold::~GaugeHold() { gauge_->add(-1); }

int64_t retry_hint_ms(const AdmissionGate& gate, const ModelMetrics& metrics) {
  const uint64_t n = metrics.duration->count();
  const double mean_ms = n ? metrics.duration->sum() * 1e3 / static_cast<double>(n) : 1.0;
  const double rounds = static_cast<double>(gate.admitted()) / gate.concurrency() + 1.0;
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(mean_ms * rounds)), 1, 10000);
}

grpc::Status refuse_queue_full(grpc::ServerContext* context, const AdmissionGate& gate, ModelMetrics* metrics,
                               const std::string& what) {
  metrics->rejected_queue_full->add(1);
  const int64_t ms = retry_hint_ms(gate, *metrics);
  context->AddTrailingMetadata("grpc-retry-pushback-ms", std::to_string(ms));
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      what + ": queue full (" + std::to_string(gate.max_queue()) +
                          " requests in flight or waiting, --max-queue); retry in about " + std::to_string(ms) + " ms");
}

grpc::Status wait_to_run(grpc::ServerContext* context, AdmissionGate::Ticket* ticket, ModelMetrics* metrics,
                         const std::string& what, double* waited) {
  const auto queued = std::chrono::steady_clock::now();
  bool slot = false;
  {
    GaugeHold waiting(metrics->queue_depth);
    slot = ticket->wait_for_slot(context->deadline());
  }
  *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - queued).count();
  if (!slot || std::chrono::system_clock::now() > context->deadline()) {
    metrics->rejected_deadline->add(1);
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        what + ": the request's deadline passed before it could run; it was not run");
  }
  return grpc::Status::OK;
}

}  // namespace sdx::serve
