#include "serve/model_repository.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace sdx::serve {
namespace fs = std::filesystem;
namespace {

// A version folder's number: decimal digits only, no sign, at most 18 of them.
bool parse_version(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *out = std::stoll(s);
  return true;
}

// The version folders of a model that hold a model.sdx (a bundle: sdx compile's output) or a model.onnx, by
// number; a folder with both serves the bundle, the compiled form of the model.
std::map<int64_t, fs::path> version_files(const fs::path& model_dir) {
  std::map<int64_t, fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(model_dir, ec)) {
    int64_t v;
    if (!e.is_directory(ec) || !parse_version(e.path().filename().string(), &v)) continue;
    for (const char* name : {"model.sdx", "model.onnx"}) {
      fs::path file = e.path() / name;
      if (fs::is_regular_file(file, ec)) {
        out[v] = file;
        break;
      }
    }
  }
  return out;
}

}  // namespace

ModelRepository::ModelRepository(std::string root, SessionOptions options, ModelCache* cache)
    : root_(std::move(root)),
      options_(std::move(options)),
      own_cache_(cache ? nullptr : std::make_unique<ModelCache>()),
      cache_(cache ? cache : own_cache_.get()) {}

bool ModelRepository::valid_model_name(const std::string& name) {
  return !name.empty() && name[0] != '.' && name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

std::vector<std::string> ModelRepository::model_names() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root_, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec) && valid_model_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelRepository::Built> ModelRepository::build(const std::string& name) const {
  const auto started = std::chrono::steady_clock::now();
  std::error_code ec;
  const fs::path dir = fs::path(root_) / name;
  if (!valid_model_name(name) || !fs::is_directory(dir, ec))
    return Status(StatusCode::kNotFound, "model '" + name + "': no such model in the repository " + root_);
  const std::map<int64_t, fs::path> files = version_files(dir);
  Status failure;
  if (files.empty())
    failure = Status(StatusCode::kNotFound, "model '" + name + "': no version folder with a model.onnx or model.sdx in " +
                                                dir.string() + " (expected " + name + "/1/model.onnx)");
  ModelConfig config;
  const fs::path config_file = dir / "config.json";
  if (failure.is_ok() && fs::exists(config_file, ec)) {
    std::ifstream in(config_file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    Result<ModelConfig> parsed = in ? parse_model_config(text.str(), config_file.string())
                                    : Result<ModelConfig>(Status(StatusCode::kIoError, config_file.string() +
                                                                                           ": cannot be read"));
    if (parsed.is_ok()) config = parsed.value();
    else failure = parsed.status().with_context("model '" + name + "'");
  }
  auto model = std::make_shared<Model>();
  for (const auto& [version, file] : files) {
    if (!failure.is_ok()) break;
    const std::string context = "model '" + name + "' version " + std::to_string(version);
    Result<Session> session = Session::load(file.string(), options_);
    if (!session.is_ok()) {
      failure = session.status().with_context(context);
      break;
    }
    auto shared = std::make_shared<const Session>(std::move(session).value());
    if (Status st = check_batchable(*shared, config, config_file.string()); !st.is_ok()) {
      failure = st.with_context(context);
      break;
    }
    Version& v = model->versions[version];
    v.session = shared;
    if (config.dynamic_batching)
      v.batcher = std::make_shared<Batcher>(
          [shared](const Session::Feeds& feeds, const std::vector<std::string>& names) {
            return shared->run(feeds, names);
          },
          Batcher::Options{config.max_batch_size, config.preferred_batch_sizes,
                           std::chrono::microseconds(config.max_queue_delay_us), config.pad_to_preferred});
  }
  if (!failure.is_ok()) return failure;
  model->instance_count = config.instance_count;
  Built built;
  for (const auto& [v, loaded] : model->versions) built.bytes += loaded.session->weight_bytes();
  built.model = std::move(model);
  built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return built;
}

Status ModelRepository::load(const std::string& name) {
  std::error_code ec;
  if (!valid_model_name(name) || !fs::is_directory(fs::path(root_) / name, ec))  // nothing of the state changes
    return Status(StatusCode::kNotFound, "model '" + name + "': no such model in the repository " + root_);
  Result<Built> built = build(name);
  std::vector<ModelCache::Handle> released;  // destroyed after the unlock (declared before the lock)
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t generation = ++generation_;
  Status failure = built.status();
  if (failure.is_ok()) {
    std::vector<int64_t> versions;
    for (const auto& [v, loaded] : built.value().model->versions) versions.push_back(v);
    Result<ModelCache::Handle> admitted =
        cache_->admit(key(name), "model '" + name + "'", name,
                      {built.value().model, built.value().bytes, built.value().seconds}, ModelCache::Admit::kReplace,
                      &released);
    if (admitted.is_ok()) {
      loaded_[name] = Loaded{std::move(versions), generation};
      failed_.erase(name);
      return Status::ok();
    }
    failure = admitted.status();
    // A reload that does not fit now leaves the model as it was (loaded, in the cache or evicted).
    if (loaded_.count(name)) return failure;
  }
  loaded_.erase(name);
  released.push_back(cache_->erase(key(name)));
  failed_[name] = failure.message();
  return failure;
}

Status ModelRepository::load_all() {
  Status first;
  for (const std::string& name : model_names()) {
    Status st = load(name);
    if (!st.is_ok() && first.is_ok()) first = st;
  }
  return first;
}

Status ModelRepository::unload(const std::string& name) {
  ModelCache::Handle dropped;  // destroyed after the unlock
  std::lock_guard<std::mutex> lock(mutex_);
  if (!loaded_.erase(name)) return Status(StatusCode::kNotFound, "model '" + name + "' is not loaded");
  ++generation_;
  failed_.erase(name);
  dropped = cache_->erase(key(name));
  return Status::ok();
}

Result<ModelRepository::Entry> ModelRepository::entry_of(const std::string& name,
                                                          const std::shared_ptr<const Model>& model,
                                                          const std::string& version) const {
  Entry entry;
  entry.name = name;
  for (const auto& [v, loaded] : model->versions) entry.versions.push_back(std::to_string(v));
  int64_t v = model->versions.rbegin()->first;
  if (!version.empty() && (!parse_version(version, &v) || !model->versions.count(v)))
    return Status(StatusCode::kNotFound, "model '" + name + "' has no version '" + version + "' loaded");
  entry.version = std::to_string(v);
  // Aliasing pointers: they share ownership of the whole model, so that the cache sees it in use while any
  // copy of the entry lives (model_cache.h), and keep the session and batcher alive through an eviction.
  entry.session = std::shared_ptr<const Session>(model, model->versions.at(v).session.get());
  entry.batcher = std::shared_ptr<Batcher>(model, model->versions.at(v).batcher.get());
  if (!model->versions.at(v).batcher) entry.batcher = nullptr;
  entry.instance_count = model->instance_count;
  return entry;
}

Result<ModelRepository::Entry> ModelRepository::find(const std::string& name, const std::string& version) {
  // A reload that raced a load or unload of the same model is dropped and the lookup made again; three
  // rounds lose only to a client that reloads the model in a loop.
  for (int round = 0; round < 3; ++round) {
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = loaded_.find(name);
      if (it == loaded_.end()) {
        auto failed = failed_.find(name);
        std::string why = failed != failed_.end() ? " (its load failed: " + failed->second + ")" : "";
        return Status(StatusCode::kNotFound, "model '" + name + "' is not loaded" + why);
      }
      if (!version.empty()) {
        int64_t v = 0;
        const std::vector<int64_t>& vs = it->second.versions;
        if (!parse_version(version, &v) || std::find(vs.begin(), vs.end(), v) == vs.end())
          return Status(StatusCode::kNotFound, "model '" + name + "' has no version '" + version + "' loaded");
      }
      if (ModelCache::Handle held = cache_->acquire(key(name)))
        return entry_of(name, std::static_pointer_cast<const Model>(held), version);
      generation = it->second.generation;
    }
    // Evicted: reload it from its folder, outside the lock.
    Result<Built> built = build(name);
    std::vector<ModelCache::Handle> released;  // destroyed after the unlock
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(name);
    if (it == loaded_.end() || it->second.generation != generation) continue;  // loaded or unloaded meanwhile
    if (!built.is_ok()) {
      loaded_.erase(it);
      ++generation_;
      failed_[name] = "reloading it after an eviction: " + built.status().message();
      return Status(built.status().code(), "model '" + name + "' was evicted and could not be reloaded: " +
                                               built.status().message());
    }
    Result<ModelCache::Handle> admitted =
        cache_->admit(key(name), "model '" + name + "'", name,
                      {built.value().model, built.value().bytes, built.value().seconds}, ModelCache::Admit::kOnDemand,
                      &released);
    if (!admitted.is_ok()) return admitted.status();  // still loaded: a later request may fit
    std::vector<int64_t> versions;
    for (const auto& [v, loaded] : built.value().model->versions) versions.push_back(v);
    it->second.versions = std::move(versions);  // the folder may have changed since the first load
    return entry_of(name, std::static_pointer_cast<const Model>(admitted.value()), version);
  }
  return Status(StatusCode::kResourceExhausted,
                "model '" + name + "' was loaded or unloaded again while it was being reloaded; retry");
}

bool ModelRepository::ready(const std::string& name, const std::string& version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loaded_.find(name);
  if (it == loaded_.end()) return false;
  if (version.empty()) return true;
  int64_t v = 0;
  const std::vector<int64_t>& vs = it->second.versions;
  return parse_version(version, &v) && std::find(vs.begin(), vs.end(), v) != vs.end();
}

std::vector<ModelRepository::IndexRow> ModelRepository::index(bool ready_only) const {
  std::vector<IndexRow> rows;
  const std::vector<std::string> names = model_names();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& name : names) {
    auto it = loaded_.find(name);
    if (it != loaded_.end()) {
      const std::string reason =
          cache_->resident(key(name)) ? "" : "evicted under --memory-budget; reloads on its next request";
      for (int64_t v : it->second.versions) rows.push_back({name, std::to_string(v), "READY", reason});
    } else if (!ready_only) {
      auto failed = failed_.find(name);
      rows.push_back({name, "", "UNAVAILABLE", failed != failed_.end() ? failed->second : "unloaded"});
    }
  }
  return rows;
}

}  // namespace sdx::serve
