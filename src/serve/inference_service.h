// The KServe v2 gRPC service (inference.GRPCInferenceService) over a model repository: health, server and
// model metadata, ModelInfer, and the repository extension (index, load, unload). Triton's client library
// (tritonclient.grpc) talks to it unchanged.
//
//   serve::ModelRepository repo(dir, options);
//   repo.load_all();
//   serve::ServeMetrics metrics;
//   serve::InferenceService service(&repo, "0.1.0", &metrics, serve::AdmissionOptions{64, 8, false});
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&service);
//
// Every handler answers with a gRPC status, never by crashing: unknown models and versions are NOT_FOUND,
// bad tensors INVALID_ARGUMENT naming the input, and an exception escaping the engine is INTERNAL. RPCs of
// the protocol that are not implemented (ModelConfig, statistics, streaming, shared memory) answer
// UNIMPLEMENTED. Handlers run on gRPC's threads, several at once; the repository and sdx::Session are
// thread-safe.
//
// ModelInfer goes through its model's AdmissionGate (admission.h): a request is decoded and checked first
// (a bad one never takes a place), then admitted or refused at once with RESOURCE_EXHAUSTED and a retry
// hint (trailing metadata grpc-retry-pushback-ms, and the message says when), then waits for a run slot
// until its gRPC deadline; one whose deadline has passed when its turn comes is dropped (DEADLINE_EXCEEDED)
// without running. A model with dynamic batching (config.json; batcher.h) sends its batchable requests,
// once admitted, to its Batcher instead of a run slot. Every call is counted in the metrics (serve_metrics.h).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>

#include "kserve/grpc_service.grpc.pb.h"
#include "serve/admission.h"
#include "serve/model_repository.h"
#include "serve/serve_metrics.h"

namespace sdx::serve {

struct AdmissionOptions {
  int max_queue = 64;         // requests in flight or waiting, per model
  int model_concurrency = 1;  // requests running at once, per model
  bool log_requests = false;  // one structured line per ModelInfer on stderr
};

class InferenceService final : public inference::GRPCInferenceService::Service {
 public:
  InferenceService(ModelRepository* repository, std::string server_version, ServeMetrics* metrics,
                   AdmissionOptions admission);

  // Sets the gauges that are read rather than kept (sdx_models_loaded); called before each scrape.
  void refresh_metrics();

  // ServerReady answers false once shutdown has begun (load balancers stop sending new requests).
  void set_ready(bool ready) { ready_.store(ready, std::memory_order_relaxed); }

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* response) override;
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* response) override;
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* request,
                          inference::ModelReadyResponse* response) override;
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* response) override;
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* request,
                             inference::ModelMetadataResponse* response) override;
  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* request,
                          inference::ModelInferResponse* response) override;
  grpc::Status RepositoryIndex(grpc::ServerContext*, const inference::RepositoryIndexRequest* request,
                               inference::RepositoryIndexResponse* response) override;
  grpc::Status RepositoryModelLoad(grpc::ServerContext*, const inference::RepositoryModelLoadRequest* request,
                                   inference::RepositoryModelLoadResponse*) override;
  grpc::Status RepositoryModelUnload(grpc::ServerContext*, const inference::RepositoryModelUnloadRequest* request,
                                     inference::RepositoryModelUnloadResponse*) override;

 private:
  struct Timings {
    double queue_wait = 0, run = 0;  // seconds
    bool ran = false;                // the session ran (timings complete)
  };
  grpc::Status infer(grpc::ServerContext* context, const inference::ModelInferRequest& request,
                     inference::ModelInferResponse* response, const ModelRepository::Entry& model,
                     ModelMetrics* metrics, Timings* t);
  // A batchable request of a model with dynamic batching, once admitted: it waits in the model's Batcher
  // (not for a run slot; the batcher runs one batch at a time) and gets its rows of the batch's outputs.
  grpc::Status infer_batched(grpc::ServerContext* context, const inference::ModelInferRequest& request,
                             inference::ModelInferResponse* response, const ModelRepository::Entry& model,
                             const Session::Feeds& feeds, const std::vector<std::string>& names,
                             ModelMetrics* metrics, Timings* t);
  void log_request(const inference::ModelInferRequest& request, const grpc::Status& status, double total,
                   const Timings& t);

  ModelRepository* repository_;
  ServeMetrics* metrics_;
  AdmissionOptions admission_;
  AdmissionGates gates_;  // by model name, with its instance count (model_config.h)
  std::string server_version_;
  std::atomic<bool> ready_{true};  // relaxed: a hint for health checks, publishing nothing else
};

}  // namespace sdx::serve
