// The sdx.v1 extension service (proto/sdx/v1/remote.proto), served beside KServe's: models registered by
// fingerprint (model_store.h), sessions with heartbeat leases (session_manager.h) and outputs kept on the
// server as references that later runs take as inputs without moving their bytes (ref_store.h). Runs may
// also name a model of the server's repository (the KServe service's models) instead of a fingerprint.
//
//   serve::ServeMetrics metrics;
//   serve::RemoteService remote(sdx::SessionOptions{}, serve::RemoteOptions{}, &metrics, &repository);
//   remote.start_reaper();                        // ends sessions whose lease ran out, freeing their refs
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&remote);             // beside InferenceService
//
// Every call that names a session takes its id from the request field or, when that is empty, from the
// gRPC metadata key `sdx-session` (the affinity key an L7 balancer routes on; a field and a key that
// disagree are INVALID_ARGUMENT). Such a call renews the session's lease, as Heartbeat does. Errors are
// gRPC statuses naming what is wrong: an unknown fingerprint, session or ref is NOT_FOUND, another
// session's ref PERMISSION_DENIED, a bad tensor INVALID_ARGUMENT naming the input, an upload past
// --max-model-bytes RESOURCE_EXHAUSTED. Handlers run on gRPC's threads, several at once.
//
// OpenSession takes the client's proposed id (field, or the metadata key sdx-session) so that a balancer
// hashing on sdx-session sends OpenSession where the session's later calls go (session_manager.h checks it).
// Run goes through its model's AdmissionGate (admission.h, keyed by fingerprint or repository model name,
// the same code and sdx_requests_total / sdx_rejected_total / sdx_queue_depth series as ModelInfer): checked
// first, then refused at once when the queue is full (RESOURCE_EXHAUSTED, grpc-retry-pushback-ms), or run
// once a slot frees up, unless its deadline passed meanwhile (DEADLINE_EXCEEDED, not run). A repository
// model with dynamic batching runs unbatched here (a run slot of its sdx.v1 gate, apart from ModelInfer's).
// When a session ends (closed or expired) its refs are freed and the freed heap is given back to the OS by
// malloc_trim on the trimmer's thread (memory_trimmer.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sdx/session_options.h"
#include "sdx/v1/remote.grpc.pb.h"
#include "serve/admission.h"
#include "serve/memory_trimmer.h"
#include "serve/model_store.h"
#include "serve/ref_store.h"
#include "serve/serve_metrics.h"
#include "serve/session_manager.h"

namespace sdx::serve {

class ModelRepository;

struct RemoteOptions {
  int64_t max_model_bytes = int64_t{2} << 30;  // --max-model-bytes: one upload's total
  int max_queue = 64;                          // --max-queue: Runs in flight or waiting, per model
  int model_concurrency = 1;                   // --model-concurrency: Runs running at once, per model
  SessionLimits sessions;
  std::chrono::milliseconds reap_interval{100};  // how often expired leases are looked for
  ModelCache* cache = nullptr;  // the memory budget shared with the repository (model_cache.h); null: unlimited
  std::string model_cache_dir;  // --model-cache-dir: where uploads are kept for reloads (model_store.h)
};

class RemoteService final : public sdx::v1::RemoteService::Service {
 public:
  // repository: the models Run may name (model_name); null: only uploaded models.
  RemoteService(SessionOptions options, RemoteOptions remote, ServeMetrics* metrics,
                ModelRepository* repository = nullptr);

  // Starts the reaper, and fixes glibc's malloc thresholds so that a session's freed refs leave RSS
  // (MemoryTrimmer::fix_malloc_thresholds; process-wide, once, at server start).
  void start_reaper() {
    MemoryTrimmer::fix_malloc_thresholds();
    sessions_.start_reaper(options_.reap_interval);
  }
  // Sets the gauges that are read rather than kept; called before each scrape.
  void refresh_metrics();

  grpc::Status RegisterModel(grpc::ServerContext* context, grpc::ServerReader<sdx::v1::ModelChunk>* reader,
                             sdx::v1::RegisterModelResponse* response) override;
  grpc::Status HasModel(grpc::ServerContext* context, const sdx::v1::HasModelRequest* request,
                        sdx::v1::HasModelResponse* response) override;
  grpc::Status ModelMetadata(grpc::ServerContext* context, const sdx::v1::ModelMetadataRequest* request,
                             sdx::v1::ModelMetadataResponse* response) override;
  grpc::Status OpenSession(grpc::ServerContext* context, const sdx::v1::OpenSessionRequest* request,
                           sdx::v1::OpenSessionResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const sdx::v1::HeartbeatRequest* request,
                         sdx::v1::HeartbeatResponse* response) override;
  grpc::Status CloseSession(grpc::ServerContext* context, const sdx::v1::CloseSessionRequest* request,
                            sdx::v1::CloseSessionResponse* response) override;
  grpc::Status Run(grpc::ServerContext* context, const sdx::v1::RunRequest* request,
                   sdx::v1::RunResponse* response) override;
  grpc::Status Fetch(grpc::ServerContext* context, const sdx::v1::FetchRequest* request,
                     sdx::v1::FetchResponse* response) override;
  grpc::Status Release(grpc::ServerContext* context, const sdx::v1::ReleaseRequest* request,
                       sdx::v1::ReleaseResponse* response) override;

 private:
  // The session a call names (field or metadata), its lease renewed; `id` set on success.
  grpc::Status session_of(grpc::ServerContext* context, const std::string& field, std::string* id);
  // The model a Run or ModelMetadata names (fingerprint, or repository name and version): NOT_FOUND naming it.
  struct Model {
    std::shared_ptr<const Session> session;
    std::string key;      // the gate's and metrics' key: the fingerprint, or the repository model's name
    std::string what;     // for messages: "model sha256:..." or "model 'add' version 1"
    std::string version;  // a repository model's version
    int concurrency = 0;  // a repository model's instance_group count (0: --model-concurrency)
  };
  grpc::Status model_of(const std::string& fingerprint, const std::string& name, const std::string& version,
                        Model* out);
  grpc::Status run(grpc::ServerContext* context, const sdx::v1::RunRequest& request, sdx::v1::RunResponse* response,
                   ModelMetrics** metrics, double* queue_wait, double* run_seconds);
  // The run's feeds: tensors sent with it (decoded and checked), then the session's refs (borrowed).
  grpc::Status feeds_of(const std::string& session, const Session& model, const sdx::v1::RunRequest& request,
                        const std::string& context_text, Session::Feeds* feeds, std::vector<RefStore::Held>* held,
                        int64_t* received);
  grpc::Status register_model(grpc::ServerReader<sdx::v1::ModelChunk>* reader,
                              sdx::v1::RegisterModelResponse* response);
  grpc::Status count(const char* rpc, grpc::Status status);

  RemoteOptions options_;
  ServeMetrics* serve_metrics_;
  RemoteMetrics* metrics_;
  ModelRepository* repository_;
  ModelStore models_;
  RefStore refs_;
  AdmissionGates gates_;
  MemoryTrimmer trimmer_;    // before sessions_: the reaper asks it to trim until sessions_ is destroyed
  SessionManager sessions_;  // last: destroyed first, so its reaper stops before refs_ goes away
};

}  // namespace sdx::serve
