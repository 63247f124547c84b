#include "obs/log.h"

#include <cstdio>
#include <memory>
#include <mutex>

namespace sdx::obs {

namespace {

std::mutex g_mu;                    // guards g_sink (set rarely, read once per record)
std::shared_ptr<const LogSink> g_sink;

const char* severity_word(LogSeverity s) {
  switch (s) {
    case LogSeverity::kVerbose: return "verbose";
    case LogSeverity::kInfo: return "info";
    case LogSeverity::kWarning: return "warning";
    case LogSeverity::kError: return "error";
    case LogSeverity::kFatal: return "fatal";
  }
  return "log";
}

}  // namespace

void set_log_sink(LogSink sink) {
  std::shared_ptr<const LogSink> next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  g_sink = std::move(next);
}

void log(LogSeverity severity, std::string_view category, std::string_view message, std::string_view where) {
  std::shared_ptr<const LogSink> sink;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    sink = g_sink;
  }
  if (sink) {
    (*sink)(LogRecord{severity, category, where, message});
    return;
  }
  std::fprintf(stderr, "sdx: %s: %.*s\n", severity_word(severity), static_cast<int>(message.size()), message.data());
}

}  // namespace sdx::obs
