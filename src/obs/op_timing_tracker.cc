#include "obs/op_timing_tracker.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include "obs/observers.h"

namespace sdx::obs {

struct TimingRing {
  struct Entry {
    // 0 while the writer fills the entry, then (its position in the ring's history) + 1.
    std::atomic<uint64_t> seq{0};
    std::atomic<const char*> op{nullptr}, node{nullptr};
    std::atomic<uint64_t> start{0};
    std::atomic<uint32_t> phase[kNumTimingPhases] = {};
  };
  static_assert((OpTimingTracker::kRingEntries & (OpTimingTracker::kRingEntries - 1)) == 0);

  std::unique_ptr<Entry[]> entries{new Entry[OpTimingTracker::kRingEntries]};
  // Entries ever written; stored (release) by the owning thread after each entry, read (acquire) by flush.
  std::atomic<uint64_t> head{0};
  uint64_t read = 0;  // flush's position, under the tracker's mutex
  int index = 0;
  // The owning thread still runs (cleared with release at thread exit, so a reuser sees its last head).
  std::atomic<bool> alive{true};
  // The tracker is gone: threads drop their reference on their next lookup.
  std::atomic<bool> orphaned{false};
};

namespace {

std::atomic<uint64_t> g_next_tracker_id{1};
std::atomic<OpTimingTracker*> g_global{nullptr};

// The rings of the calling thread, one per tracker it recorded into.
struct ThreadRings {
  std::vector<std::pair<uint64_t, std::shared_ptr<TimingRing>>> rings;
  ~ThreadRings() {
    for (auto& [id, r] : rings) r->alive.store(false, std::memory_order_release);
  }
};
thread_local ThreadRings t_rings;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

const char* timing_mode_name(TimingMode m) {
  switch (m) {
    case TimingMode::kDisabled: return "disabled";
    case TimingMode::kSimple: return "simple";
    case TimingMode::kDetailed: return "detailed";
    case TimingMode::kTrace: return "trace";
  }
  return "?";
}

bool parse_timing_mode(std::string_view text, TimingMode* out) {
  struct Name {
    const char* a;
    const char* b;
    TimingMode m;
  };
  static const Name kNames[] = {{"disabled", "0", TimingMode::kDisabled}, {"off", "false", TimingMode::kDisabled},
                                {"simple", "1", TimingMode::kSimple},     {"detailed", "2", TimingMode::kDetailed},
                                {"trace", "3", TimingMode::kTrace}};
  for (const Name& n : kNames)
    if (iequals(text, n.a) || iequals(text, n.b)) {
      *out = n.m;
      return true;
    }
  return false;
}

const char* timing_phase_name(TimingPhase p) {
  static const char* kNames[kNumTimingPhases] = {"VALIDATION",    "SHAPE_CALC",  "MEMORY_ALLOC",
                                                 "KERNEL_SELECT", "KERNEL_EXEC", "TOTAL"};
  return kNames[static_cast<int>(p)];
}

const char* intern_name(std::string_view name) {
  static std::mutex* mu = new std::mutex;                          // never destroyed: names outlive
  static auto* names = new std::unordered_set<std::string>;        // every static destructor
  std::lock_guard<std::mutex> lock(*mu);
  return names->emplace(name).first->c_str();
}

OpTimingTracker::OpTimingTracker() : id_(g_next_tracker_id.fetch_add(1, std::memory_order_relaxed)) {}

OpTimingTracker::~OpTimingTracker() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : rings_) r->orphaned.store(true, std::memory_order_release);
}

OpTimingTracker& OpTimingTracker::global() {
  static OpTimingTracker* g = [] {
    auto* t = new OpTimingTracker;  // never destroyed: threads may record until the process ends
    g_global.store(t, std::memory_order_release);  // publishes the constructed tracker to set_mode
    TimingMode m;
    if (const char* v = std::getenv("SDX_OP_TIMING"); v && parse_timing_mode(v, &m)) t->set_mode(m);
    return t;
  }();
  return *g;
}

void OpTimingTracker::set_mode(TimingMode m) {
  mode_.store(m, std::memory_order_relaxed);
  if (this != g_global.load(std::memory_order_acquire)) return;
  uint32_t bits = 0;
  if (m != TimingMode::kDisabled) bits |= kObserveTiming;
  if (m == TimingMode::kDetailed || m == TimingMode::kTrace) bits |= kObservePhases;
  if (m == TimingMode::kTrace) bits |= kObserveTrace;
  const uint32_t mask = kObserveTiming | kObservePhases | kObserveTrace;
  uint32_t cur = g_observers.load(std::memory_order_relaxed);
  while (!g_observers.compare_exchange_weak(cur, (cur & ~mask) | bits, std::memory_order_relaxed)) {
  }
}

