// PatternPass: a pass made of local rewrite rules. Each rule names the op types
// it can be anchored on (pre-filter: a rule only sees nodes of those types) and a
// function that matches around the anchor and rewrites, returning true when it did.
//
//   class PeepholeOptimizations final : public PatternPass {
//    public:
//     PeepholeOptimizations() {
//       add_rule({"Relu(Relu(x)) -> Relu(x)", {"Relu"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
//         ir::Node* inner = producer_of(n.input(0), "Relu");
//         if (!inner || !forward_output(g, &n, inner->output(0))) return false;
//         return ctx.applied(n, "Relu(Relu(x)) -> Relu(x)");
//       }});
//     }
//     ...
//   };
//
// Anchors are op types of the ONNX default domain, or "domain:Op" for others.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "opt/pass.h"

namespace sdx::opt {

struct RewriteRule {
  std::string name;
  std::vector<std::string> anchors;
  std::function<bool(ir::Graph&, ir::Node&, PassContext&)> apply;
};

class PatternPass : public Pass {
 public:
  // Visits a snapshot of the graph's nodes in order; nodes removed by earlier rewrites are skipped.
  Result<int> run(ir::Graph& graph, PassContext& ctx) override;

 protected:
  void add_rule(RewriteRule rule);

 private:
  std::vector<RewriteRule> rules_;
  std::unordered_map<std::string, std::vector<size_t>> by_anchor_;
};

}  // namespace sdx::opt
