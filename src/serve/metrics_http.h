// The Prometheus scrape endpoint of sdx-serve: GET /metrics over HTTP (CivetWeb, Debian's
// libcivetweb-dev), on its own small thread pool, apart from the gRPC threads.
//
//   auto http = serve::MetricsHttpServer::start("127.0.0.1", 8002, [&] { return metrics.render(); }, &error);
//   if (!http) ...                                    // error says why (the port is taken, ...)
//   // serves until `http` is destroyed
#pragma once

#include <functional>
#include <memory>
#include <string>

struct mg_context;
struct mg_connection;

namespace sdx::serve {

class MetricsHttpServer {
 public:
  using Body = std::function<std::string()>;

  // Null with `error` set when it cannot listen on host:port.
  static std::unique_ptr<MetricsHttpServer> start(const std::string& host, int port, Body body, std::string* error);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

 private:
  explicit MetricsHttpServer(Body body) : body_(std::move(body)) {}
  static int handle(::mg_connection* conn, void* self);

  Body body_;
  mg_context* context_ = nullptr;
};

}  // namespace sdx::serve
