#include "backend/cpu/jit/jit_engine.h"

#include <chrono>
#include <cstdio>
#include <set>

#include "backend/cpu/jit/compiler.h"
#include "backend/cpu/jit/cpp_emitter.h"
#include "obs/diagnostics.h"
#include "obs/events.h"
#include "obs/observers.h"
#include "obs/op_timing_tracker.h"

namespace sdx::jit {
namespace {

// A CompileEvent for subscribers of the event stream (obs/events.h); `key` names the kernel.
void emit_compile(const std::string& key, bool cache_hit, double seconds, bool ok, uint64_t start_ns,
                  const std::string& why = "") {
  obs::Diagnostics& d = obs::Diagnostics::global();
  d.record_lazy(obs::DiagCategory::kJit, obs::DiagLevel::kSummary,
                !ok ? "JIT_FAILED" : cache_hit ? "DISK_CACHE_HIT" : "COMPILED", [&] {
                  return "kernel " + key +
                         (ok ? (cache_hit ? " loaded from the disk cache" : " compiled in " + std::to_string(seconds) + " s")
                             : ": " + why);
                });
  if (!ok)
    d.record_lazy(obs::DiagCategory::kFallback, obs::DiagLevel::kSummary, "JIT_FAILED", [&] {
      return "the JIT could not build kernel " + key + ", so its segment's unfused kernels keep running: " + why;
    });
  if (!(obs::observers() & obs::kObserveEvents)) return;
  obs::CompileEvent e;
  e.kernel = obs::intern_name(key.empty() ? "(unnamed)" : key);
  e.start_ns = start_ns;
  e.compile_us = seconds * 1e6;
  e.cache_hit = cache_hit;
  e.ok = ok;
  obs::EventBus::global().emit(e);
}

// A refused cache folder: to stderr once per process and folder (a user who never looks at the
// diagnostics still learns why nothing is fused), to the diagnostics once per engine.
void report_refused_cache(const DiskCache& cache, const Status& why) {
  // Never freed: an engine may be created or destroyed during exit.
  static auto* mutex = new std::mutex;
  static auto* warned = new std::set<std::string>;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(*mutex);
    first = warned->insert(cache.dir()).second;
  }
  if (first)
    std::fprintf(stderr, "sdx: warning: %s; the kernel JIT is off (the unfused kernels run). Use a cache folder only "
                 "you can write (SDX_JIT_CACHE_DIR).\n", why.message().c_str());
  obs::Diagnostics::global().record_lazy(obs::DiagCategory::kJit, obs::DiagLevel::kSummary, "DISK_CACHE_REFUSED",
                                         [&] { return why.message() + "; no kernels are fused"; });
}

}  // namespace


const char* jit_state_name(JitState s) {
  switch (s) {
#define SDX_JIT_COMPILE_STATE(enumerator, NAME) \
  case JitState::enumerator: return #NAME;
#include "backend/cpu/jit/jit_states.inc"
#undef SDX_JIT_COMPILE_STATE
  }
  return "?";
}

JitEngine::JitEngine(JitOptions options) : options_(std::move(options)), cache_(options_.cache_dir) {}

JitEngine::~JitEngine() {
  cancel_.store(true, std::memory_order_release);  // a running compiler child is killed
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

JitEngine::CompilerId JitEngine::compiler_id(bool may_run) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (compiler_resolved_) return compiler_;
  }
  CompilerId id;
  Result<std::string> path = find_compiler(options_.compiler);
  if (!path.is_ok()) {
    id.status = path.status();
  } else {
    id.path = path.value();
    Result<std::string> fp = compiler_fingerprint(id.path);
    if (!fp.is_ok()) {
      id.status = fp.status();
    } else {
      id.version = cache_.compiler_version(fp.value());
      if (id.version.empty() && may_run) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++stats_.compiler_runs;
        }
        Status dir = cache_ready();
        Result<std::string> v = dir.is_ok() ? query_compiler_version(id.path, cache_.dir(), &cancel_) : Result<std::string>(dir);
        if (!v.is_ok()) {
          id.status = v.status();
        } else {
          id.version = v.value();
          (void)cache_.store_compiler_version(fp.value(), id.version);  // best effort: next process skips the query
        }
      }
    }
  }
  // Settled answers are kept for the session (an unknown version is retried by the worker).
  if (!id.status.is_ok() || !id.version.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    compiler_resolved_ = true;
    compiler_ = id;
  }
  return id;
}

