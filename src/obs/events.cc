#include "obs/events.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "obs/json_escape.h"
#include "obs/observers.h"

namespace sdx::obs {
namespace {

std::atomic<EventBus*> g_global_bus{nullptr};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string str(const char* s) { return "\"" + json_escape(s ? s : "") + "\""; }

// A FILE* closed when the last subscription holding it goes away; writes are serialized.
struct JsonLinesFile {
  std::FILE* f = nullptr;
  std::mutex mu;
  ~JsonLinesFile() {
    if (f) std::fclose(f);
  }
  void write(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    std::fputs(line.c_str(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }
};

}  // namespace

int thread_ordinal() {
  static std::atomic<int> next{0};
  thread_local const int mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

const char* copy_direction_name(CopyDirection d) {
  switch (d) {
    case CopyDirection::kHostToHost: return "host_to_host";
    case CopyDirection::kHostToDevice: return "host_to_device";
    case CopyDirection::kDeviceToHost: return "device_to_host";
    case CopyDirection::kDeviceToDevice: return "device_to_device";
  }
  return "?";
}

std::string to_json(const KernelEvent& e) {
  return "{\"type\":\"kernel\",\"op\":" + str(e.op) + ",\"node\":" + str(e.node) + ",\"shapes\":" + str(e.shapes) +
         ",\"backend\":" + str(e.backend) + ",\"device\":" + std::to_string(e.device) +
         ",\"thread\":" + std::to_string(e.thread) + ",\"start_ns\":" + std::to_string(e.start_ns) +
         ",\"time_us\":" + num(e.time_us) + ",\"flops\":" + num(e.flops) + ",\"gflops\":" + num(e.gflops) +
         ",\"bytes\":" + std::to_string(e.bytes) + ",\"gbps\":" + num(e.gbps) + "}";
}

std::string to_json(const MemoryEvent& e) {
  return "{\"type\":\"memory\",\"direction\":" + str(copy_direction_name(e.direction)) + ",\"what\":" + str(e.what) +
         ",\"bytes\":" + std::to_string(e.bytes) + ",\"start_ns\":" + std::to_string(e.start_ns) +
         ",\"time_us\":" + num(e.time_us) + ",\"gbps\":" + num(e.gbps) + "}";
}

std::string to_json(const CompileEvent& e) {
  return "{\"type\":\"compile\",\"kernel\":" + str(e.kernel) + ",\"backend\":" + str(e.backend) +
         ",\"start_ns\":" + std::to_string(e.start_ns) + ",\"compile_us\":" + num(e.compile_us) +
         ",\"cache_hit\":" + (e.cache_hit ? "true" : "false") + ",\"ok\":" + (e.ok ? "true" : "false") + "}";
}

EventBus& EventBus::global() {
  static EventBus* bus = [] {
    auto* b = new EventBus;  // never destroyed: emitters may run until the process ends
    g_global_bus.store(b, std::memory_order_release);
    return b;
  }();
  return *bus;
}

std::shared_ptr<const EventBus::List> EventBus::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return subs_;
}

void EventBus::publish(std::shared_ptr<const List> list) {
  subs_ = std::move(list);
  if (this != g_global_bus.load(std::memory_order_acquire)) return;
  if (subs_->empty())
    g_observers.fetch_and(~uint32_t{kObserveEvents}, std::memory_order_relaxed);
  else
    g_observers.fetch_or(kObserveEvents, std::memory_order_relaxed);
}

int EventBus::subscribe(EventCallbacks callbacks, double min_duration_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto list = std::make_shared<List>(*subs_);
  const int id = next_id_++;
  list->push_back(std::make_shared<const Subscription>(Subscription{id, min_duration_us, std::move(callbacks)}));
  publish(std::move(list));
  return id;
}

bool EventBus::unsubscribe(int id) {
  std::shared_ptr<const List> old;  // released after the lock: may close a recording's file
  std::lock_guard<std::mutex> lock(mutex_);
  auto list = std::make_shared<List>();
  bool found = false;
  for (const auto& s : *subs_) {
    if (s->id == id)
      found = true;
    else
      list->push_back(s);
  }
  if (!found) return false;
  old = subs_;
  publish(std::move(list));
  return true;
}

Result<int> EventBus::record_to_file(const std::string& path, double min_duration_us) {
  auto file = std::make_shared<JsonLinesFile>();
  file->f = std::fopen(path.c_str(), "w");
  if (!file->f) return io_error("cannot write the event recording '" + path + "': " + std::strerror(errno));
  EventCallbacks cb;
  cb.kernel = [file](const KernelEvent& e) { file->write(to_json(e)); };
  cb.memory = [file](const MemoryEvent& e) { file->write(to_json(e)); };
  cb.compile = [file](const CompileEvent& e) { file->write(to_json(e)); };
  return subscribe(std::move(cb), min_duration_us);
}

bool EventBus::has_subscribers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !subs_->empty();
}

void EventBus::emit(const KernelEvent& e) const {
  const auto list = snapshot();  // held for the loop: a range-for would drop the temporary at once
  for (const auto& s : *list)
    if (s->callbacks.kernel && e.time_us >= s->min_us) s->callbacks.kernel(e);
}

void EventBus::emit(const MemoryEvent& e) const {
  const auto list = snapshot();  // held for the loop: a range-for would drop the temporary at once
  for (const auto& s : *list)
    if (s->callbacks.memory && e.time_us >= s->min_us) s->callbacks.memory(e);
}

void EventBus::emit(const CompileEvent& e) const {
  const auto list = snapshot();  // held for the loop: a range-for would drop the temporary at once
  for (const auto& s : *list)
    if (s->callbacks.compile) s->callbacks.compile(e);
}

}  // namespace sdx::obs
