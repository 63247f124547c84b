// The command line of sdx-serve, parsed once into typed options.
//
//   serve::ServerOptions opts;
//   std::string error;
//   if (!serve::parse_server_options(argc, argv, &opts, &error)) { usage(error); return 2; }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sdx::serve {

struct ServerOptions {
  std::string model_repository;          // --model-repository DIR (required)
  std::string host = "127.0.0.1";        // --host: loopback unless told otherwise
  int port = 8001;                       // --port: 0 picks a free port (printed when listening)
  int64_t max_message_bytes = 1 << 30;   // --max-message-bytes: largest request or response
  int metrics_port = 8002;               // --metrics-port: Prometheus GET /metrics on --host; 0: none
  int max_queue = 64;                    // --max-queue: requests in flight or waiting, per model
  int model_concurrency = 0;             // --model-concurrency: requests running at once per model; 0: cores
  int64_t max_model_bytes = int64_t{2} << 30;  // --max-model-bytes: largest sdx.v1 model upload (all chunks)
  std::string auth_token_file;            // --auth-token-file F: every call needs `authorization: Bearer <F's token>`
  std::string tls_cert;                   // --tls-cert F (PEM; with --tls-key): TLS on the gRPC port
  std::string tls_key;                    // --tls-key F (PEM; with --tls-cert)
  int64_t memory_budget = 0;              // --memory-budget BYTES (512M, 2G, ...): models held at once; 0: unlimited
  std::string model_cache_dir;            // --model-cache-dir DIR: uploads kept for reloads; empty: a private temp dir
  bool log_requests = false;             // --log-requests: one structured line per request on stderr
  bool help = false;                     // --help
};

// False with a one-line `error` for an unknown option, a missing or malformed value.
bool parse_server_options(int argc, const char* const* argv, ServerOptions* out, std::string* error);

// A byte count: decimal digits, then optionally K, M, G or T (powers of 1024; KiB, MiB, GiB, TiB too).
// False for anything else, or past INT64_MAX.
bool parse_byte_size(std::string_view text, int64_t* out);

// The --help text.
const char* server_usage();

}  // namespace sdx::serve
