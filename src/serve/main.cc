// sdx-serve: the gRPC server of `sdx serve` (KServe v2 protocol over a model repository, and the sdx.v1
// extension service beside it: remote_service.h).
//
//   sdx-serve --model-repository models --port 8001
//
// SIGTERM and SIGINT are taken synchronously (sigwait on the main thread; every other thread has them
// blocked), so shutdown runs in ordinary code, not in a signal handler: ServerReady turns false, the
// server stops accepting calls, and the calls in flight finish (up to kDrainSeconds) before it exits.
// The Prometheus endpoint (--metrics-port, metrics_http.h) starts before the gRPC port and stops after it.
// --memory-budget: one ModelCache (model_cache.h) holds the repository's models and the sdx.v1 uploads;
// uploads are kept on disk for reloads in --model-cache-dir, by default a folder made private (mkdtemp,
// mode 0700) and removed at exit (a server killed with SIGKILL leaves it behind in $TMPDIR).
// Exit status: 0 after a clean shutdown, 1 when it cannot start (a port taken, repository unreadable), 2 for
// a usage error (an unreadable or empty --auth-token-file, --tls-cert or --tls-key too).
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "serve/auth.h"
#include "serve/inference_service.h"
#include "serve/metrics_http.h"
#include "serve/model_cache.h"
#include "serve/model_repository.h"
#include "serve/remote_service.h"
#include "serve/request_timing.h"
#include "serve/server_threads.h"
#include "serve/serve_metrics.h"
#include "serve/server_options.h"

#ifndef SDX_VERSION_STRING
#define SDX_VERSION_STRING "unknown"
#endif

