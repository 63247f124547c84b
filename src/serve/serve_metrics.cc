#include "serve/serve_metrics.h"

#include <mutex>

namespace sdx::serve {

const char* grpc_code_name(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                       "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                       "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "UNKNOWN";
}

Metric* ModelMetrics::requests(grpc::StatusCode code) {
  int i = static_cast<int>(code);
  if (i < 0 || i >= kCodes) i = kCodes;  // out-of-range codes share one slot, named UNKNOWN
  Metric* m = by_code_[i].load(std::memory_order_acquire);
  if (!m) {
    // Two threads may both get here; child() returns the same series to both, so either store is right.
    m = requests_->child({{"model", model_}, {"status", grpc_code_name(code)}});
    by_code_[i].store(m, std::memory_order_release);
  }
  return m;
}

Metric* RemoteMetrics::requests(const char* rpc, grpc::StatusCode code) const {
  return requests_family->child({{"rpc", rpc}, {"status", grpc_code_name(code)}});
}

ServeMetrics::ServeMetrics() {
  requests_ = registry_.family("sdx_requests_total", "ModelInfer calls, by model and gRPC status.",
                               MetricType::kCounter);
  duration_ = registry_.histogram("sdx_request_duration_seconds",
                                  "ModelInfer handler time, from entry to the answer.", kLatencyBuckets);
  overhead_ = registry_.histogram("sdx_request_overhead_seconds",
                                  "ModelInfer handler time minus queue wait minus the session's run time.",
                                  kLatencyBuckets);
  // Finer than kLatencyBuckets where the overhead acceptance lies (issue 19: at most 30 us p50): 1 us steps
  // to 5 us, 5 us steps to 50 us, then coarser.
  static const std::vector<double> kServerBuckets = {
      1e-6,   2e-6,   3e-6,   4e-6,   5e-6,   10e-6,  15e-6, 20e-6, 25e-6, 30e-6, 35e-6, 40e-6, 45e-6,
      50e-6,  60e-6,  70e-6,  80e-6,  90e-6,  100e-6, 125e-6, 150e-6, 200e-6, 250e-6, 300e-6, 400e-6,
      500e-6, 750e-6, 1e-3,   2.5e-3, 5e-3,   10e-3,  25e-3,  50e-3,  0.1,    0.25,   0.5,    1,
      2.5,    5,      10};
  server_time_ = registry_.histogram("sdx_server_request_seconds",
                                     "Successful ModelInfer calls' server-side time: from gRPC's call setup "
                                     "(before the request is parsed) to the response serialized and handed to "
                                     "the transport.",
                                     kServerBuckets);
  server_overhead_ = registry_.histogram("sdx_server_overhead_seconds",
                                         "sdx_server_request_seconds minus the session's run (the batch's run "
                                         "for a batched request).",
                                         kServerBuckets);
  server_send_ = registry_.histogram("sdx_server_send_seconds",
                                     "Successful ModelInfer calls: the response handed to the transport until "
                                     "its write completed.",
                                     kServerBuckets);
  queue_depth_ = registry_.family("sdx_queue_depth", "Admitted requests waiting for a run slot.", MetricType::kGauge);
  inflight_ = registry_.family("sdx_inflight", "Requests running.", MetricType::kGauge);
  rejected_ = registry_.family("sdx_rejected_total", "Requests refused before running, by reason.",
                               MetricType::kCounter);
  // Rows per batch (observe() takes the count as its "seconds"): powers of two up to 1024.
  static const std::vector<double> kBatchSizeBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  batch_size_ = registry_.histogram("sdx_batch_size", "Rows of each batched run of the dynamic batcher.",
                                    kBatchSizeBuckets);
  batch_delay_ = registry_.histogram("sdx_batch_queue_delay_seconds",
                                     "A batched request's wait in the dynamic batcher, until its batch runs.",
                                     kLatencyBuckets);
  models_loaded_ = registry_.family("sdx_models_loaded", "Models with a loaded version.", MetricType::kGauge)
                       ->child({});
  unknown_ = std::make_unique<ModelMetrics>(requests_, "");

  RemoteMetrics& r = remote_;
  r.requests_family = registry_.family("sdx_remote_requests_total", "sdx.v1 calls, by RPC and gRPC status.",
                                       MetricType::kCounter);
  MetricFamily* bytes = registry_.family(
      "sdx_remote_bytes_total", "Tensor bytes of sdx.v1 Run and Fetch, by direction.", MetricType::kCounter);
  r.bytes_received = bytes->child({{"direction", "received"}});
  r.bytes_sent = bytes->child({{"direction", "sent"}});
  MetricFamily* registrations = registry_.family(
      "sdx_model_registrations_total", "RegisterModel calls: new, already_held, failed.", MetricType::kCounter);
  r.registrations_new = registrations->child({{"result", "new"}});
  r.registrations_held = registrations->child({{"result", "already_held"}});
  r.registrations_failed = registrations->child({{"result", "failed"}});
  r.models = registry_.family("sdx_remote_models", "Models registered by fingerprint.", MetricType::kGauge)->child({});
  r.sessions_open = registry_.family("sdx_sessions_open", "sdx.v1 sessions open.", MetricType::kGauge)->child({});
  r.lease_expiries = registry_.family("sdx_lease_expiries_total", "Sessions ended because their lease ran out.",
                                      MetricType::kCounter)->child({});
  r.refs = registry_.family("sdx_remote_refs", "Live remote refs (outputs kept on the server).",
                            MetricType::kGauge)->child({});
  r.ref_bytes = registry_.family("sdx_remote_ref_bytes", "Bytes held by the live remote refs.",
                                 MetricType::kGauge)->child({});
  r.malloc_trim = registry_.histogram("sdx_malloc_trim_seconds",
                                      "malloc_trim(0) calls after sessions ended (freed memory given back to "
                                      "the OS), and their time.",
                                      kLatencyBuckets)->child({});
  unknown_->duration = duration_->child({{"model", ""}});

  CacheMetrics& c = cache_;
  c.hits = registry_.family("sdx_cache_hits_total", "Model lookups that found the model loaded.",
                            MetricType::kCounter);
  c.misses = registry_.family("sdx_cache_misses_total",
                              "Model lookups that found the model evicted and reloaded it on demand.",
                              MetricType::kCounter);
  c.evictions = registry_.family("sdx_cache_evictions_total",
                                 "Times a model was evicted to make room under --memory-budget.",
                                 MetricType::kCounter);
  c.refusals = registry_.family("sdx_cache_refusals_total",
                                "Model loads refused because the model did not fit --memory-budget.",
                                MetricType::kCounter);
  c.model_bytes = registry_.family("sdx_cache_model_bytes", "Bytes a loaded model holds (0 once evicted).",
                                   MetricType::kGauge);
  c.bytes = registry_.family("sdx_cache_bytes", "Bytes the loaded models hold, together.", MetricType::kGauge)
                ->child({});
  c.budget = registry_.family("sdx_cache_budget_bytes", "The model cache's memory budget (0: unlimited).",
                              MetricType::kGauge)->child({});
}

ModelMetrics* ServeMetrics::model(const std::string& name) {
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = models_.find(name);
    if (it != models_.end()) return it->second.get();
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  auto& slot = models_[name];
  if (!slot) {
    auto m = std::make_unique<ModelMetrics>(requests_, name);
    const MetricLabels labels = {{"model", name}};
    m->duration = duration_->child(labels);
    m->overhead = overhead_->child(labels);
    m->server_time = server_time_->child(labels);
    m->server_overhead = server_overhead_->child(labels);
    m->server_send = server_send_->child(labels);
    m->queue_depth = queue_depth_->child(labels);
    m->inflight = inflight_->child(labels);
    m->rejected_queue_full = rejected_->child({{"model", name}, {"reason", "queue_full"}});
    m->rejected_deadline = rejected_->child({{"model", name}, {"reason", "deadline"}});
    m->batch_size = batch_size_->child(labels);
    m->batch_queue_delay = batch_delay_->child(labels);
    slot = std::move(m);
  }
  return slot.get();
}

}  // namespace sdx::serve
