// Log records of sdx's sessions and where they go: stderr by default, or a sink the embedding program
// sets (Python: sdx.set_default_logger_callback). Severities are onnxruntime's: 0 verbose, 1 info,
// 2 warning, 3 error, 4 fatal. A session logs what its log_level lets through (0 errors .. 3 verbose);
// the sink sees every record that passes.
//
//   obs::log_for(options.log_level, obs::LogSeverity::kWarning, "session", "execution mode " + why);
//   obs::set_log_sink([](const obs::LogRecord& r) { ... });   // an empty function restores stderr
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace sdx::obs {

enum class LogSeverity : int { kVerbose = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

struct LogRecord {
  LogSeverity severity;
  std::string_view category;  // "session", "plan", "jit", "cache", ...
  std::string_view where;     // the source location, "file:line"
  std::string_view message;
};

using LogSink = std::function<void(const LogRecord&)>;

// Replaces the sink (thread-safe; records being delivered to the old one finish first on their thread).
void set_log_sink(LogSink sink);

// Whether a session at `log_level` (SessionOptions::log_level) logs records of `severity`.
inline bool session_logs(int log_level, LogSeverity severity) { return static_cast<int>(severity) >= 3 - log_level; }

// Delivers one record to the sink.
void log(LogSeverity severity, std::string_view category, std::string_view message, std::string_view where = "");

// log() when a session at `log_level` logs `severity`; `make` builds the message only then.
template <typename F>
void log_for(int log_level, LogSeverity severity, std::string_view category, F&& make) {
  if (session_logs(log_level, severity)) log(severity, category, std::string(make()));
}

}  // namespace sdx::obs
