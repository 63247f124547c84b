// A model's optional repository config, NAME/config.json beside its version folders (Triton's config.pbtxt,
// as JSON, with only the fields sdx-serve uses):
//
//   {"max_batch_size": 16,
//    "dynamic_batching": {"preferred_batch_size": [8, 16], "max_queue_delay_microseconds": 500,
//                         "pad_to_preferred_batch_size": true},
//    "instance_group": [{"count": 2, "kind": "KIND_CPU"}]}
//
//   Result<serve::ModelConfig> c = serve::parse_model_config(text, "models/mlp/config.json");
//   Status st = serve::check_batchable(session, c.value(), "models/mlp/config.json");
//
// max_batch_size (0..1<<20, default 0): the most rows a batched run may have; above 0 it says the model has
// a leading batch dimension on every input and output (check_batchable refuses a model that has not).
// dynamic_batching (needs max_batch_size > 0): batch concurrent requests (batcher.h). preferred_batch_size:
// sizes in 1..max_batch_size; a batch is run early once it reaches the largest. max_queue_delay_microseconds
// (0..10 s, default 0): how long the oldest request waits for others. pad_to_preferred_batch_size (boolean,
// default false): run each batch padded up to the smallest preferred size that holds it (max_batch_size
// when none does), so the session sees a few batch sizes and replays a frozen plan for each (batcher.h;
// right only for models whose rows are independent, as batching itself). Without the file, or without
// dynamic_batching, requests run one by one. instance_group (one group; count 1..1024, kind KIND_CPU or
// KIND_AUTO): how many requests of this model run at once, in place of --model-concurrency (sdx sessions are
// thread-safe, so the instances share one loaded session and its weights; each run has its own context).
// Unknown fields and wrong types are errors naming the file and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sdx/session.h"
#include "sdx/status.h"

namespace sdx::serve {

struct ModelConfig {
  int64_t max_batch_size = 0;
  bool dynamic_batching = false;
  std::vector<int64_t> preferred_batch_sizes;  // ascending, no repeats
  int64_t max_queue_delay_us = 0;
  bool pad_to_preferred = false;
  int64_t instance_count = 0;  // instance_group[0].count; 0: the server's --model-concurrency
};

// Parses config.json text; `file` names it in errors (InvalidArgument).
Result<ModelConfig> parse_model_config(const std::string& text, const std::string& file);

// With max_batch_size > 0: every input and output of the session is a tensor whose leading dimension is
// not fixed (the batch). InvalidArgument naming the file, the field and the tensor otherwise.
Status check_batchable(const Session& session, const ModelConfig& config, const std::string& file);

}  // namespace sdx::serve
