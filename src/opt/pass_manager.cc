#include "opt/pass_manager.h"

#include <chrono>
#include <cstdio>

#include "ir/type_inference.h"
#include "ir/verifier.h"

namespace sdx::opt {

int OptimizationReport::total_rewrites() const {
  int n = 0;
  for (const auto& [pass, c] : rewrites_per_pass) n += c;
  return n;
}

int OptimizationReport::rewrites_of(const std::string& pass) const {
  const PassInfo* info = find_pass(pass);  // the report is keyed by table names; an alias finds its pass too
  const std::string& key = info ? info->name : pass;
  for (const auto& [p, c] : rewrites_per_pass)
    if (p == key) return c;
  return 0;
}

namespace {
std::map<std::string, int> histogram(const ir::Graph& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes()) ++h[(n->domain().empty() ? "" : n->domain() + ".") + n->op_type()];
  return h;
}
}  // namespace

Result<OptimizationReport> optimize(ir::Graph& graph, const OptimizerOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // A pass missing from the pipeline would change every model's graph silently; refuse instead.
  if (!pass_table_problems().empty()) {
    std::string why;
    for (const std::string& p : pass_table_problems()) why += (why.empty() ? "" : "; ") + p;
    return internal_error("the optimizer's pass table and its registered passes disagree: " + why);
  }
  OptimizationReport rep;
  rep.enabled = options.enabled;
  rep.ops_before = histogram(graph);
  rep.nodes_before = static_cast<int>(graph.nodes().size());
  std::vector<std::pair<const PassInfo*, std::unique_ptr<Pass>>> pipeline;
  for (const PassInfo& info : registered_passes()) {
    // Skip lists written before the passes had table names still work: the DSP alias skips too.
    if (options.skips(info.name) || options.skips(info.alias)) {
      rep.skipped.push_back(info.name);
      continue;
    }
    rep.rewrites_per_pass.emplace_back(info.name, 0);
    pipeline.emplace_back(&info, info.create());
  }
  if (options.enabled) {
    for (int round = 0; round < options.max_iterations; ++round) {
      ++rep.iterations;
      int changed = 0;
      for (size_t i = 0; i < pipeline.size(); ++i) {
        const std::string& name = pipeline[i].first->name;
        Pass& pass = *pipeline[i].second;
        PassContext ctx(options, name, &rep.log);
        auto n = pass.run(graph, ctx);
        if (!n.is_ok()) return n.status().with_context("optimizer pass " + name);
        graph.collect_garbage();
        if (n.value() == 0) continue;
        changed += n.value();
        rep.rewrites_per_pass[i].second += n.value();
        SDX_RETURN_IF_ERROR(graph.sort_topologically(), "after optimizer pass " + name);
        // Values a rewrite created get their types (and static shapes) before the next pass matches on
        // them, whether or not each pass is verified, so tests and production optimize alike.
        SDX_RETURN_IF_ERROR(ir::infer_types(graph), "type inference after optimizer pass " + name);
        if (options.verify_each_pass)
          SDX_RETURN_IF_ERROR(ir::verify(graph), "verifier after optimizer pass " + name);
      }
      if (changed == 0) break;  // fixpoint
    }
  }
  rep.ops_after = histogram(graph);
  rep.nodes_after = static_cast<int>(graph.nodes().size());
  rep.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

std::string format_report(const OptimizationReport& rep) {
  std::string out;
  char line[256];
  if (rep.preoptimized)
    return "optimizer: not run, the graph came optimized (a .sdx bundle or the disk plan cache; "
           "SDX_DISK_PLAN_CACHE=0 optimizes it again)\n";
  if (!rep.enabled) return "optimizer: disabled (SDX_OPTIMIZER_ENABLED=0)\n";
  std::snprintf(line, sizeof line, "optimizer: %d -> %d nodes, %d rewrites in %d round%s, %.1f ms\n", rep.nodes_before,
                rep.nodes_after, rep.total_rewrites(), rep.iterations, rep.iterations == 1 ? "" : "s", rep.millis);
  out += line;
  out += "rewrites per pass:\n";
  for (const auto& [pass, n] : rep.rewrites_per_pass) {
    std::snprintf(line, sizeof line, "  %6d  %s\n", n, pass.c_str());
    out += line;
  }
  for (const std::string& s : rep.skipped) out += "  skipped " + s + "\n";
  out += "ops before -> after:\n";
  std::map<std::string, std::pair<int, int>> both;
  for (const auto& [op, n] : rep.ops_before) both[op].first = n;
  for (const auto& [op, n] : rep.ops_after) both[op].second = n;
  for (const auto& [op, c] : both) {
    std::snprintf(line, sizeof line, "  %6d -> %-6d %s\n", c.first, c.second, op.c_str());
    out += line;
  }
  return out;
}

}  // namespace sdx::opt
