// The sdx.v1 extension service (proto/sdx/v1/remote.proto), served beside KServe's: models registered by
// fingerprint (model_store.h), sessions with heartbeat leases (session_manager.h) and outputs kept on the
// server as references that later runs take as inputs without moving their bytes (ref_store.h).
//
//   serve::ServeMetrics metrics;
//   serve::RemoteService remote(sdx::SessionOptions{}, serve::RemoteOptions{}, &metrics);
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
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sdx/session_options.h"
#include "sdx/v1/remote.grpc.pb.h"
#include "serve/model_store.h"
#include "serve/ref_store.h"
#include "serve/serve_metrics.h"
#include "serve/session_manager.h"

namespace sdx::serve {

struct RemoteOptions {
  int64_t max_model_bytes = int64_t{2} << 30;  // --max-model-bytes: one upload's total
  SessionLimits sessions;
  std::chrono::milliseconds reap_interval{100};  // how often expired leases are looked for
};

class RemoteService final : public sdx::v1::RemoteService::Service {
 public:
  RemoteService(SessionOptions options, RemoteOptions remote, ServeMetrics* metrics);

  void start_reaper() { sessions_.start_reaper(options_.reap_interval); }
  // Sets the gauges that are read rather than kept; called before each scrape.
  void refresh_metrics();

  grpc::Status RegisterModel(grpc::ServerContext* context, grpc::ServerReader<sdx::v1::ModelChunk>* reader,
                             sdx::v1::RegisterModelResponse* response) override;
  grpc::Status HasModel(grpc::ServerContext* context, const sdx::v1::HasModelRequest* request,
                        sdx::v1::HasModelResponse* response) override;
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
  grpc::Status run(grpc::ServerContext* context, const sdx::v1::RunRequest& request, sdx::v1::RunResponse* response);
  // The run's feeds: tensors sent with it (decoded and checked), then the session's refs (borrowed).
  grpc::Status feeds_of(const std::string& session, const Session& model, const sdx::v1::RunRequest& request,
                        const std::string& context_text, Session::Feeds* feeds, std::vector<RefStore::Held>* held,
                        int64_t* received);
  grpc::Status register_model(grpc::ServerReader<sdx::v1::ModelChunk>* reader,
                              sdx::v1::RegisterModelResponse* response);
  grpc::Status count(const char* rpc, grpc::Status status);

  RemoteOptions options_;
  RemoteMetrics* metrics_;
  ModelStore models_;
  RefStore refs_;
  SessionManager sessions_;  // last: destroyed first, so its reaper stops before refs_ goes away
};

}  // namespace sdx::serve
