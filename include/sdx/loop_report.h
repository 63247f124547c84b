// LoopReport: the loop analysis's account of one execution of one Loop node (SessionOptions loop_analysis):
// each loop-carried value's evolution (STABLE, CONVERGING with its limit, OSCILLATING with its period,
// DIVERGING with its rate, CHAOTIC), how the condition reads the carried values, and the termination
// prediction (how many more iterations, or that it will not end and which variable keeps it going).
// Session::loop_reports() returns them; `json` holds every figure, `text` the same for people.
//
//   for (const sdx::LoopReport& r : session.loop_reports())
//     std::cout << r.text;   // "Loop 'loop0': 20 iterations of trip count 20, ...\n  x: CONVERGING to 1.41421 ..."
#pragma once

#include <cstdint>
#include <string>

namespace sdx {

struct LoopReport {
  std::string node;        // the Loop node's name
  int64_t iterations = 0;  // iterations its body ran
  std::string stopped_by;  // "" (it ended), "max_loop_iterations" or "max_loop_seconds"
  std::string verdict;     // "TERMINATES", "WILL_NOT_TERMINATE" or "UNKNOWN"
  std::string text;        // several lines
  std::string json;        // one JSON object: node, iterations, condition, termination, variables[...]
};

}  // namespace sdx
