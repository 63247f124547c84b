// The metrics sdx-serve exports (GET /metrics on --metrics-port), by model:
//
//   sdx_requests_total{model,status}          ModelInfer calls by gRPC status name (OK, NOT_FOUND, ...)
//   sdx_request_duration_seconds{model}       histogram: the handler's time, entry to answer
//   sdx_request_overhead_seconds{model}       histogram: the handler's time minus the queue wait and the
//                                             session's run: the server's own cost (lookup, decode, encode)
//   sdx_server_request_seconds{model}         histogram: a successful ModelInfer's whole server-side time, gRPC's
//                                             call setup (before parsing) to its response serialized and handed
//                                             to the transport (request_timing.h)
//   sdx_server_overhead_seconds{model}        histogram: that minus the session's run (batched: the batch's run)
//   sdx_server_send_seconds{model}            histogram: the response handed to the transport until written
//   sdx_queue_depth{model}                    gauge: admitted requests waiting for a run slot
//   sdx_inflight{model}                       gauge: requests running
//   sdx_rejected_total{model,reason}          refused before running: queue_full, deadline
//   sdx_batch_size{model}                     histogram: rows of each run of the dynamic batcher (batcher.h)
//   sdx_batch_queue_delay_seconds{model}      histogram: a batched request's wait, submit to its batch's run
//   sdx_models_loaded                         gauge: models with a loaded version (set at each scrape)
//
// and for the sdx.v1 service (remote_service.h):
//
//   sdx_remote_requests_total{rpc,status}     sdx.v1 calls by RPC and gRPC status name
//   sdx_remote_bytes_total{direction}         tensor bytes of Run and Fetch: received (inputs), sent
//                                             (outputs, fetches); a ref taken as an input moves none
//   sdx_model_registrations_total{result}     RegisterModel calls: new, already_held, failed
//   sdx_remote_models                         gauge: models registered by fingerprint (set at each scrape)
//   sdx_sessions_open                         gauge: sessions open (set at each scrape)
//   sdx_lease_expiries_total                  sessions ended by the reaper because their lease ran out
//   sdx_remote_refs                           gauge: live refs (set at each scrape)
//   sdx_remote_ref_bytes                      gauge: bytes the live refs hold (set at each scrape)
//
// and for the model cache under --memory-budget (model_cache.h), by model (a repository model's name, an
// uploaded model's fingerprint):
//
//   sdx_cache_hits_total{model}               lookups that found the model loaded
//   sdx_cache_misses_total{model}             lookups that found it evicted and reloaded it on demand
//   sdx_cache_evictions_total{model}          times it was evicted to make room for another model
//   sdx_cache_refusals_total{model}           loads refused: the model did not fit the budget (RESOURCE_EXHAUSTED)
//   sdx_cache_model_bytes{model}              gauge: bytes it holds while loaded (0 once evicted)
//   sdx_cache_bytes                           gauge: bytes the loaded models hold, together
//   sdx_cache_budget_bytes                    gauge: --memory-budget (0: unlimited)
//
// Requests for a model that is not loaded count under model="" (a client cannot create series by naming
// models that do not exist).
//
//   serve::ServeMetrics metrics;
//   serve::ModelMetrics* m = metrics.model("add");       // created once per model, kept
//   m->requests(grpc::StatusCode::OK)->add(1);
#pragma once

#include <grpcpp/support/status.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>

#include "serve/metrics.h"

namespace sdx::serve {

// gRPC's name of a status code ("OK", "RESOURCE_EXHAUSTED", ...).
const char* grpc_code_name(grpc::StatusCode code);

class ModelMetrics {
 public:
  ModelMetrics(MetricFamily* requests, std::string model) : requests_(requests), model_(std::move(model)) {}

  // The sdx_requests_total series of a status, created on its first use.
  Metric* requests(grpc::StatusCode code);

  Metric* duration = nullptr;
  Metric* overhead = nullptr;
  Metric* server_time = nullptr;      // request_timing.h
  Metric* server_overhead = nullptr;  // request_timing.h: server_time minus the run
  Metric* server_send = nullptr;      // request_timing.h: the transport's write of the response
  Metric* queue_depth = nullptr;
  Metric* inflight = nullptr;
  Metric* rejected_queue_full = nullptr;
  Metric* rejected_deadline = nullptr;
  Metric* batch_size = nullptr;
  Metric* batch_queue_delay = nullptr;

 private:
  static constexpr int kCodes = 17;  // grpc::StatusCode 0..16
  MetricFamily* requests_;
  std::string model_;
  // Release on store / acquire on load: publishes the Metric that MetricFamily::child constructed, to
  // threads that find the pointer here without taking the family's mutex.
  std::array<std::atomic<Metric*>, kCodes + 1> by_code_{};
};

// The sdx.v1 service's series, all created with the registry.
struct RemoteMetrics {
  // The sdx_remote_requests_total series of an RPC and status (created on first use; takes a mutex).
  Metric* requests(const char* rpc, grpc::StatusCode code) const;

  MetricFamily* requests_family = nullptr;
  Metric *bytes_received = nullptr, *bytes_sent = nullptr;
  Metric *registrations_new = nullptr, *registrations_held = nullptr, *registrations_failed = nullptr;
  Metric *models = nullptr, *sessions_open = nullptr, *lease_expiries = nullptr;
  Metric *refs = nullptr, *ref_bytes = nullptr;
  Metric* malloc_trim = nullptr;  // seconds of each malloc_trim(0) after sessions ended (memory_trimmer.h)
};

// The model cache's families (children made by ModelCache, once per model) and totals.
struct CacheMetrics {
  MetricFamily *hits = nullptr, *misses = nullptr, *evictions = nullptr, *refusals = nullptr;
  MetricFamily* model_bytes = nullptr;
  Metric *bytes = nullptr, *budget = nullptr;
};

class ServeMetrics {
 public:
  ServeMetrics();

  // A model's series, created on first use and never removed.
  ModelMetrics* model(const std::string& name);
  // The series of requests for models that are not loaded (model=""): requests() and duration only; the
  // gauges and rejection counters are null (such a request is never queued).
  ModelMetrics* unknown_model() { return unknown_.get(); }

  Metric* models_loaded() const { return models_loaded_; }
  RemoteMetrics* remote() { return &remote_; }
  CacheMetrics* cache() { return &cache_; }
  std::string render() const { return registry_.render(); }

 private:
  MetricsRegistry registry_;
  MetricFamily *requests_, *duration_, *overhead_, *server_time_, *server_overhead_, *server_send_;
  MetricFamily *queue_depth_, *inflight_, *rejected_, *batch_size_, *batch_delay_;
  Metric* models_loaded_;
  RemoteMetrics remote_;
  CacheMetrics cache_;
  std::unique_ptr<ModelMetrics> unknown_;
  mutable std::shared_mutex mutex_;  // guards models_ (lookups shared, creation exclusive)
  std::map<std::string, std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace sdx::serve
