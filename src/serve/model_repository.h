// The model repository sdx-serve serves: a folder of NAME/VERSION/model.onnx, KServe's layout.
//
//   models/
//     add/1/model.onnx
//     add/2/model.onnx       versions are decimal numbers; a request without one gets the highest
//     mlp/1/model.onnx
//     mlp/config.json        optional: max batch size and dynamic batching (model_config.h)
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
  };
  // One row of the repository index: a loaded version (READY), or a model not loaded (UNAVAILABLE,
  // version empty, reason "unloaded" or why its load failed).
  struct IndexRow {
    std::string name, version, state, reason;
  };

  ModelRepository(std::string root, SessionOptions options);

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
  Result<Entry> find(const std::string& name, const std::string& version) const;

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
  };

  std::string root_;
  SessionOptions options_;
  mutable std::mutex mutex_;  // guards loaded_ and failed_
  std::map<std::string, std::shared_ptr<const Model>> loaded_;
  std::map<std::string, std::string> failed_;  // model name -> why its last load failed
};

}  // namespace sdx::serve
