// The KServe v2 gRPC service (inference.GRPCInferenceService) over a model repository: health, server and
// model metadata, ModelInfer, and the repository extension (index, load, unload). Triton's client library
// (tritonclient.grpc) talks to it unchanged.
//
//   serve::ModelRepository repo(dir, options);
//   repo.load_all();
//   serve::InferenceService service(&repo, "0.1.0");
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&service);
//
// Every handler answers with a gRPC status, never by crashing: unknown models and versions are NOT_FOUND,
// bad tensors INVALID_ARGUMENT naming the input, and an exception escaping the engine is INTERNAL. RPCs of
// the protocol that are not implemented (ModelConfig, statistics, streaming, shared memory) answer
// UNIMPLEMENTED. Handlers run on gRPC's threads, several at once; the repository and sdx::Session are
// thread-safe.
#pragma once

#include <atomic>
#include <string>

#include "kserve/grpc_service.grpc.pb.h"
#include "serve/model_repository.h"

namespace sdx::serve {

class InferenceService final : public inference::GRPCInferenceService::Service {
 public:
  InferenceService(ModelRepository* repository, std::string server_version);

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
  ModelRepository* repository_;
  std::string server_version_;
  std::atomic<bool> ready_{true};  // relaxed: a hint for health checks, publishing nothing else
};

}  // namespace sdx::serve
