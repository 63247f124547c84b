// The event stream: typed events every backend reports as it works, delivered to subscribers.
//
//   KernelEvent   one op executed: op type, node, input/output shapes, backend, device, time, and for
//                 ops with an arithmetic cost (MatMul, Gemm, Conv, Attention, ...) GFLOP/s; bytes read
//                 and written and GB/s for every op
//   MemoryEvent   a copy: direction, bytes, time, GB/s (the inputs copied into a plan's static buffers)
//   CompileEvent  a JIT kernel became available: kernel, backend, compile time, disk-cache hit
//
//   int id = obs::EventBus::global().subscribe({.kernel = [](const obs::KernelEvent& e) { ... }},
//                                              /*min_duration_us=*/5.0);
//   ...
//   obs::EventBus::global().unsubscribe(id);
//   // or, as JSON lines:  obs::EventBus::global().record_to_file("/tmp/events.jsonl", 0.0);
//
// Callbacks run on the thread that did the work (a pool worker, the JIT's compile thread), possibly on
// several threads at once; they must be thread-safe and quick. A subscription's threshold drops events
// shorter than it (kernel and memory events; compile events always pass). While nobody subscribes, the
// executors pay one relaxed atomic load per op (obs/observers.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace sdx::obs {

// A small number for the calling thread (0, 1, 2, ... in order of first use), for event and trace lanes.
int thread_ordinal();

struct KernelEvent {
  const char* op = "";       // op type ("MatMul", "sdx.Linear", "sdx.JitSegment")
  const char* node = "";     // node name
  const char* shapes = "";   // "float[1,128,256], float[256,768] -> float[1,128,768]"
  const char* backend = "cpu";
  int device = 0;
  int thread = 0;            // thread_ordinal() of the thread that ran it
  uint64_t start_ns = 0;     // steady_clock
  double time_us = 0;
  double flops = 0;          // 0 when the op declares no cost
  double gflops = 0;         // flops / time (0 when flops is 0)
  uint64_t bytes = 0;        // inputs read + outputs written
  double gbps = 0;           // bytes / time
};

enum class CopyDirection : uint8_t { kHostToHost, kHostToDevice, kDeviceToHost, kDeviceToDevice };
const char* copy_direction_name(CopyDirection d);  // "host_to_host", ...

struct MemoryEvent {
  CopyDirection direction = CopyDirection::kHostToHost;
  const char* what = "";  // "inputs", ...
  uint64_t bytes = 0;
  uint64_t start_ns = 0;
  double time_us = 0;
  double gbps = 0;
};

struct CompileEvent {
  const char* kernel = "";  // the kernel's name (its source hash)
  const char* backend = "cpu_jit";
  uint64_t start_ns = 0;
  double compile_us = 0;    // 0 for a disk-cache hit
  bool cache_hit = false;
  bool ok = true;           // false: the compile failed (the unfused kernels keep running)
};

// One line of JSON per event ({"type": "kernel", ...}), as record_to_file writes.
std::string to_json(const KernelEvent& e);
std::string to_json(const MemoryEvent& e);
std::string to_json(const CompileEvent& e);

struct EventCallbacks {
  std::function<void(const KernelEvent&)> kernel;
  std::function<void(const MemoryEvent&)> memory;
  std::function<void(const CompileEvent&)> compile;
};

class EventBus {
 public:
  EventBus() = default;
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  // The bus the executors and the JIT emit to.
  static EventBus& global();

  // Returns a subscription id (> 0). Events shorter than min_duration_us are not delivered to it.
  int subscribe(EventCallbacks callbacks, double min_duration_us = 0);
  // Stops deliveries to `id` (a delivery already under way on another thread may still finish).
  // Safe from inside a callback. False when `id` is unknown.
  bool unsubscribe(int id);
  // A subscription appending every event as a JSON line to `path` (created or truncated), flushed as it
  // goes; unsubscribe(id) closes it.
  Result<int> record_to_file(const std::string& path, double min_duration_us = 0);
  bool has_subscribers() const;

  void emit(const KernelEvent& e) const;
  void emit(const MemoryEvent& e) const;
  void emit(const CompileEvent& e) const;

 private:
  struct Subscription {
    int id;
    double min_us;
    EventCallbacks callbacks;
  };
  using List = std::vector<std::shared_ptr<const Subscription>>;
  std::shared_ptr<const List> snapshot() const;
  void publish(std::shared_ptr<const List> list);  // under mutex_

  mutable std::mutex mutex_;
  std::shared_ptr<const List> subs_ = std::make_shared<const List>();  // replaced, never mutated
  int next_id_ = 1;
};

}  // namespace sdx::obs
