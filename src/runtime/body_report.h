// What a session knows about each subgraph body it holds (If branches, Loop and Scan bodies): whether
// the body runs as a plan of its own (runtime/body_session.h) or is interpreted node by node, why, and,
// for a plan, how its calls went: calls, replays, new plans (a new input shape each), the last call's
// captured and gap steps and why it did not replay, and what the optimizer rewrote in it. Bodies nested in
// a body's graph are its `nested`.
//
//   for (const BodyReport& b : session.body_reports())
//     printf("%s of %s: %s, %llu of %llu calls replayed\n", b.body.c_str(), b.owner.c_str(),
//            b.plan ? "plan" : "interpreted", b.replays, b.calls);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sdx::runtime {

struct BodyReport {
  std::string body;        // the subgraph's name
  std::string attribute;   // the owner's attribute holding it: then_branch, else_branch, body
  std::string owner;       // the owner node's name
  std::string owner_op;    // If, Loop, Scan, ...
  bool plan = false;       // runs as a plan of its own now (false: interpreted)
  std::string why;         // why it is interpreted (at load, or after its input shapes churned); empty for a plan
  uint64_t calls = 0;      // calls through its plan (per If call, per Loop/Scan iteration)
  uint64_t replays = 0;    // of those, calls that replayed the captured plan
  uint64_t new_plans = 0;  // calls that met a new input signature (warmup, freeze, capture)
  int32_t captured_steps = 0, gap_steps = 0;  // the last call's
  std::string last_fallback;  // why the last call did not replay; empty when it replayed
  // What the optimizer did to the body's own graph (pass -> rewrites, those that rewrote something; a
  // plan's body is optimized as a model of its own, so the top-level report does not show these).
  std::vector<std::pair<std::string, int>> rewrites;
  std::vector<BodyReport> nested;
};

}  // namespace sdx::runtime
