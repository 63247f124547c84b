#include "api/plan_disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "api/bundle.h"
#include "backend/cpu/simd/isa.h"
#include "backend/packed_weights.h"
#include "core/fnv1a.h"
#include "core/version.h"
#include "core/xxh3.h"
#include "frontend/bundle/bundle_format.h"
#include "backend/cpu/jit/cache_permissions.h"
#include "backend/cpu/jit/disk_cache.h"
#include "obs/diagnostics.h"
#include "runtime/context.h"

namespace sdx::api {
namespace {

using obs::DiagCategory;
using obs::DiagLevel;

constexpr const char* kLayoutVersion = "v1";
constexpr int64_t kStaleTempSeconds = 3600;

template <typename F>
void diag(const char* event, F&& detail) {
  obs::Diagnostics::global().record_lazy(DiagCategory::kCache, DiagLevel::kSummary, event, std::forward<F>(detail));
}

// The options that change what the cache would hold: the optimizer's (the graph) and the execution mode.
// Threads, budgets and logging do not (packed weights of another thread count miss and are packed again).
std::string options_fingerprint(const runtime::SessionOptions& o) {
  const opt::OptimizerOptions& p = o.optimizer;
  std::string s = std::string("mode=") + runtime::execution_mode_name(o.execution_mode);
  s += ";opt=" + std::to_string(p.enabled) + "," + std::to_string(p.max_iterations) + "," + std::to_string(p.fp16) +
       "," + std::to_string(p.int8) + "," + std::to_string(p.int8_dynamic) + ";skip=";
  std::vector<std::string> skip = p.skip;
  std::sort(skip.begin(), skip.end());
  for (const std::string& k : skip) s += k + ",";
  return s;
}

// Each folder's refusal is said once per process.
void warn_once(const std::string& root, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(root).second) std::fprintf(stderr, "sdx: warning: disk plan cache off: %s\n", why.c_str());
}

// What a session's writer knows: the entry's plans so far, and the work handed to its thread.
class PlanCacheWriter {
 public:
  PlanCacheWriter(runtime::Session& s, std::shared_ptr<PlanDiskCache> cache, std::string key,
                  std::vector<bundle::PlanRecord> plans, std::string digest)
      : session_(s), cache_(std::move(cache)), key_(std::move(key)), plans_(std::move(plans)), digest_(std::move(digest)) {}

  ~PlanCacheWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // On the capturing thread: a plan of every output whose signature the entry lacks is queued.
  void captured(const runtime::PlanEntry& e) {
    if (e.plan.get() != &session_.plan() || e.shapes().empty()) {
      // A plan for a subset of the outputs is not kept; neither are the weight copies its capture
      // recorded, which nothing would then free (not while a write reads them: write_mu_).
      std::lock_guard<std::mutex> writing(write_mu_);
      if (backend::PackedWeights* p = session_.packed_weights(); p && p->is_recording()) p->stop_recording();
      return;
    }
    bundle::PlanRecord rec = plan_record(e);
    std::lock_guard<std::mutex> lock(mu_);
    for (const bundle::PlanRecord& p : plans_)
      if (p.inputs == rec.inputs) return;
    plans_.push_back(std::move(rec));
    dirty_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    cv_.notify_all();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return dirty_ || stopping_; });
      if (!dirty_) return;
      dirty_ = false;
      std::vector<bundle::PlanRecord> plans = plans_;
      lock.unlock();
      write(std::move(plans));
      lock.lock();
    }
  }

  void write(std::vector<bundle::PlanRecord> plans) {
    std::lock_guard<std::mutex> writing(write_mu_);  // the packed weights' views stay valid meanwhile
    const auto t0 = std::chrono::steady_clock::now();
    const size_t count = plans.size();
    Result<std::string> bytes = write_session_bundle(session_, std::move(plans), digest_);
    Status st = bytes.is_ok() ? cache_->store(key_, *bytes) : bytes.status();
    // The copies of packed weights are on disk now (or cannot be): keep no more of them.
    if (backend::PackedWeights* p = session_.packed_weights(); p && p->is_recording()) p->stop_recording();
    if (!st.is_ok()) {
      diag("PLAN_CACHE_WRITE_FAILED", [&] { return cache_->path(key_) + ": " + st.message(); });
      return;
    }
    diag("PLAN_CACHE_WRITTEN", [&] {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return cache_->path(key_) + ": " + std::to_string(count) + " plans, " + std::to_string(bytes->size()) +
             " bytes, " + std::to_string(ms) + " ms";
    });
  }

  runtime::Session& session_;
  std::shared_ptr<PlanDiskCache> cache_;
  std::string key_;
  std::mutex mu_;
  std::mutex write_mu_;  // held while a write reads the session's recorded packed weights
  std::condition_variable cv_;
  std::vector<bundle::PlanRecord> plans_;  // guarded by mu_
  std::string digest_;
  bool dirty_ = false, stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace

