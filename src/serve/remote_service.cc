#include "serve/remote_service.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "serve/datatype.h"
#include "serve/grpc_status.h"
#include "serve/model_repository.h"
#include "serve/tensor_codec.h"

namespace sdx::serve {
namespace {

grpc::Status invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void describe(const ValueInfo& info, sdx::v1::TensorMetadata* out) {
  out->set_name(info.name);
  const char* datatype = info.is_tensor ? datatype_name(info.element_type) : nullptr;
  out->set_datatype(datatype ? datatype : "");
  for (const Dim& d : info.shape) out->add_shape(d.value >= 0 ? d.value : -1);
}

// A value a ref holds, as a feed: borrowed (no copy) when it is a fixed-size tensor at an aligned address,
// copied otherwise. The caller keeps the ref's value alive until the run is over.
Result<Value> feed_of(const Value& held) {
  TensorView view;
  if (held.is_tensor() && held.element_type() != ElementType::kString && held.view(&view) &&
      reinterpret_cast<uintptr_t>(view.data) % alignof(std::max_align_t) == 0)
    return Value::borrow(view);
  return Value(held);
}

// Rows [begin, end) of a value along its first dimension.
Result<Value> slice_rows(const Value& v, int64_t begin, int64_t end) {
  std::vector<int64_t> dims = v.shape();
  const int64_t rows = dims[0];
  dims[0] = end - begin;
  if (v.element_type() == ElementType::kString) {
    const int64_t per_row = rows ? v.element_count() / rows : 0;
    std::vector<std::string> items;
    for (int64_t i = begin * per_row; i < end * per_row; ++i) items.push_back(v.string_at(i));
    return Value::strings(std::move(items), dims);
  }
  const size_t row_bytes = rows ? v.nbytes() / static_cast<size_t>(rows) : 0;
  const auto* data = static_cast<const char*>(v.data());
  const TensorView view{v.element_type(), dims.data(), static_cast<int>(dims.size()),
                        dims[0] ? data + static_cast<size_t>(begin) * row_bytes : nullptr};
  return Value::copy_of(view);
}

// An sdx.v1 tensor through KServe's decoder (tensor_codec.h): the same datatype, byte-count and shape checks
// as ModelInfer's raw contents. The header fields are copied, the contents are not.
Status decode_tensor(const sdx::v1::Tensor& tensor, ElementType declared, Value* out) {
  inference::ModelInferRequest::InferInputTensor header;
  header.set_name(tensor.name());
  header.set_datatype(tensor.datatype());
  header.mutable_shape()->CopyFrom(tensor.shape());
  return decode_input(header, &tensor.raw_contents(), declared, out);
}

// A value as an sdx.v1 tensor, through KServe's encoder (raw contents; BYTES length-prefixed).
Status encode_tensor(const std::string& name, const Value& value, sdx::v1::Tensor* out) {
  inference::ModelInferResponse encoded;
  if (Status st = encode_outputs({name}, {value}, &encoded); !st.is_ok()) return st;
  const auto& header = encoded.outputs(0);
  out->set_name(name);
  out->set_datatype(header.datatype());
  out->mutable_shape()->CopyFrom(header.shape());
  out->mutable_raw_contents()->swap(*encoded.mutable_raw_output_contents(0));
  return Status::ok();
}

// The outputs a run asks for, and whether each stays on the server.
grpc::Status outputs_of(const Session& model, const sdx::v1::RunRequest& request, const std::string& context_text,
                        std::vector<std::string>* names, std::vector<bool>* keep) {
  // Outputs: the ones asked for (all, returned, when none are), each once.
  if (request.outputs_size() == 0) {
    for (const ValueInfo& out : model.outputs()) names->push_back(out.name), keep->push_back(false);
  }
  for (const auto& wanted : request.outputs()) {
    bool exists = false;
    for (const ValueInfo& out : model.outputs()) exists = exists || out.name == wanted.name();
    if (!exists) return invalid(context_text + ": output '" + wanted.name() + "': the model has no such output");
    for (const std::string& n : *names)
      if (n == wanted.name()) return invalid(context_text + ": output '" + n + "' asked for twice");
    names->push_back(wanted.name());
    keep->push_back(wanted.keep_on_server());
  }

  return grpc::Status::OK;
}

}  // namespace

RemoteService::RemoteService(SessionOptions options, RemoteOptions remote, ServeMetrics* metrics,
                             ModelRepository* repository)
    : options_(remote),
      serve_metrics_(metrics),
      metrics_(metrics->remote()),
      repository_(repository),
      models_(std::move(options), remote.cache, remote.model_cache_dir),
      gates_(remote.max_queue, remote.model_concurrency),
      trimmer_(metrics->remote()->malloc_trim),
      sessions_(remote.sessions, [this](const std::string& id, SessionEnd why) {
        // Runs on the reaper's thread (expired) or CloseSession's: the trim itself runs on the trimmer's.
        if (refs_.drop_session(id) > 0) trimmer_.request();
        if (why == SessionEnd::kExpired) metrics_->lease_expiries->add(1);
      }) {}

void RemoteService::refresh_metrics() {
  metrics_->models->set(static_cast<int64_t>(models_.size()));
  metrics_->sessions_open->set(static_cast<int64_t>(sessions_.open_count()));
  metrics_->refs->set(refs_.live_refs());
  metrics_->ref_bytes->set(refs_.live_bytes());
}

grpc::Status RemoteService::count(const char* rpc, grpc::Status status) {
  metrics_->requests(rpc, status.error_code())->add(1);
  return status;
}

grpc::Status RemoteService::session_of(grpc::ServerContext* context, const std::string& field, std::string* id) {
  std::string from_metadata;
  const auto& md = context->client_metadata();
  if (auto it = md.find("sdx-session"); it != md.end()) from_metadata.assign(it->second.data(), it->second.size());
  if (!field.empty() && !from_metadata.empty() && field != from_metadata)
    return invalid("session_id '" + field + "' and the metadata key sdx-session '" + from_metadata + "' disagree");
  *id = field.empty() ? from_metadata : field;
  if (id->empty())
    return invalid("no session: give session_id, or the metadata key sdx-session (OpenSession makes one)");
  Result<int64_t> lease = sessions_.touch(*id);
  return lease.is_ok() ? grpc::Status::OK : to_grpc(lease.status());
}

grpc::Status RemoteService::RegisterModel(grpc::ServerContext*, grpc::ServerReader<sdx::v1::ModelChunk>* reader,
                                          sdx::v1::RegisterModelResponse* response) {
  grpc::Status st = guarded("RegisterModel", [&] { return register_model(reader, response); });
  if (st.ok())
    (response->already_held() ? metrics_->registrations_held : metrics_->registrations_new)->add(1);
  else
    metrics_->registrations_failed->add(1);
  return count("RegisterModel", st);
}

grpc::Status RemoteService::register_model(grpc::ServerReader<sdx::v1::ModelChunk>* reader,
                                           sdx::v1::RegisterModelResponse* response) {
  std::string bytes, claimed;
  sdx::v1::ModelChunk chunk;
  bool first = true;
  while (reader->Read(&chunk)) {
    if (first) {
      claimed = chunk.fingerprint();
      first = false;
      // A fingerprint the server holds: done, without reading the rest of the stream.
      if (!claimed.empty() && models_.has(claimed)) {
        response->set_fingerprint(claimed);
        response->set_already_held(true);
        response->set_model_bytes(chunk.data().size());
        return grpc::Status::OK;
      }
    }
    if (static_cast<int64_t>(bytes.size() + chunk.data().size()) > options_.max_model_bytes)
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "model upload larger than the server's limit of " +
                                                                    std::to_string(options_.max_model_bytes) +
                                                                    " bytes (--max-model-bytes)");
    bytes += chunk.data();
  }
  if (bytes.empty())
    return invalid(claimed.empty() ? "RegisterModel: no model bytes in the stream"
                                   : "RegisterModel: fingerprint " + claimed + " is not held and no bytes came");
  const std::string fp = ModelStore::fingerprint(bytes);
  if (!claimed.empty() && claimed != fp)
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "RegisterModel: the bytes received hash to " + fp +
                                                         ", not the fingerprint the client gave (" + claimed + ")");
  Result<ModelStore::Added> added = models_.add(fp, bytes);
  if (!added.is_ok()) return to_grpc(added.status());
  response->set_fingerprint(fp);
  response->set_already_held(added.value().already_held);
  response->set_model_bytes(bytes.size());
  return grpc::Status::OK;
}

