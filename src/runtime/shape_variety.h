// ShapeVariety: what a session says once its callers have brought many input-shape signatures (issue 21's
// fallback: where padding cannot be proven exact, the run keeps exact shapes and says why). Each new
// signature warms up, freezes and captures a plan of its own; after kManySignatures of them, one diagnostic
// (kFallback, SHAPES_VARY) names the input dims that differed between them with the sizes seen, and says
// what sdx pads by itself (a with-past decoder's past length: the Python InferenceSession's KV streams, where
// padding is proven exact by the model's attention mask, checked once) and what the caller can ask for
// (SessionOptions.shape_buckets, for dims the caller knows padding keeps exact: masked keys, batch rows).
//
// Only new signatures reach it (the executor's slow path), never a replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/tensor_arg.h"
#include "runtime/value_info.h"

namespace sdx::runtime {

class ShapeVariety {
 public:
  static constexpr int kManySignatures = 8;

  struct Varied {
    std::string text;               // the diagnostic's text ("" but at the kManySignatures-th signature)
    bool act = false;               // time to pad (runtime/session_buckets.cc): see add()
    std::vector<std::string> dims;  // the declared names of the dims that differ (unnamed ones left out)
    std::map<std::string, std::vector<int64_t>> sizes;  // per name: the sizes seen
  };
  // Notes a new signature's inputs (one TensorArg per input); returns the diagnostic when this is the
  // kManySignatures-th signature with dims that differ (once per session), `act` (once) at the first signature
  // from the kManySignatures-th on that comes with `pressure` (the plan cache evicted or passivated plans:
  // the sizes outnumber the plans it keeps), else an empty Varied.
  Varied add(const std::vector<ValueInfo>& inputs, const TensorArg* args, bool pressure = false);

 private:
  std::mutex mu_;  // guards the members: new signatures come from any calling thread
  int signatures_ = 0;
  bool said_ = false, acted_ = false;
  std::map<std::pair<size_t, int>, std::set<int64_t>> sizes_;  // (input, axis) -> sizes seen
};

}  // namespace sdx::runtime
