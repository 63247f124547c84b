#include "api/load.h"

#include <cstdio>
#include <fstream>
#include <string_view>

#include "api/bundle.h"
#include "api/plan_disk_cache.h"
#include "obs/diagnostics.h"
#include "core/mapped_file.h"
#include "frontend/bundle/bundle_format.h"
#include "frontend/onnx/onnx_loader.h"
#include "frontend/onnx/onnx_writer.h"

namespace sdx::api {

namespace {

// Whether `path` starts with the bundle magic (false when it cannot be read: the ONNX loader says why).
bool is_bundle_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  return f && f.read(magic, 8) && bundle::looks_like_bundle(std::string(magic, 8));
}

template <typename F>
void diag(const char* event, F&& detail) {
  obs::Diagnostics::global().record_lazy(obs::DiagCategory::kCache, obs::DiagLevel::kSummary, event,
                                         std::forward<F>(detail));
}

// An ONNX model's bytes (external data read from base_dir; "" forbids it) through the disk plan cache
// (plan_disk_cache.h): its entry when there is a sound one, else the model, compiled as usual. Either way
// the session persists the plans it captures (unless the model reads files beside it).
Result<std::unique_ptr<runtime::Session>> load_onnx(std::string_view bytes, const std::string& base_dir,
                                                    const std::string& path, runtime::SessionOptions options,
                                                    const LoadEdits* edits = nullptr) {
  if (edits && !edits->empty()) {  // no disk cache: its key does not cover the edits
    SDX_ASSIGN_OR_RETURN(ir::Model model,
                         onnx::load_model_bytes(bytes, onnx::ExternalData{base_dir, {}, nullptr, &edits->files}, &edits->model),
                         "");
    model.path = path;
    return runtime::Session::create(std::move(model), std::move(options));
  }
  // The options as the session will see them (SDX_* variables applied), which the key must reflect.
  SDX_ASSIGN_OR_RETURN(runtime::SessionOptions effective, runtime::SessionOptions::from_env(options), "session options");
  std::shared_ptr<PlanDiskCache> cache = PlanDiskCache::open(effective);
  std::string key;
  if (cache) {
    key = PlanDiskCache::key(bytes, effective);
    if (Result<std::shared_ptr<MappedFile>> entry = cache->find(key); entry.is_ok()) {
      const std::string_view entry_bytes = entry.value()->bytes();
      auto s = load_bundle(entry_bytes, entry.value(), options);
      if (s.is_ok()) {
        diag("PLAN_CACHE_HIT", [&] { return cache->path(key) + " for " + (path.empty() ? "model bytes" : path); });
        attach_plan_cache_writer(**s, cache, key, /*hit=*/true);
        return s;
      }
      std::fprintf(stderr, "sdx: warning: disk plan cache entry %s refused and deleted (%s); loading the model\n",
                   cache->path(key).c_str(), s.status().message().c_str());
      diag("PLAN_CACHE_REFUSED", [&] { return cache->path(key) + ": " + s.status().message(); });
      cache->remove(key);
    } else {
      diag("PLAN_CACHE_MISS", [&] { return cache->path(key) + " for " + (path.empty() ? "model bytes" : path); });
    }
  }
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(bytes, onnx::ExternalData{base_dir, {}, nullptr}), "");
  model.path = path;
  const bool keep = cache && !model.reads_external_files;
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s, runtime::Session::create(std::move(model), std::move(options)),
                       "");
  if (keep) attach_plan_cache_writer(*s, cache, key, /*hit=*/false);
  return s;
}

}  // namespace

Result<std::unique_ptr<runtime::Session>> load_session_file(const std::string& path, runtime::SessionOptions options,
                                                            const LoadEdits* edits) {
  if (is_bundle_file(path)) {
    if (edits && !edits->empty())
      return invalid_argument("bundle '" + path + "': free dimension overrides, initializers and in-memory files apply "
                              "to ONNX models, and a bundle's graph is already compiled");
    SDX_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path), "");
    const std::string_view bytes = file->bytes();
    auto s = load_bundle(bytes, std::move(file), std::move(options));
    if (!s.is_ok()) return s.status().with_context("bundle '" + path + "'");
    return s;
  }
  Result<runtime::SessionOptions> effective = runtime::SessionOptions::from_env(options);
  const bool edited = edits && !edits->empty();
  Result<std::shared_ptr<MappedFile>> file =
      effective.is_ok() && (effective->disk_plan_cache || edited) ? MappedFile::open(path) : not_found("");
  if (!file.is_ok() && edited) return file.status().with_context("model '" + path + "'");
  if (!file.is_ok()) {  // no cache, or a file that cannot be mapped: the loader reads it (and says why not)
    SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_file(path), "");
    auto s = runtime::Session::create(std::move(model), std::move(options));
    if (!s.is_ok()) return s.status().with_context("model '" + path + "'");
    return s;
  }
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.find_last_of('/'));
  if (dir.empty()) dir = "/";
  auto s = load_onnx(file.value()->bytes(), dir, path, std::move(options), edits);
  if (!s.is_ok()) return s.status().with_context("model '" + path + "'");
  return s;
}

Result<std::unique_ptr<runtime::Session>> load_session_bytes(const std::string& bytes, runtime::SessionOptions options,
                                                             const LoadEdits* edits) {
  if (bundle::looks_like_bundle(bytes)) {
    if (edits && !edits->empty())
      return invalid_argument("free dimension overrides, initializers and in-memory files apply to ONNX models, not "
                              "to an sdx bundle");
    return load_bundle(bytes, std::move(options));
  }
  return load_onnx(bytes, "", "", std::move(options), edits);
}

Result<ir::Model> load_model_file(const std::string& path) {
  if (!is_bundle_file(path)) return onnx::load_model_file(path);
  SDX_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path), "");
  SDX_ASSIGN_OR_RETURN(bundle::Bundle b, bundle::read_bundle(file->bytes()), "bundle '" + path + "'");
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(b.graph, onnx::ExternalData{"", b.weights, file}),
                       "bundle '" + path + "'");
  SDX_RETURN_IF_ERROR(onnx::apply_node_opsets(model, b.node_opsets), "bundle '" + path + "'");
  return model;
}

}  // namespace sdx::api