namespace {

constexpr int kDrainSeconds = 30;  // how long calls in flight may take to finish after SIGTERM

int usage_error(const std::string& message) {
  std::fprintf(stderr, "sdx-serve: error: %s\n(sdx-serve --help for the options)\n", message.c_str());
  return 2;
}

// Loads every model; a model that fails is reported and left out (the index shows why), as the server
// still serves the others.
void load_models(sdx::serve::ModelRepository& repo) {
  for (const std::string& name : repo.model_names()) {
    sdx::Status st = repo.load(name);
    if (st.is_ok()) {
      std::fprintf(stderr, "sdx-serve: loaded model '%s'\n", name.c_str());
    } else {
      std::fprintf(stderr, "sdx-serve: model '%s' not loaded: %s\n", name.c_str(), st.to_string().c_str());
    }
  }
}

// The folder uploads are kept in under --memory-budget: the one given (made, mode 0700, when missing), or
// a private temporary one, removed with what is left in it when this guard goes (after the services).
struct CacheDir {
  std::string path;
  bool made_temp = false;
  ~CacheDir() {
    std::error_code ec;
    if (made_temp) std::filesystem::remove_all(path, ec);
  }
};

bool make_cache_dir(const std::string& given, CacheDir* out, std::string* error) {
  std::error_code ec;
  if (!given.empty()) {
    if (::mkdir(given.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = "--model-cache-dir " + given + ": cannot make the folder: " + std::strerror(errno);
      return false;
    }
    if (!std::filesystem::is_directory(given, ec) || ::access(given.c_str(), W_OK) != 0) {
      *error = "--model-cache-dir " + given + ": not a folder this server can write to";
      return false;
    }
    out->path = given;
    return true;
  }
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  std::string pattern = (tmp / "sdx-serve-cache-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    *error = "cannot make a private folder for uploaded models in " + tmp.string() + ": " + std::strerror(errno) +
             " (give one with --model-cache-dir)";
    return false;
  }
  out->path = pattern;
  out->made_temp = true;
  return true;
}

std::unique_ptr<grpc::Server> start_server(const sdx::serve::ServerOptions& opts,
                                           const std::shared_ptr<grpc::ServerCredentials>& credentials,
                                           grpc::Service* service, grpc::Service* remote, int* bound_port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::string address = opts.host + ":" + std::to_string(opts.port);
  builder.AddListeningPort(address, credentials, bound_port);
  // gRPC sets SO_REUSEPORT by default, so a second server on a taken port would start and share it
  // silently; without it the bind fails and sdx-serve says so.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(opts.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(opts.max_message_bytes));
  builder.RegisterService(service);
  builder.RegisterService(remote);
  sdx::serve::keep_handler_threads(&builder, opts.max_queue);  // no thread churn (server_threads.h)
  if (sdx::serve::request_timing_enabled()) {  // sdx_server_request_seconds (request_timing.h)
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(sdx::serve::make_request_timing_factory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
  }
  return builder.BuildAndStart();
}

}  // namespace

int main(int argc, char** argv) {
  sdx::serve::ServerOptions opts;
  std::string error;
  if (!sdx::serve::parse_server_options(argc, argv, &opts, &error)) return usage_error(error);
  if (opts.help) {
    std::fputs(sdx::serve::server_usage(), stdout);
    return 0;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(opts.model_repository, ec))
    return usage_error("model repository '" + opts.model_repository + "' is not a folder");
  // The token and the TLS files are read once, here: an unreadable or empty one stops the start (exit 2).
  std::string token, cert_pem, key_pem;
  if (!opts.auth_token_file.empty() &&
      !sdx::serve::read_secret_file(opts.auth_token_file, "--auth-token-file", &token, &error))
    return usage_error(error);
  if (!opts.tls_cert.empty() && (!sdx::serve::read_secret_file(opts.tls_cert, "--tls-cert", &cert_pem, &error) ||
                                 !sdx::serve::read_secret_file(opts.tls_key, "--tls-key", &key_pem, &error)))
    return usage_error(error);

  // Before any thread starts, so that every thread inherits the mask and only sigwait below takes them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  sdx::serve::ServeMetrics metrics;
  CacheDir cache_dir;  // before the services: removed after them
  if (opts.memory_budget > 0 && !make_cache_dir(opts.model_cache_dir, &cache_dir, &error)) {
    std::fprintf(stderr, "sdx-serve: error: %s\n", error.c_str());
    return 1;
  }
  if (opts.memory_budget == 0 && !opts.model_cache_dir.empty())
    std::fprintf(stderr, "sdx-serve: note: --model-cache-dir is used only with --memory-budget (unlimited now)\n");
  sdx::serve::ModelCache::Options cache_options;
  cache_options.budget_bytes = opts.memory_budget;
  sdx::serve::ModelCache cache(cache_options, metrics.cache());
  if (opts.memory_budget > 0)
    std::fprintf(stderr, "sdx-serve: memory budget %lld bytes; uploads kept in %s\n",
                 static_cast<long long>(opts.memory_budget), cache_dir.path.c_str());
  sdx::serve::ModelRepository repo(opts.model_repository, sdx::SessionOptions{}, &cache);
  load_models(repo);
  sdx::serve::AdmissionOptions admission;
  admission.max_queue = opts.max_queue;
  admission.model_concurrency = opts.model_concurrency > 0
                                    ? opts.model_concurrency
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  admission.log_requests = opts.log_requests;
  sdx::serve::InferenceService service(&repo, SDX_VERSION_STRING, &metrics, admission);
  sdx::serve::RemoteOptions remote_options;
  remote_options.max_model_bytes = opts.max_model_bytes;
  remote_options.max_queue = admission.max_queue;  // sdx.v1 Run: the same bounds, per model, as ModelInfer
  remote_options.model_concurrency = admission.model_concurrency;
  remote_options.cache = &cache;
  remote_options.model_cache_dir = cache_dir.path;
  sdx::serve::RemoteService remote(sdx::SessionOptions{}, remote_options, &metrics, &repo);
  remote.start_reaper();
  std::unique_ptr<sdx::serve::MetricsHttpServer> metrics_http;
  if (opts.metrics_port != 0) {
    metrics_http = sdx::serve::MetricsHttpServer::start(
        opts.host, opts.metrics_port,
        [&] {
          service.refresh_metrics();
          remote.refresh_metrics();
          return metrics.render();
        },
        &error);
    if (!metrics_http) {
      std::fprintf(stderr, "sdx-serve: error: %s\n", error.c_str());
      return 1;
    }
    std::fprintf(stderr, "sdx-serve: metrics on http://%s:%d/metrics\n", opts.host.c_str(), opts.metrics_port);
  }
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      start_server(opts, sdx::serve::make_server_credentials(token, cert_pem, key_pem), &service, &remote, &port);
  if (!server || port == 0) {
    std::fprintf(stderr, "sdx-serve: error: cannot listen on %s:%d (in use, or not an address of this machine)\n",
                 opts.host.c_str(), opts.port);
    return 1;
  }
  std::fprintf(stderr, "sdx-serve: listening on %s:%d%s%s\n", opts.host.c_str(), port, cert_pem.empty() ? "" : " (TLS)",
               token.empty() ? "" : " (bearer token required)");

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::fprintf(stderr, "sdx-serve: %s: shutting down, finishing requests in flight\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
  service.set_ready(false);
  server->GetHealthCheckService()->Shutdown();  // health checks answer NOT_SERVING from now on
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(kDrainSeconds));
  server->Wait();
  metrics_http.reset();
  std::fprintf(stderr, "sdx-serve: stopped\n");
  return 0;
}
