#include "serve/server_options.h"

#include <charconv>
#include <cstring>
#include <string_view>

namespace sdx::serve {
namespace {

bool parse_int(std::string_view text, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

bool parse_byte_size(std::string_view text, int64_t* out) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return false;
  const std::string_view unit = text.substr(digits);
  static const struct {
    const char* name;
    int shift;
  } kUnits[] = {{"", 0},    {"K", 10},   {"M", 20},   {"G", 30},   {"T", 40},
                {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  int shift = -1;
  for (const auto& u : kUnits)
    if (unit == u.name) shift = u.shift;
  int64_t n = 0;
  if (shift < 0 || !parse_int(text.substr(0, digits), 0, INT64_MAX, &n) || n > (INT64_MAX >> shift)) return false;
  *out = n << shift;
  return true;
}

const char* server_usage() {
  return "usage: sdx-serve --model-repository DIR [--host HOST] [--port PORT] [--metrics-port PORT]\n"
         "                 [--max-queue N] [--model-concurrency N] [--max-message-bytes N]\n"
         "                 [--max-model-bytes N] [--auth-token-file F] [--tls-cert F --tls-key F]\n"
         "                 [--memory-budget BYTES] [--model-cache-dir DIR] [--log-requests]\n"
         "\n"
         "Serves the ONNX models of DIR (NAME/VERSION/model.onnx) over gRPC with the KServe v2 protocol\n"
         "(inference.GRPCInferenceService, as Triton's clients speak it) and the standard gRPC health service,\n"
         "and sdx's own sdx.v1.RemoteService beside it (models registered by fingerprint, sessions with\n"
         "leases, outputs kept on the server as references).\n"
         "\n"
         "  --model-repository DIR   the model repository (required)\n"
         "  --host HOST              address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)\n"
         "  --port PORT              port to listen on (default 8001; 0: a free port, printed when listening)\n"
         "  --metrics-port PORT      Prometheus metrics at http://HOST:PORT/metrics (default 8002; 0: off)\n"
         "  --max-queue N            requests in flight or waiting per model (default 64); beyond it\n"
         "                           ModelInfer answers RESOURCE_EXHAUSTED with a retry hint\n"
         "  --model-concurrency N    requests running at once per model (default: the hardware threads)\n"
         "  --max-message-bytes N    largest request or response message (default 1073741824)\n"
         "  --max-model-bytes N      largest model an sdx.v1 client may upload, all chunks (default 2147483648)\n"
         "  --auth-token-file F      every call of both services needs gRPC metadata `authorization: Bearer\n"
         "                           TOKEN`, TOKEN the file's text (one trailing newline stripped); else\n"
         "                           UNAUTHENTICATED. The health service stays open; /metrics is not covered\n"
         "  --tls-cert F, --tls-key F  TLS on the gRPC port with this PEM certificate (chain) and key (both)\n"
         "  --memory-budget BYTES    bytes of model weights held loaded at once, repository and sdx.v1\n"
         "                           models together (K, M, G, T suffixes: powers of 1024; default 0:\n"
         "                           unlimited). A load past it evicts the models of lowest value (access\n"
         "                           frequency x load time / bytes) that no request is running on; they\n"
         "                           reload on their next request. A model that cannot fit is refused with\n"
         "                           RESOURCE_EXHAUSTED\n"
         "  --model-cache-dir DIR    with --memory-budget: where sdx.v1 uploads are kept (mode 0600) so that\n"
         "                           an evicted one reloads without a new upload (default: a private\n"
         "                           temporary folder, removed at exit)\n"
         "  --log-requests           one structured line per request on stderr (debug)\n"
         "\n"
         "SIGTERM or SIGINT stops it: new requests are refused, requests in flight finish.\n";
}

bool parse_server_options(int argc, const char* const* argv, ServerOptions* out, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    if (arg == "-h" || arg == "--help") {
      out->help = true;
      return true;
    }
    if (arg == "--log-requests") {
      out->log_requests = true;
      continue;
    }
    const size_t eq = arg.find('=');
    const bool inline_value = arg.rfind("--", 0) == 0 && eq != std::string_view::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[i + 1];
    }
    const bool has_value = inline_value || i + 1 < argc;
    if (arg != "--model-repository" && arg != "--host" && arg != "--port" && arg != "--max-message-bytes" &&
        arg != "--metrics-port" && arg != "--max-queue" && arg != "--model-concurrency" && arg != "--max-model-bytes" &&
        arg != "--auth-token-file" && arg != "--tls-cert" && arg != "--tls-key" && arg != "--memory-budget" &&
        arg != "--model-cache-dir") {
      *error = "unknown option '" + std::string(arg) + "'";
      return false;
    }
    if (!has_value) {
      *error = "option " + std::string(arg) + " needs a value";
      return false;
    }
    if (!inline_value) ++i;
    int64_t n = 0;
    if (arg == "--model-repository") {
      out->model_repository = value;
    } else if (arg == "--auth-token-file" || arg == "--tls-cert" || arg == "--tls-key") {
      if (value.empty()) {
        *error = std::string(arg) + ": empty file name";
        return false;
      }
      (arg == "--auth-token-file" ? out->auth_token_file : arg == "--tls-cert" ? out->tls_cert : out->tls_key) = value;
    } else if (arg == "--memory-budget") {
      if (!parse_byte_size(value, &out->memory_budget)) {
        *error = "--memory-budget: '" + std::string(value) +
                 "' is not a byte count (digits, then optionally K, M, G or T; 0: unlimited)";
        return false;
      }
    } else if (arg == "--model-cache-dir") {
      if (value.empty()) {
        *error = "--model-cache-dir: empty folder name";
        return false;
      }
      out->model_cache_dir = value;
    } else if (arg == "--host") {
      out->host = value;
    } else if (arg == "--port") {
      if (!parse_int(value, 0, 65535, &n)) {
        *error = "--port: '" + std::string(value) + "' is not a port number (0 to 65535)";
        return false;
      }
      out->port = static_cast<int>(n);
    } else if (arg == "--metrics-port") {
      if (!parse_int(value, 0, 65535, &n)) {
        *error = "--metrics-port: '" + std::string(value) + "' is not a port number (0 to 65535; 0: no metrics)";
        return false;
      }
      out->metrics_port = static_cast<int>(n);
    } else if (arg == "--max-queue" || arg == "--model-concurrency") {
      if (!parse_int(value, arg == "--max-queue" ? 1 : 0, 1 << 20, &n)) {
        *error = std::string(arg) + ": '" + std::string(value) + "' is not a count from " +
                 (arg == "--max-queue" ? "1" : "0") + " to 1048576";
        return false;
      }
      (arg == "--max-queue" ? out->max_queue : out->model_concurrency) = static_cast<int>(n);
    } else if (arg == "--max-model-bytes") {
      if (!parse_int(value, 1, INT64_MAX, &n)) {
        *error = "--max-model-bytes: '" + std::string(value) + "' is not a size from 1 to " + std::to_string(INT64_MAX);
        return false;
      }
      out->max_model_bytes = n;
    } else {
      if (!parse_int(value, 1024, INT32_MAX, &n)) {
        *error = "--max-message-bytes: '" + std::string(value) + "' is not a size from 1024 to 2147483647";
        return false;
      }
      out->max_message_bytes = n;
    }
  }
  if (out->model_repository.empty()) {
    *error = "--model-repository DIR is required";
    return false;
  }
  if (out->tls_cert.empty() != out->tls_key.empty()) {
    *error = "--tls-cert and --tls-key go together";
    return false;
  }
  if (out->host.empty()) {
    *error = "--host: empty address";
    return false;
  }
  return true;
}

}  // namespace sdx::serve
