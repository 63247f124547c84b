#include "serve/metrics_http.h"

#ifdef SDX_SERVE_HAS_CIVETWEB
#include <civetweb.h>

#include <cstring>
#include <mutex>

namespace sdx::serve {

std::unique_ptr<MetricsHttpServer> MetricsHttpServer::start(const std::string& host, int port, Body body,
                                                            std::string* error) {
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(std::move(body)));
  const std::string ports =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  // No document root: CivetWeb serves no files, only the handler below. Two threads: scrapes are rare.
  const char* options[] = {"listening_ports", ports.c_str(), "num_threads", "2", "request_timeout_ms", "10000",
                           nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };  // errors come back as `error`
  server->context_ = mg_start(&callbacks, server.get(), options);
  if (!server->context_) {
    *error = "cannot serve metrics on " + ports + " (in use, or not an address of this machine)";
    return nullptr;
  }
  // Every path comes here (with no handler CivetWeb would look for files): /metrics answers, others are 404.
  mg_set_request_handler(server->context_, "/", &MetricsHttpServer::handle, server.get());
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (context_) mg_stop(context_);  // waits for its threads: no handler runs after this
}

int MetricsHttpServer::handle(mg_connection* conn, void* self) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (!info->local_uri || std::strcmp(info->local_uri, "/metrics") != 0) {
    mg_printf(conn, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return 404;
  }
  if (std::strcmp(info->request_method, "GET") != 0 && std::strcmp(info->request_method, "HEAD") != 0) {
    mg_printf(conn, "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\n"
                    "Connection: close\r\n\r\n");
    return 405;
  }
  std::string body;
  try {
    body = static_cast<MetricsHttpServer*>(self)->body_();
  } catch (...) {
    mg_printf(conn, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return 500;
  }
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n",
            body.size());
  if (std::strcmp(info->request_method, "GET") == 0) mg_write(conn, body.data(), body.size());
  return 200;
}

}  // namespace sdx::serve

#else  // built without CivetWeb (cmake/serve.cmake)

namespace sdx::serve {

std::unique_ptr<MetricsHttpServer> MetricsHttpServer::start(const std::string&, int, Body, std::string* error) {
  *error = "this sdx-serve was built without CivetWeb (libcivetweb-dev): no metrics endpoint; use --metrics-port 0";
  return nullptr;
}

MetricsHttpServer::~MetricsHttpServer() = default;

int MetricsHttpServer::handle(::mg_connection*, void*) { return 0; }

}  // namespace sdx::serve
#endif
