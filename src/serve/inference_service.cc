#include "serve/inference_service.h"

#include <exception>
#include <utility>

#include "serve/datatype.h"
#include "serve/grpc_status.h"
#include "serve/tensor_codec.h"

namespace sdx::serve {
namespace {

// Runs a handler's body; an exception (a bug, or memory running out) becomes INTERNAL instead of
// terminating the server with every other client's request.
template <typename Body>
grpc::Status guarded(const char* rpc, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(rpc) + ": " + e.what());
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(rpc) + ": unknown exception");
  }
}

void describe(const ValueInfo& info, inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(info.name);
  const char* datatype = info.is_tensor ? datatype_name(info.element_type) : nullptr;
  out->set_datatype(datatype ? datatype : "");
  for (const Dim& d : info.shape) out->add_shape(d.value >= 0 ? d.value : -1);
}

}  // namespace

InferenceService::InferenceService(ModelRepository* repository, std::string server_version)
    : repository_(repository), server_version_(std::move(server_version)) {}

grpc::Status InferenceService::ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                                          inference::ServerLiveResponse* response) {
  response->set_live(true);
  return grpc::Status::OK;
}

grpc::Status InferenceService::ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                                           inference::ServerReadyResponse* response) {
  response->set_ready(ready_.load(std::memory_order_relaxed));
  return grpc::Status::OK;
}

grpc::Status InferenceService::ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* request,
                                          inference::ModelReadyResponse* response) {
  return guarded("ModelReady", [&] {
    response->set_ready(repository_->find(request->name(), request->version()).is_ok());
    return grpc::Status::OK;
  });
}

grpc::Status InferenceService::ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                                              inference::ServerMetadataResponse* response) {
  response->set_name("sdx");
  response->set_version(server_version_);
  response->add_extensions("model_repository");
  return grpc::Status::OK;
}

grpc::Status InferenceService::ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* request,
                                             inference::ModelMetadataResponse* response) {
  return guarded("ModelMetadata", [&] {
    Result<ModelRepository::Entry> found = repository_->find(request->name(), request->version());
    if (!found.is_ok()) return to_grpc(found.status());
    const ModelRepository::Entry& model = found.value();
    response->set_name(model.name);
    for (const std::string& v : model.versions) response->add_versions(v);
    response->set_platform("sdx_onnx");
    for (const ValueInfo& in : model.session->inputs()) describe(in, response->add_inputs());
    for (const ValueInfo& out : model.session->outputs()) describe(out, response->add_outputs());
    return grpc::Status::OK;
  });
}

grpc::Status InferenceService::ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* request,
                                          inference::ModelInferResponse* response) {
  return guarded("ModelInfer", [&] {
    Result<ModelRepository::Entry> found = repository_->find(request->model_name(), request->model_version());
    if (!found.is_ok()) return to_grpc(found.status());
    const ModelRepository::Entry& model = found.value();
    const std::string context = "model '" + model.name + "' version " + model.version;
    Session::Feeds feeds;
    std::vector<std::string> names;
    Status st = decode_inputs(*request, model.session->inputs(), &feeds);
    if (st.is_ok()) st = requested_outputs(*request, model.session->outputs(), &names);
    if (!st.is_ok()) return to_grpc(st.with_context(context));
    Result<std::vector<Value>> outputs = model.session->run(feeds, names);
    if (!outputs.is_ok()) return to_grpc(outputs.status().with_context(context));
    response->set_model_name(model.name);
    response->set_model_version(model.version);
    response->set_id(request->id());
    return to_grpc(encode_outputs(names, outputs.value(), response).with_context(context));
  });
}

grpc::Status InferenceService::RepositoryIndex(grpc::ServerContext*, const inference::RepositoryIndexRequest* request,
                                               inference::RepositoryIndexResponse* response) {
  return guarded("RepositoryIndex", [&] {
    for (const ModelRepository::IndexRow& row : repository_->index(request->ready())) {
      auto* m = response->add_models();
      m->set_name(row.name);
      m->set_version(row.version);
      m->set_state(row.state);
      m->set_reason(row.reason);
    }
    return grpc::Status::OK;
  });
}

grpc::Status InferenceService::RepositoryModelLoad(grpc::ServerContext*,
                                                   const inference::RepositoryModelLoadRequest* request,
                                                   inference::RepositoryModelLoadResponse*) {
  return guarded("RepositoryModelLoad", [&] {
    if (request->parameters_size() != 0)
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          "model '" + request->model_name() + "': load parameters (config or file overrides) "
                          "are not supported; put the model in the repository folder");
    return to_grpc(repository_->load(request->model_name()));
  });
}

grpc::Status InferenceService::RepositoryModelUnload(grpc::ServerContext*,
                                                     const inference::RepositoryModelUnloadRequest* request,
                                                     inference::RepositoryModelUnloadResponse*) {
  return guarded("RepositoryModelUnload", [&] { return to_grpc(repository_->unload(request->model_name())); });
}

}  // namespace sdx::serve