grpc::Status RemoteService::HasModel(grpc::ServerContext*, const sdx::v1::HasModelRequest* request,
                                     sdx::v1::HasModelResponse* response) {
  response->set_has_model(models_.has(request->fingerprint()));
  return count("HasModel", grpc::Status::OK);
}

grpc::Status RemoteService::OpenSession(grpc::ServerContext* context, const sdx::v1::OpenSessionRequest* request,
                                        sdx::v1::OpenSessionResponse* response) {
  return count("OpenSession", guarded("OpenSession", [&] {
                 // The client's id, from the field or the affinity key (the same rule as session_of).
                 std::string proposed = request->session_id(), from_metadata;
                 const auto& md = context->client_metadata();
                 if (auto it = md.find("sdx-session"); it != md.end())
                   from_metadata.assign(it->second.data(), it->second.size());
                 if (!proposed.empty() && !from_metadata.empty() && proposed != from_metadata)
                   return invalid("OpenSession: session_id and the metadata key sdx-session disagree; send the "
                                  "same id in both, or one of them");
                 if (proposed.empty()) proposed = from_metadata;
                 const int64_t asked =
                     request->lease_ms() > INT64_MAX ? INT64_MAX : static_cast<int64_t>(request->lease_ms());
                 SessionManager::Lease lease;
                 if (grpc::Status st = sessions_.open(asked, proposed, &lease); !st.ok())
                   return grpc::Status(st.error_code(), "OpenSession: " + st.error_message());
                 // The session exists for refs before any call can name it.
                 refs_.add_session(lease.id);
                 response->set_session_id(lease.id);
                 response->set_lease_ms(lease.lease_ms);
                 return grpc::Status::OK;
               }));
}

