// JSON string escaping for the reports sdx writes (Chrome trace, diagnostics): the text between the
// quotes, with quotes, backslashes and control characters escaped; UTF-8 passes through.
//
//   out += "\"" + obs::json_escape(node_name) + "\"";
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace sdx::obs {

inline std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace sdx::obs
