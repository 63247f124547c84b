// The model repository sdx-serve serves: a folder of NAME/VERSION/model.onnx (or model.sdx, a bundle from
// `sdx compile`), KServe's layout.
//
//   models/
//     add/1/model.onnx
//     add/2/model.onnx       versions are decimal numbers; a request without one gets the highest
//     mlp/1/model.onnx
//     mlp/config.json        optional: max batch size, dynamic batching, instance count (model_config.h)
//     fast/1/model.sdx       a bundle: optimized and planned ahead, so a load skips the optimizer
//
//   serve::ModelRepository repo("models", sdx::SessionOptions{});
//   repo.load_all();                                        // what failed is in index() (state, reason)
//   sdx::Result<serve::ModelRepository::Entry> m = repo.find("add", "");   // NotFound: unknown or unloaded
//   m.value().session->run(feeds);
//
// Loading a model loads every version folder it has, each into one sdx::Session; a load replaces the
// model's loaded versions all at once, and a failed load leaves nothing of the model loaded (the reason is
// kept for the index). A config.json that is not valid, or that asks to batch a model without a leading
// batch dimension, fails the load with its reason. A model with dynamic batching gets one Batcher per
// loaded version (batcher.h), shared like its session. Sessions are shared: a request holds its session
// while it runs, so an unload or a reload never pulls a model from under a running request. Thread-safe.
//
// Memory budget. The loaded models live in a ModelCache (model_cache.h; an unlimited one of its own when
// none is given), one entry per model (all its versions; key "repository/NAME"). When the cache evicts a
// model to make room, the model stays loaded as far as the repository API is concerned (READY, with the
// reason "evicted ..."): the next find() reloads it from its folder, outside the lock, as load() would,
// and a reload that fails (the files changed or went) leaves the model failed with the reason, as a failed
// load() does; a load() that does not fit the budget (RESOURCE_EXHAUSTED) leaves a model that was loaded
// as it was. A model unloaded through the API is not reloaded on demand. An Entry holds its model in
// the cache's sense (its pointers share ownership of the whole model), so a model with a request running
// on it is never evicted.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sdx/session.h"
#include "sdx/session_options.h"
#include "sdx/status.h"
#include "serve/batcher.h"
#include "serve/model_cache.h"
#include "serve/model_config.h"

namespace sdx::serve {

class ModelRepository {
 public:
  // One loaded version of a model.
  struct Entry {
    std::string name;
    std::string version;                     // the version folder's name
    std::vector<std::string> versions;       // every loaded version of the model, ascending
    std::shared_ptr<const Session> session;  // shared with the requests running on it
    std::shared_ptr<Batcher> batcher;         // null: the model has no dynamic batching
    int64_t instance_count = 0;              // config.json's instance_group count; 0: --model-concurrency
  };
  // One row of the repository index: a loaded version (READY), or a model not loaded (UNAVAILABLE,
  // version empty, reason "unloaded" or why its load failed).
  struct IndexRow {
    std::string name, version, state, reason;
  };

  // `cache`: the budget the models share (with sdx.v1 uploads); null: an unlimited cache of its own. It
  // must outlive the repository.
  ModelRepository(std::string root, SessionOptions options, ModelCache* cache = nullptr);

  const std::string& root() const { return root_; }

  // The model folders of the root (names that are not valid model names are skipped), sorted.
  std::vector<std::string> model_names() const;

  // Loads (or reloads) one model; NotFound when the root has no such model folder or it has no version.
  Status load(const std::string& name);
  // Loads every model of the root; the first failure is returned after all were tried.
  Status load_all();
  // NotFound when the model is not loaded.
  Status unload(const std::string& name);

  // A loaded version; `version` empty: the highest. NotFound when the model or version is not loaded.
  // A model the cache evicted is reloaded here; ResourceExhausted when it does not fit the budget now.
  Result<Entry> find(const std::string& name, const std::string& version);
  // Whether find() would find this version, without reloading an evicted model.
  bool ready(const std::string& name, const std::string& version) const;

  std::vector<IndexRow> index(bool ready_only) const;

  // A model name is one folder name: no '/', not "." or "..", not hidden, not empty.
  static bool valid_model_name(const std::string& name);

 private:
  struct Version {
    std::shared_ptr<const Session> session;
    std::shared_ptr<Batcher> batcher;
  };
  struct Model {
    std::map<int64_t, Version> versions;  // by version number
    int64_t instance_count = 0;           // config.json's instance_group count
  };
  // A model loaded through the API (by load or load_all), in the cache or evicted from it.
  struct Loaded {
    std::vector<int64_t> versions;  // ascending
    uint64_t generation = 0;        // changes with each load and unload: a reload that raced one is dropped
  };
  struct Built {
    std::shared_ptr<const Model> model;
    int64_t bytes = 0;
    double seconds = 0;
  };

  static std::string key(const std::string& name) { return "repository/" + name; }
  // Reads a model's folder and loads its versions (no lock held).
  Result<Built> build(const std::string& name) const;
  Result<Entry> entry_of(const std::string& name, const std::shared_ptr<const Model>& model,
                         const std::string& version) const;

  std::string root_;
  SessionOptions options_;
  std::unique_ptr<ModelCache> own_cache_;  // when none was given
  ModelCache* cache_;
  mutable std::mutex mutex_;  // guards loaded_, failed_ and generation_; taken before cache_'s
  std::map<std::string, Loaded> loaded_;
  std::map<std::string, std::string> failed_;  // model name -> why its last load failed
  uint64_t generation_ = 0;
};

}  // namespace sdx::serve