grpc::Status RemoteService::Heartbeat(grpc::ServerContext* context, const sdx::v1::HeartbeatRequest* request,
                                      sdx::v1::HeartbeatResponse* response) {
  return count("Heartbeat", guarded("Heartbeat", [&] {
                 std::string id;
                 if (grpc::Status st = session_of(context, request->session_id(), &id); !st.ok()) return st;
                 Result<int64_t> lease = sessions_.touch(id);
                 if (!lease.is_ok()) return to_grpc(lease.status());
                 response->set_lease_ms(lease.value());
                 return grpc::Status::OK;
               }));
}

grpc::Status RemoteService::CloseSession(grpc::ServerContext* context, const sdx::v1::CloseSessionRequest* request,
                                         sdx::v1::CloseSessionResponse* response) {
  return count("CloseSession", guarded("CloseSession", [&] {
                 std::string id;
                 if (grpc::Status st = session_of(context, request->session_id(), &id); !st.ok()) return st;
                 const int64_t before = refs_.live_refs();
                 if (Status st = sessions_.close(id); !st.is_ok()) return to_grpc(st);  // frees the refs (on_end)
                 // Other sessions may make or free refs meanwhile: the figure is a report, not an invariant.
                 response->set_refs_freed(static_cast<uint64_t>(std::max<int64_t>(0, before - refs_.live_refs())));
                 return grpc::Status::OK;
               }));
}

grpc::Status RemoteService::model_of(const std::string& fingerprint, const std::string& name,
                                     const std::string& version, Model* out) {
  if (!fingerprint.empty() && !name.empty())
    return invalid("model " + fingerprint + " and model '" + name + "' both named: give a fingerprint (an uploaded "
                   "model) or a model_name (the server's repository), not both");
  if (!name.empty()) {
    if (!repository_)
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "model '" + name + "': this server has no model repository");
    Result<ModelRepository::Entry> found = repository_->find(name, version);
    if (!found.is_ok()) return to_grpc(found.status());
    *out = Model{found.value().session, found.value().name,
                 "model '" + found.value().name + "' version " + found.value().version, found.value().version,
                 static_cast<int>(found.value().instance_count)};
    return grpc::Status::OK;
  }
  if (fingerprint.empty()) return invalid("no model: give a fingerprint (RegisterModel) or a model_name");
  Result<std::shared_ptr<const Session>> model = models_.lookup(fingerprint);  // reloads it when evicted
  if (!model.is_ok()) return to_grpc(model.status());
  *out = Model{std::move(model).value(), fingerprint, "model " + fingerprint, ""};
  return grpc::Status::OK;
}

grpc::Status RemoteService::ModelMetadata(grpc::ServerContext*, const sdx::v1::ModelMetadataRequest* request,
                                          sdx::v1::ModelMetadataResponse* response) {
  return count("ModelMetadata", guarded("ModelMetadata", [&] {
                 Model model;
                 if (grpc::Status st = model_of(request->fingerprint(), request->model_name(),
                                                request->model_version(), &model);
                     !st.ok())
                   return st;
                 response->set_name(model.key);
                 response->set_version(model.version);
                 for (const ValueInfo& in : model.session->inputs()) describe(in, response->add_inputs());
                 for (const ValueInfo& out : model.session->outputs()) describe(out, response->add_outputs());
                 return grpc::Status::OK;
               }));
}

