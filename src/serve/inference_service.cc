#include "serve/inference_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <set>
#include <utility>

#include "serve/datatype.h"
#include "serve/grpc_status.h"
#include "serve/request_timing.h"
#include "serve/tensor_codec.h"

namespace sdx::serve {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The request id as a log field: at most 64 printable characters, no spaces or quotes.
std::string log_field(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 64)) out += (c > ' ' && c < 127 && c != '"' && c != '\\') ? c : '_';
  return out.empty() ? "-" : out;
}

void describe(const ValueInfo& info, inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(info.name);
  const char* datatype = info.is_tensor ? datatype_name(info.element_type) : nullptr;
  out->set_datatype(datatype ? datatype : "");
  for (const Dim& d : info.shape) out->add_shape(d.value >= 0 ? d.value : -1);
}

}  // namespace

InferenceService::InferenceService(ModelRepository* repository, std::string server_version, ServeMetrics* metrics,
                                   AdmissionOptions admission)
    : repository_(repository),
      metrics_(metrics),
      admission_(admission),
      gates_(admission.max_queue, admission.model_concurrency),
      server_version_(std::move(server_version)) {}

void InferenceService::log_request(const inference::ModelInferRequest& request, const grpc::Status& status,
                                   double total, const Timings& t) {
  // One line, key=value, written by one fprintf (stderr is unbuffered and locked per call: lines never mix).
  std::fprintf(stderr,
               "sdx-serve: request model=%s version=%s id=%s status=%s total_us=%.1f queue_us=%.1f run_us=%.1f\n",
               log_field(request.model_name()).c_str(), log_field(request.model_version()).c_str(),
               log_field(request.id()).c_str(), grpc_code_name(status.error_code()), total * 1e6,
               t.queue_wait * 1e6, t.run * 1e6);
}

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
    response->set_ready(repository_->ready(request->name(), request->version()));  // an evicted model reloads
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

void InferenceService::refresh_metrics() {
  std::set<std::string> loaded;
  for (const ModelRepository::IndexRow& row : repository_->index(true)) loaded.insert(row.name);
  metrics_->models_loaded()->set(static_cast<int64_t>(loaded.size()));
}

grpc::Status InferenceService::ModelInfer(grpc::ServerContext* context, const inference::ModelInferRequest* request,
                                          inference::ModelInferResponse* response) {
  const Clock::time_point start = Clock::now();
  Timings t;
  ModelMetrics* metrics = nullptr;
  grpc::Status status = guarded("ModelInfer", [&] {
    Result<ModelRepository::Entry> found = repository_->find(request->model_name(), request->model_version());
    if (!found.is_ok()) {
      metrics = metrics_->unknown_model();
      return to_grpc(found.status());
    }
    metrics = metrics_->model(found.value().name);
    return infer(context, *request, response, found.value(), metrics, &t);
  });
  const double total = seconds_since(start);
  if (!metrics) metrics = metrics_->unknown_model();  // an exception before the model was looked up
  metrics->requests(status.error_code())->add(1);
  metrics->duration->observe(total);
  if (t.ran) metrics->overhead->observe(total - t.queue_wait - t.run);
  record_call(context, metrics, t.run, t.ran);  // the whole server-side time is observed by request_timing.h
  if (admission_.log_requests) log_request(*request, status, total, t);
  return status;
}

grpc::Status InferenceService::infer(grpc::ServerContext* context, const inference::ModelInferRequest& request,
                                     inference::ModelInferResponse* response, const ModelRepository::Entry& model,
                                     ModelMetrics* metrics, Timings* t) {
  const std::string context_text = "model '" + model.name + "' version " + model.version;
  Session::Feeds feeds;
  std::vector<std::string> names;
  Status st = decode_inputs(request, model.session->inputs(), &feeds);
  if (st.is_ok()) st = requested_outputs(request, model.session->outputs(), &names);
  if (!st.is_ok()) return to_grpc(st.with_context(context_text));

  AdmissionGate* g = gates_.get(model.name, static_cast<int>(model.instance_count));
  AdmissionGate::Ticket ticket = g->enter();
  if (!ticket.admitted()) return refuse_queue_full(context, *g, metrics, context_text);
  if (model.batcher && model.batcher->batchable(feeds))
    return infer_batched(context, request, response, model, feeds, names, metrics, t);
  if (grpc::Status st = wait_to_run(context, &ticket, metrics, context_text, &t->queue_wait); !st.ok()) return st;
  std::optional<Result<std::vector<Value>>> run;
  {
    GaugeHold running(metrics->inflight);
    const Clock::time_point run_start = Clock::now();
    run.emplace(model.session->run(feeds, names));
    t->run = seconds_since(run_start);
    t->ran = true;
  }
  Result<std::vector<Value>>& outputs = *run;
  if (!outputs.is_ok()) return to_grpc(outputs.status().with_context(context_text));
  response->set_model_name(model.name);
  response->set_model_version(model.version);
  response->set_id(request.id());
  return to_grpc(encode_outputs(names, outputs.value(), response).with_context(context_text));
}

grpc::Status InferenceService::infer_batched(grpc::ServerContext* context, const inference::ModelInferRequest& request,
                                             inference::ModelInferResponse* response,
                                             const ModelRepository::Entry& model, const Session::Feeds& feeds,
                                             const std::vector<std::string>& names, ModelMetrics* metrics,
                                             Timings* t) {
  const std::string context_text = "model '" + model.name + "' version " + model.version;
  const grpc::Status expired(grpc::StatusCode::DEADLINE_EXCEEDED,
                             context_text + ": the request's deadline passed before it could run; it was not run");
  if (std::chrono::system_clock::now() > context->deadline()) {
    metrics->rejected_deadline->add(1);
    return expired;
  }
  Batcher::Outcome o;
  {
    GaugeHold waiting(metrics->queue_depth);  // waiting in the batcher or running in a batch
    o = model.batcher->submit(feeds, names, context->deadline());
  }
  t->queue_wait = o.queue_delay;
  if (o.expired) {
    metrics->rejected_deadline->add(1);
    return expired;
  }
  t->run = o.run;
  t->ran = true;
  metrics->batch_queue_delay->observe(o.queue_delay);
  if (o.reports_batch) metrics->batch_size->observe(static_cast<double>(o.batch_rows));
  if (!o.status.is_ok()) return to_grpc(o.status.with_context(context_text));
  response->set_model_name(model.name);
  response->set_model_version(model.version);
  response->set_id(request.id());
  return to_grpc(encode_outputs(names, o.outputs, response).with_context(context_text));
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