Status JitEngine::cache_ready() {
  std::call_once(cache_checked_, [&] {
    cache_status_ = cache_.ensure_dir();
    if (!cache_status_.is_ok()) report_refused_cache(cache_, cache_status_);
  });
  return cache_status_;
}

bool JitEngine::try_disk_cache(CompiledSegment& c, const CompilerId& id) {
  const std::string key = DiskCache::key(c.source(), id.version);
  Result<std::shared_ptr<JitLibrary>> lib = cache_.load(key, c.ir().domain.numel());
  if (!lib.is_ok()) {
    // A miss, a corrupt entry (deleted, never loaded) or one the loader refused: compiled (again).
    if (lib.status().code() == StatusCode::kDataLoss) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.rebuilt;
      }
      obs::Diagnostics::global().record_lazy(obs::DiagCategory::kJit, obs::DiagLevel::kSummary, "DISK_CACHE_REBUILT",
                                             [&] { return lib.status().message(); });
    }
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.disk_cache_hits;
  }
  c.publish_ready(std::move(lib).value(), key, /*cache_hit=*/true, 0);
  emit_compile(key, /*cache_hit=*/true, 0, /*ok=*/true, obs::now_ns());
  return true;
}

std::shared_ptr<CompiledSegment> JitEngine::request(const SegmentIR& ir) {
  std::string source = emit_cpp(ir);
  const uint64_t h = fnv1a64(source);
  std::shared_ptr<CompiledSegment> c;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_source_.find(h);
    if (it != by_source_.end() && it->second->source() == source) return it->second;
    c = std::make_shared<CompiledSegment>(ir, std::move(source));
    by_source_[h] = c;
    ++stats_.requests;
  }
  // The synchronous part: no compiler run, only a lookup.
  Status usable = cache_ready();
  const CompilerId id = usable.is_ok() ? compiler_id(/*may_run=*/false) : CompilerId{usable, "", ""};
  if (!id.status.is_ok()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.failed;
    }
    c->publish_failed(id.status.message(), "");
    emit_compile("", /*cache_hit=*/false, 0, /*ok=*/false, obs::now_ns(), id.status.message());
    return c;
  }
  if (!id.version.empty() && try_disk_cache(*c, id)) return c;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(c);
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  }
  wake_.notify_one();
  return c;
}

void JitEngine::resolve(CompiledSegment& c) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t start_ns = obs::now_ns();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto fail = [&](const std::string& why, const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.failed;
    }
    c.publish_failed(why, key);
    emit_compile(key, /*cache_hit=*/false, seconds(), /*ok=*/false, start_ns, why);
  };
  const CompilerId id = compiler_id(/*may_run=*/true);
  if (!id.status.is_ok()) return fail(id.status.message(), "");
  if (try_disk_cache(c, id)) return;  // another process (or an earlier request) compiled it meanwhile
  const std::string key = DiskCache::key(c.source(), id.version);
  Status st = cache_.write_file(cache_.source_path(key), c.source());
  if (!st.is_ok()) return fail(st.message(), key);
  const std::string tmp = cache_.temp_path(cache_.library_path(key));
  const std::string log = tmp + ".log";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.compiler_runs;
  }
  st = compile_shared_library(id.path, cache_.source_path(key), tmp, log, &cancel_);
  std::remove(log.c_str());
  if (!st.is_ok()) {
    std::remove(tmp.c_str());
    return fail(st.message(), key);
  }
  // Hashed, published with its manifest, and loaded through the descriptor that was hashed.
  Result<std::shared_ptr<JitLibrary>> lib = cache_.publish_library(tmp, key, c.ir().domain.numel());
  if (!lib.is_ok()) return fail(lib.status().message(), key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.compiled;
  }
  const double took = seconds();
  c.publish_ready(std::move(lib).value(), key, /*cache_hit=*/false, took);
  emit_compile(key, /*cache_hit=*/false, took, /*ok=*/true, start_ns);
}

void JitEngine::worker_loop() {
  for (;;) {
    std::shared_ptr<CompiledSegment> c;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return !queue_.empty() || cancel_.load(std::memory_order_acquire); });
      if (cancel_.load(std::memory_order_acquire)) return;
      c = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    resolve(*c);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    idle_.notify_all();
  }
}

bool JitEngine::wait_idle(double timeout_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return queue_.empty() && !busy_; });
}

JitStats JitEngine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sdx::jit