std::shared_ptr<PlanDiskCache> PlanDiskCache::open(const runtime::SessionOptions& options) {
  if (!options.disk_plan_cache) return nullptr;
  std::string root = options.disk_plan_cache_dir.empty() ? jit::DiskCache::default_root("plans")
                                                         : options.disk_plan_cache_dir;
  if (root.empty()) return nullptr;  // no home folder: no shared cache
  auto c = std::shared_ptr<PlanDiskCache>(new PlanDiskCache());
  c->root_ = root;
  c->dir_ = root + "/" + kLayoutVersion;
  c->max_bytes_ = options.disk_plan_cache_max_bytes;
  // The root is judged before anything is made inside it.
  Status st = jit::make_private_dirs(root);
  if (st.is_ok()) st = jit::check_folders_above(root);
  if (st.is_ok()) st = jit::check_private_dir(root);
  if (st.is_ok()) st = jit::make_private_dirs(c->dir_);
  if (st.is_ok()) st = jit::check_private_dir(c->dir_);
  if (!st.is_ok()) {
    warn_once(root, "'" + root + "' refused: " + st.message());
    diag("PLAN_CACHE_OFF", [&] { return "'" + root + "' refused: " + st.message(); });
    return nullptr;
  }
  return c;
}

std::string PlanDiskCache::key(std::string_view model_bytes, const runtime::SessionOptions& options) {
  const std::string text = "model=" + hex64(xxh3_64(model_bytes.data(), model_bytes.size())) + ";" + options_fingerprint(options) +
                           ";sdx=" + version() + ";build=" + build_id() + ";isa=" + cpu::simd::isa_name(cpu::simd::detected_isa()) +
                           ";bundle=" + std::to_string(bundle::kBundleFormatVersion);
  return hex64(fnv1a64(text));
}

Result<std::shared_ptr<MappedFile>> PlanDiskCache::find(const std::string& key) const {
  const std::string p = path(key);
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return not_found("no disk plan cache entry " + key);
  if (!S_ISREG(st.st_mode)) return invalid_argument("'" + p + "' is not a regular file");
  SDX_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> f, MappedFile::open(p), "");
  ::utimensat(AT_FDCWD, p.c_str(), nullptr, 0);  // just used (LRU by modification time)
  return f;
}

Status PlanDiskCache::store(const std::string& key, const std::string& bundle_bytes) const {
  SDX_RETURN_IF_ERROR(jit::DiskCache(root_).write_file(path(key), bundle_bytes), "disk plan cache");
  evict(key);
  return Status::ok();
}

void PlanDiskCache::remove(const std::string& key) const { ::unlink(path(key).c_str()); }

namespace {

struct Entry {
  std::string path;
  int64_t bytes = 0;
  int64_t mtime_ns = 0;
  bool temp = false;
};

std::vector<Entry> list_entries(const std::string& dir) {
  std::vector<Entry> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const bool entry = name.size() > 4 && name.compare(name.size() - 4, 4, ".sdx") == 0;
    const bool temp = name.find(".sdx.tmp.") != std::string::npos;
    if (!entry && !temp) continue;
    struct stat st {};
    const std::string p = dir + "/" + name;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({p, static_cast<int64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, temp});
  }
  ::closedir(d);
  return out;
}

}  // namespace

int64_t PlanDiskCache::size_bytes() const {
  int64_t total = 0;
  for (const Entry& e : list_entries(dir_))
    if (!e.temp) total += e.bytes;
  return total;
}

void PlanDiskCache::evict(const std::string& keep) const {
  std::vector<Entry> entries = list_entries(dir_);
  const int64_t now_ns = static_cast<int64_t>(std::time(nullptr)) * 1000000000;
  int64_t total = 0;
  std::vector<Entry> kept;
  for (const Entry& e : entries) {
    if (e.temp) {
      if (now_ns - e.mtime_ns > kStaleTempSeconds * 1000000000) ::unlink(e.path.c_str());
      continue;
    }
    total += e.bytes;
    kept.push_back(e);
  }
  std::sort(kept.begin(), kept.end(), [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  const std::string keep_path = path(keep);
  for (const Entry& e : kept) {
    if (total <= max_bytes_) break;
    if (e.path == keep_path) continue;
    if (::unlink(e.path.c_str()) == 0) {
      total -= e.bytes;
      diag("PLAN_CACHE_EVICTED", [&] { return e.path + " (" + std::to_string(e.bytes) + " bytes)"; });
    }
  }
}

void attach_plan_cache_writer(runtime::Session& session, std::shared_ptr<PlanDiskCache> cache, std::string key,
                              bool hit) {
  std::vector<bundle::PlanRecord> plans;
  if (hit) {
    for (const auto& [sig, record] : session.seeded_plans()) plans.push_back(plan_record(session.plan(), sig, record));
  } else if (!session.packed_weights()) {
    // A miss: kernels keep copies of what they pack until the first write.
    session.set_packed_weights(backend::PackedWeights::recording());
  }
  std::string digest = "cache_key:" + key;
  auto writer = std::make_shared<PlanCacheWriter>(session, std::move(cache), std::move(key), std::move(plans),
                                                  std::move(digest));
  session.set_on_plan_captured([writer](const runtime::PlanEntry& e) { writer->captured(e); });
}

}  // namespace sdx::api
