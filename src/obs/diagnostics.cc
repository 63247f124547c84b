#include "obs/diagnostics.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "obs/json_escape.h"
#include "obs/op_timing_tracker.h"

namespace sdx::obs {
namespace {

const char* const kCategoryNames[kNumDiagCategories] = {
    "COMPILE", "EXECUTE", "MEMORY",    "GRAPH_REPLAY", "JIT",          "OPTIMIZER", "CACHE",
    "WARMUP",  "CAPTURE", "LIVENESS",  "WIRING",       "SHAPES",       "GAPS",      "TENSOR_PARALLEL",
    "PIPELINE_PARALLEL",  "SLOT_STATE", "FALLBACK",    "STREAM",       "POINTER",   "LATENCY", "COLORING"};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string g_json_output;  // SDX_DIAGNOSTICS_JSON_OUTPUT, written at exit

void write_at_exit() {
  Status s = Diagnostics::global().write_json(g_json_output);
  if (!s.is_ok()) std::fprintf(stderr, "sdx: diagnostics report: %s\n", s.message().c_str());
}

}  // namespace

const char* diag_category_name(DiagCategory c) { return kCategoryNames[static_cast<int>(c)]; }

bool parse_diag_category(std::string_view name, DiagCategory* out) {
  const std::string u = upper(trim(name));
  for (int i = 0; i < kNumDiagCategories; ++i)
    if (u == kCategoryNames[i]) {
      *out = static_cast<DiagCategory>(i);
      return true;
    }
  return false;
}

const char* diag_level_name(DiagLevel l) {
  switch (l) {
    case DiagLevel::kOff: return "OFF";
    case DiagLevel::kSummary: return "SUMMARY";
    case DiagLevel::kDetailed: return "DETAILED";
    case DiagLevel::kFull: return "FULL";
  }
  return "?";
}

bool parse_diag_level(std::string_view name, DiagLevel* out) {
  const std::string u = upper(trim(name));
  for (DiagLevel l : {DiagLevel::kOff, DiagLevel::kSummary, DiagLevel::kDetailed, DiagLevel::kFull})
    if (u == diag_level_name(l)) {
      *out = l;
      return true;
    }
  return false;
}

Diagnostics& Diagnostics::global() {
  static Diagnostics* d = [] {
    auto* g = new Diagnostics;  // never destroyed: sessions may report until the process ends
    const char* on = std::getenv("SDX_DIAGNOSTICS_ENABLED");
    if (on && (std::strcmp(on, "1") == 0 || upper(on) == "TRUE" || upper(on) == "ON")) {
      DiagLevel level = DiagLevel::kSummary;
      if (const char* l = std::getenv("SDX_DIAGNOSTICS_LEVEL"); l && !parse_diag_level(l, &level))
        std::fprintf(stderr, "sdx: SDX_DIAGNOSTICS_LEVEL=%s is not SUMMARY, DETAILED or FULL; using SUMMARY\n", l);
      const char* cats = std::getenv("SDX_DIAGNOSTICS_CATEGORIES");
      if (!cats || !*cats) {
        g->enable_all(level);
      } else {
        std::string list = cats;
        size_t start = 0;
        while (start <= list.size()) {
          const size_t comma = std::min(list.find(',', start), list.size());
          const std::string item = trim(std::string_view(list).substr(start, comma - start));
          DiagCategory c;
          if (!item.empty() && parse_diag_category(item, &c))
            g->enable(c, level);
          else if (!item.empty())
            std::fprintf(stderr, "sdx: SDX_DIAGNOSTICS_CATEGORIES: unknown category '%s'\n", item.c_str());
          start = comma + 1;
        }
      }
      if (const char* path = std::getenv("SDX_DIAGNOSTICS_JSON_OUTPUT"); path && *path) {
        g_json_output = path;
        std::atexit(write_at_exit);
      }
    }
    return g;
  }();
  return *d;
}

void Diagnostics::enable_all(DiagLevel l) {
  for (int i = 0; i < kNumDiagCategories; ++i) enable(static_cast<DiagCategory>(i), l);
}

void Diagnostics::record(DiagCategory c, DiagLevel at, std::string_view name, std::string detail) {
  if (!enabled(c, at)) return;
  const uint64_t t = now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  PerCategory& p = per_[static_cast<int>(c)];
  ++p.counts[std::string(name)];
  p.last[std::string(name)] = detail;
  if (level(c) < DiagLevel::kDetailed) return;
  if (p.events.size() >= kMaxEventsPerCategory) {
    ++p.dropped;
    return;
  }
  p.events.push_back({c, at, std::string(name), std::move(detail), t});
}

std::string Diagnostics::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out = "{\"producer\":\"sdx diagnostics\",\"categories\":{";
  bool first_cat = true;
  for (int i = 0; i < kNumDiagCategories; ++i) {
    const PerCategory& p = per_[i];
    const auto lvl = static_cast<DiagLevel>(levels_[i].load(std::memory_order_relaxed));
    if (lvl == DiagLevel::kOff && p.counts.empty()) continue;
    if (!first_cat) out += ",";
    first_cat = false;
    out += "\n\"" + std::string(kCategoryNames[i]) + "\":{\"level\":\"" + diag_level_name(lvl) + "\",\"counts\":{";
    bool first = true;
    for (const auto& [name, n] : p.counts) {
      out += (first ? "\"" : ",\"") + json_escape(name) + "\":" + std::to_string(n);
      first = false;
    }
    out += "},\"last\":{";
    first = true;
    for (const auto& [name, d] : p.last) {
      out += (first ? "\"" : ",\"") + json_escape(name) + "\":\"" + json_escape(d) + "\"";
      first = false;
    }
    out += "},\"events\":[";
    first = true;
    for (const DiagEvent& e : p.events) {
      out += std::string(first ? "" : ",") + "{\"event\":\"" + json_escape(e.name) + "\",\"level\":\"" +
             diag_level_name(e.level) + "\",\"time_ns\":" + std::to_string(e.time_ns) + ",\"detail\":\"" +
             json_escape(e.detail) + "\"}";
      first = false;
    }
    out += "],\"dropped\":" + std::to_string(p.dropped) + "}";
  }
  out += "\n}}\n";
  return out;
}

Status Diagnostics::write_json(const std::string& path) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error("cannot write the diagnostics report to '" + path + "': " + std::strerror(errno));
  f << to_json();
  f.close();
  if (!f) return io_error("writing the diagnostics report to '" + path + "' failed");
  return Status::ok();
}

std::vector<DiagEvent> Diagnostics::events(DiagCategory c) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return per_[static_cast<int>(c)].events;
}

uint64_t Diagnostics::count(DiagCategory c, std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto& counts = per_[static_cast<int>(c)].counts;
  auto it = counts.find(std::string(name));
  return it == counts.end() ? 0 : it->second;
}

void Diagnostics::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (PerCategory& p : per_) p = PerCategory{};
}

}  // namespace sdx::obs