TimingRing* OpTimingTracker::ring_for_this_thread() {
  auto& mine = t_rings.rings;
  for (size_t i = 0; i < mine.size();) {
    if (mine[i].first == id_) return mine[i].second.get();
    if (mine[i].second->orphaned.load(std::memory_order_acquire)) {
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
  std::shared_ptr<TimingRing> ring;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Reuse the ring of a thread that ended (its last head is visible through the acquire).
    for (auto& r : rings_)
      if (!r->alive.load(std::memory_order_acquire)) {
        r->alive.store(true, std::memory_order_relaxed);
        ring = r;
        break;
      }
    if (!ring) {
      ring = std::make_shared<TimingRing>();
      ring->index = static_cast<int>(rings_.size());
      rings_.push_back(ring);
      per_thread_.push_back({ring->index, 0, 0, 0});
    }
  }
  mine.emplace_back(id_, ring);
  return ring.get();
}

void OpTimingTracker::record(const OpTiming& t) {
  TimingRing* r = ring_for_this_thread();
  const uint64_t h = r->head.load(std::memory_order_relaxed);  // only this thread stores head
  TimingRing::Entry& e = r->entries[h & (kRingEntries - 1)];
  e.seq.store(0, std::memory_order_relaxed);
  // Seqlock writer: the "being written" mark is ordered before the field stores below.
  std::atomic_thread_fence(std::memory_order_release);
  e.op.store(t.op, std::memory_order_relaxed);
  e.node.store(t.node, std::memory_order_relaxed);
  e.start.store(t.start_ns, std::memory_order_relaxed);
  for (int p = 0; p < kNumTimingPhases; ++p) e.phase[p].store(t.phase_ns[p], std::memory_order_relaxed);
  // Publishes the fields above to a flush that acquires seq (or head).
  e.seq.store(h + 1, std::memory_order_release);
  r->head.store(h + 1, std::memory_order_release);
}

void OpTimingTracker::drain(TimingRing& r) {
  const uint64_t h = r.head.load(std::memory_order_acquire);  // entries below h are published
  uint64_t from = r.read;
  uint64_t lost = 0;
  if (h - from > kRingEntries) {
    lost += h - kRingEntries - from;
    from = h - kRingEntries;
  }
  const bool keep_trace = mode() == TimingMode::kTrace;
  ThreadStats& ts = per_thread_[static_cast<size_t>(r.index)];
  for (uint64_t i = from; i < h; ++i) {
    TimingRing::Entry& e = r.entries[i & (kRingEntries - 1)];
    const uint64_t s1 = e.seq.load(std::memory_order_acquire);
    if (s1 != i + 1) {  // already overwritten by a later lap, or being overwritten
      ++lost;
      continue;
    }
    TraceEvent ev;
    ev.op = e.op.load(std::memory_order_relaxed);
    ev.node = e.node.load(std::memory_order_relaxed);
    ev.start_ns = e.start.load(std::memory_order_relaxed);
    for (int p = 0; p < kNumTimingPhases; ++p) ev.phase_ns[p] = e.phase[p].load(std::memory_order_relaxed);
    // Seqlock reader: the field loads above are ordered before the re-check of seq.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.seq.load(std::memory_order_relaxed) != s1) {
      ++lost;
      continue;
    }
    ev.thread = r.index;
    const double total = ev.phase_ns[static_cast<int>(TimingPhase::kTotal)];
    Aggregate& a = per_op_[ev.op];
    if (a.calls == 0 || total < a.min) a.min = total;
    if (a.calls == 0 || total > a.max) a.max = total;
    ++a.calls;
    a.total += total;
    a.sum_sq += total * total;
    for (int p = 0; p < kNumTimingPhases; ++p) a.phase[p] += ev.phase_ns[p];
    a.histogram.add(static_cast<uint64_t>(total));
    ++ts.calls;
    ts.total_ns += total;
    ++recorded_;
    if (keep_trace) {
      if (trace_.size() < kMaxTraceEvents)
        trace_.push_back(ev);
      else
        ++trace_dropped_;
    }
  }
  ts.overwritten += lost;
  overwritten_ += lost;
  r.read = h;
}

void OpTimingTracker::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : rings_) drain(*r);
}

void OpTimingTracker::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : rings_) r->read = r->head.load(std::memory_order_acquire);
  per_op_.clear();
  for (ThreadStats& t : per_thread_) t = {t.thread, 0, 0, 0};
  trace_.clear();
  recorded_ = overwritten_ = trace_dropped_ = 0;
}

std::vector<OpStats> OpTimingTracker::op_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OpStats> out;
  for (const auto& [op, a] : per_op_) {
    OpStats s;
    s.op = op ? op : "?";
    s.calls = a.calls;
    s.total_ns = a.total;
    s.min_ns = a.min;
    s.max_ns = a.max;
    const auto n = static_cast<double>(a.calls);
    s.mean_ns = a.total / n;
    s.stddev_ns = std::sqrt(std::max(0.0, a.sum_sq / n - s.mean_ns * s.mean_ns));
    std::copy(a.phase, a.phase + kNumTimingPhases, s.phase_total_ns);
    s.histogram = a.histogram;
    s.p50_ns = a.histogram.percentile(0.50, a.min, a.max);
    s.p90_ns = a.histogram.percentile(0.90, a.min, a.max);
    s.p99_ns = a.histogram.percentile(0.99, a.min, a.max);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const OpStats& a, const OpStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.op < b.op;
  });
  return out;
}

std::vector<ThreadStats> OpTimingTracker::thread_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return per_thread_;
}

std::vector<TraceEvent> OpTimingTracker::trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_;
}

uint64_t OpTimingTracker::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorded_;
}

uint64_t OpTimingTracker::overwritten() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overwritten_;
}

uint64_t OpTimingTracker::trace_dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_dropped_;
}

}  // namespace sdx::obs