grpc::Status RemoteService::Run(grpc::ServerContext* context, const sdx::v1::RunRequest* request,
                                sdx::v1::RunResponse* response) {
  // Counted twice, as the other sdx.v1 calls (sdx_remote_requests_total{rpc="Run"}) and, once it named a
  // model, as ModelInfer counts its requests (sdx_requests_total{model=...}, durations, overhead).
  const Clock::time_point start = Clock::now();
  ModelMetrics* metrics = nullptr;
  double queue_wait = 0, run_seconds = -1;
  grpc::Status st = guarded("Run", [&] { return run(context, *request, response, &metrics, &queue_wait, &run_seconds); });
  if (metrics) {
    const double total = seconds_since(start);
    metrics->requests(st.error_code())->add(1);
    metrics->duration->observe(total);
    if (run_seconds >= 0) metrics->overhead->observe(total - queue_wait - run_seconds);
  }
  return count("Run", st);
}

grpc::Status RemoteService::run(grpc::ServerContext* context, const sdx::v1::RunRequest& request,
                                sdx::v1::RunResponse* response, ModelMetrics** metrics, double* queue_wait,
                                double* run_seconds) {
  std::string session;
  if (grpc::Status st = session_of(context, request.session_id(), &session); !st.ok()) return st;
  Model found;
  if (grpc::Status st = model_of(request.fingerprint(), request.model_name(), request.model_version(), &found);
      !st.ok())
    return st;
  const std::shared_ptr<const Session>& model = found.session;
  const std::string& context_text = found.what;
  *metrics = serve_metrics_->model(found.key);

  Session::Feeds feeds;
  std::vector<RefStore::Held> held;  // the refs' values, alive until the run is over
  int64_t received = 0;
  if (grpc::Status st = feeds_of(session, *model, request, context_text, &feeds, &held, &received); !st.ok()) return st;
  std::vector<std::string> names;
  std::vector<bool> keep;
  if (grpc::Status st = outputs_of(*model, request, context_text, &names, &keep); !st.ok()) return st;
  metrics_->bytes_received->add(received);

  // Checked, now admitted (or refused at once), then a run slot before the deadline, or not run at all.
  AdmissionGate* gate = gates_.get(found.key, found.concurrency);
  AdmissionGate::Ticket ticket = gate->enter();
  if (!ticket.admitted()) return refuse_queue_full(context, *gate, *metrics, context_text);
  if (grpc::Status st = wait_to_run(context, &ticket, *metrics, context_text, queue_wait); !st.ok()) return st;
  std::optional<Result<std::vector<Value>>> ran;
  {
    GaugeHold running((*metrics)->inflight);
    const Clock::time_point run_start = Clock::now();
    ran.emplace(model->run(feeds, names));
    *run_seconds = seconds_since(run_start);
  }
  Result<std::vector<Value>>& outputs = *ran;
  if (!outputs.is_ok()) return to_grpc(outputs.status().with_context(context_text));

  // Every output checked before any is kept, so that a refused run leaves no ref behind.
  for (size_t i = 0; i < names.size(); ++i) {
    const Value& value = outputs.value()[i];
    if (!value.is_tensor() || !datatype_name(value.element_type()))
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          context_text + ": output '" + names[i] + "' is not a tensor of a KServe datatype");
  }
  std::vector<std::string> sent_names;
  std::vector<Value> sent;
  for (size_t i = 0; i < names.size(); ++i) {
    Value& value = outputs.value()[i];
    if (!keep[i]) {
      sent_names.push_back(names[i]);
      sent.push_back(std::move(value));
      continue;
    }
    auto* skeleton = response->add_kept();
    skeleton->set_name(names[i]);
    skeleton->set_datatype(datatype_name(value.element_type()));
    for (int64_t d : value.shape()) skeleton->add_shape(d);
    skeleton->set_byte_size(static_cast<uint64_t>(value_bytes(value)));
    Result<uint64_t> id = refs_.put(session, std::move(value));
    if (!id.is_ok()) return to_grpc(id.status());  // the session ended meanwhile; what was kept went with it
    skeleton->set_ref_id(id.value());
  }
  int64_t bytes_out = 0;
  for (size_t i = 0; i < sent.size(); ++i) {
    sdx::v1::Tensor* out = response->add_outputs();
    if (Status st = encode_tensor(sent_names[i], sent[i], out); !st.is_ok())
      return to_grpc(st.with_context(context_text));
    bytes_out += static_cast<int64_t>(out->raw_contents().size());
  }
  metrics_->bytes_sent->add(bytes_out);
  return grpc::Status::OK;
}

