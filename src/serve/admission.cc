#include "serve/admission.h"

#include <algorithm>

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

}  // namespace sdx::serve
