#include "analysis/loop_report.h"

#include <cmath>
#include <cstdio>

#include "obs/json_escape.h"

namespace sdx::analysis {
namespace {

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// JSON has no NaN or infinity: those are written as strings.
std::string jnum(double v) { return std::isfinite(v) ? num(v) : "\"" + num(v) + "\""; }
std::string jstr(const std::string& s) { return "\"" + obs::json_escape(s) + "\""; }

// "a,b,c": each element of v through f.
template <typename T, typename F>
std::string join(const std::vector<T>& v, F f) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + f(v[i]);
  return s;
}

std::string evolution_json(const EvolutionReport& e) {
  std::string s = "{\"kind\":" + jstr(evolution_name(e.kind)) + ",\"samples\":" + std::to_string(e.samples) +
                  ",\"last\":" + jnum(e.last) + ",\"min\":" + jnum(e.min) + ",\"max\":" + jnum(e.max);
  switch (e.kind) {
    case Evolution::kConverging: s += ",\"limit\":" + jnum(e.limit) + ",\"delta_ratio\":" + jnum(e.delta_ratio); break;
    case Evolution::kDiverging: s += ",\"rate\":" + jnum(e.rate) + ",\"step\":" + jnum(e.step); break;
    case Evolution::kOscillating: s += ",\"period\":" + std::to_string(e.period); break;
    default: break;
  }
  return s + ",\"text\":" + jstr(e.describe()) + "}";
}

}  // namespace

std::string LoopReport::summary() const { return termination.describe(); }

std::string LoopReport::describe() const {
  std::string s = "Loop '" + node + "': " + std::to_string(iterations) + " iterations";
  if (trip_count) s += " of trip count " + std::to_string(*trip_count);
  s += ", " + num(seconds) + " s";
  if (!stopped_by.empty())
    s += ", stopped by " + stopped_by + " (" +
         (stopped_by == "max_loop_seconds" ? num(limit_seconds) + " s" : std::to_string(limit_iterations)) + ")";
  s += "\n  condition: " + condition + "\n  termination: " + termination.describe() + "\n";
  s += "  samples: " + std::to_string(samples) + " (one every " + std::to_string(stride) + " iterations)\n";
  for (const LoopVariableReport& v : variables) {
    s += "  " + v.name + ": ";
    if (!v.traced) {
      s += "not traced (" + v.note + ")\n";
      continue;
    }
    s += v.evolution.describe() + " [" + stat_field_name(v.field) + ", last " + num(v.last.mean);
    if (v.last.numel != 1) s += ", norm " + num(v.last.norm) + ", range " + num(v.last.min) + ".." + num(v.last.max);
    s += "]\n";
  }
  return s;
}

std::string LoopReport::to_json() const {
  std::string s = "{\"node\":" + jstr(node) + ",\"iterations\":" + std::to_string(iterations) +
                  ",\"trip_count\":" + (trip_count ? std::to_string(*trip_count) : "null") +
                  ",\"stopped_by\":" + (stopped_by.empty() ? "null" : jstr(stopped_by)) +
                  ",\"max_loop_iterations\":" + std::to_string(limit_iterations) +
                  ",\"max_loop_seconds\":" + jnum(limit_seconds) + ",\"seconds\":" + jnum(seconds) +
                  ",\"stride\":" + std::to_string(stride) + ",\"samples\":" + std::to_string(samples) +
                  ",\"sample_iterations\":[" + join(sample_iterations, [](int64_t i) { return std::to_string(i); }) + "]" +
                  ",\"condition\":" + jstr(condition) + ",\"condition_depends_on\":[";
  for (size_t i = 0; i < condition_depends_on.size(); ++i) s += (i ? "," : "") + jstr(condition_depends_on[i]);
  const TerminationReport& t = termination;
  s += "],\"termination\":{\"verdict\":" + jstr(termination_verdict_name(t.verdict)) +
       ",\"remaining\":" + (t.remaining ? std::to_string(*t.remaining) : "null") +
       ",\"exact\":" + (t.exact ? "true" : "false") + ",\"bound_by\":" + jstr(t.bound_by) + ",\"root_cause\":" +
       (t.root_cause ? "{\"name\":" + jstr(t.root_cause->name) + ",\"evolution\":" + evolution_json(t.root_cause->evolution) + "}"
                     : std::string("null")) +
       ",\"text\":" + jstr(t.describe()) + "},\"variables\":[";
  for (size_t i = 0; i < variables.size(); ++i) {
    const LoopVariableReport& v = variables[i];
    s += std::string(i ? "," : "") + "{\"name\":" + jstr(v.name) + ",\"traced\":" + (v.traced ? "true" : "false");
    if (!v.traced) {
      s += ",\"note\":" + jstr(v.note) + "}";
      continue;
    }
    s += ",\"field\":" + jstr(stat_field_name(v.field)) + ",\"numel\":" + std::to_string(v.last.numel) +
         ",\"last\":{\"norm\":" + jnum(v.last.norm) + ",\"min\":" + jnum(v.last.min) + ",\"max\":" + jnum(v.last.max) +
         ",\"mean\":" + jnum(v.last.mean) + ",\"hash\":\"" + std::to_string(v.last.hash) + "\"},\"evolution\":" +
         evolution_json(v.evolution) + ",\"series\":[" + join(v.series, jnum) + "]}";
  }
  return s + "],\"text\":" + jstr(describe()) + "}";
}

}  // namespace sdx::analysis