grpc::Status RemoteService::feeds_of(const std::string& session, const Session& model,
                                     const sdx::v1::RunRequest& request, const std::string& context_text,
                                     Session::Feeds* feeds, std::vector<RefStore::Held>* held, int64_t* received) {
  // Inputs: tensors sent now, then refs held here; each name once, every model input given.
  std::map<std::string, const ValueInfo*> declared;
  for (const ValueInfo& in : model.inputs()) declared[in.name] = &in;
  std::set<std::string> seen;
  auto known = [&](const std::string& name) -> grpc::Status {
    auto it = declared.find(name);
    if (it == declared.end()) return invalid(context_text + ": input '" + name + "': the model has no such input");
    if (!seen.insert(name).second) return invalid(context_text + ": input '" + name + "': given twice");
    if (!it->second->is_tensor) return invalid(context_text + ": input '" + name + "' is not a tensor");
    return grpc::Status::OK;
  };
  for (const sdx::v1::Tensor& tensor : request.inputs()) {
    if (grpc::Status st = known(tensor.name()); !st.ok()) return st;
    Value value;
    Status st = decode_tensor(tensor, declared[tensor.name()]->element_type, &value);
    if (!st.is_ok()) return to_grpc(st.with_context(context_text));
    *received += static_cast<int64_t>(tensor.raw_contents().size());
    feeds->emplace_back(tensor.name(), std::move(value));
  }
  for (const auto& ref : request.ref_inputs()) {
    if (grpc::Status st = known(ref.name()); !st.ok()) return st;
    RefStore::Held value;
    if (grpc::Status st = refs_.get(session, ref.ref_id(), &value); !st.ok())
      return grpc::Status(st.error_code(), context_text + ": input '" + ref.name() + "': " + st.error_message());
    const ElementType want = declared[ref.name()]->element_type;
    if (!value->is_tensor() || (want != ElementType::kUndefined && value->element_type() != want))
      return invalid(context_text + ": input '" + ref.name() + "': ref " + std::to_string(ref.ref_id()) + " holds " +
                     (value->is_tensor() ? element_type_name(value->element_type()) : "no tensor") +
                     ", but the model's input is " + element_type_name(want));
    Result<Value> feed = feed_of(*value);
    if (!feed.is_ok()) return to_grpc(feed.status().with_context(context_text));
    feeds->emplace_back(ref.name(), std::move(feed).value());
    held->push_back(std::move(value));
  }
  for (const ValueInfo& in : model.inputs())
    if (!seen.count(in.name)) return invalid(context_text + ": input '" + in.name + "' missing: the model needs it");

  return grpc::Status::OK;
}

grpc::Status RemoteService::Fetch(grpc::ServerContext* context, const sdx::v1::FetchRequest* request,
                                  sdx::v1::FetchResponse* response) {
  return count("Fetch", guarded("Fetch", [&] {
                 std::string session;
                 if (grpc::Status st = session_of(context, request->session_id(), &session); !st.ok()) return st;
                 RefStore::Held value;
                 if (grpc::Status st = refs_.get(session, request->ref_id(), &value); !st.ok()) return st;
                 const std::string name = "ref " + std::to_string(request->ref_id());
                 Value sliced;
                 const Value* out = value.get();
                 if (request->has_begin() || request->has_end()) {
                   if (!value->is_tensor() || value->shape().empty())
                     return invalid(name + ": a slice needs a tensor of rank 1 or more");
                   const int64_t rows = value->shape()[0];
                   const int64_t begin = request->has_begin() ? request->begin() : 0;
                   const int64_t end = request->has_end() ? request->end() : rows;
                   if (begin < 0 || begin > end || end > rows)
                     return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                                         name + ": slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                                             ") of a first dimension of " + std::to_string(rows));
                   Result<Value> s = slice_rows(*value, begin, end);
                   if (!s.is_ok()) return to_grpc(s.status().with_context(name));
                   sliced = std::move(s).value();
                   out = &sliced;
                 }
                 if (Status st = encode_tensor(name, *out, response->mutable_tensor()); !st.is_ok()) return to_grpc(st);
                 metrics_->bytes_sent->add(static_cast<int64_t>(response->tensor().raw_contents().size()));
                 return grpc::Status::OK;
               }));
}

grpc::Status RemoteService::Release(grpc::ServerContext* context, const sdx::v1::ReleaseRequest* request,
                                    sdx::v1::ReleaseResponse* response) {
  return count("Release", guarded("Release", [&] {
                 std::string session;
                 if (grpc::Status st = session_of(context, request->session_id(), &session); !st.ok()) return st;
                 size_t released = 0;
                 const std::vector<uint64_t> ids(request->ref_ids().begin(), request->ref_ids().end());
                 if (grpc::Status st = refs_.release(session, ids, &released); !st.ok()) return st;
                 response->set_released(released);
                 return grpc::Status::OK;
               }));
}

}  // namespace sdx::serve
