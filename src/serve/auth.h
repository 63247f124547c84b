// Who may call sdx-serve: the bearer token of --auth-token-file and the TLS of --tls-cert/--tls-key, both
// in the server's credentials (one check for every RPC of both services, before any handler runs).
//
//   std::string token, error;
//   if (!serve::read_secret_file(path, "--auth-token-file", &token, &error)) { ...; return 2; }
//   auto creds = serve::make_server_credentials(token, cert_pem, key_pem);   // "" token: no check
//   builder.AddListeningPort(address, creds, &port);
//
// With a token, every call needs gRPC metadata `authorization: Bearer <token>`: without one it is
// UNAUTHENTICATED "missing bearer token", with another token UNAUTHENTICATED "wrong bearer token" (compared
// in constant time). The standard health service (grpc.health.v1.Health) stays open, as probes cannot send
// a token; the Prometheus endpoint is another port (metrics_http.h) and is not covered. The token is never
// logged.
//
// Plaintext with a token leans on gRPC 1.51's (Debian bookworm's) grpc::ServerCredentials, whose private
// virtual AddPortToServer this overrides to give gRPC core's insecure credentials the processor (C++'s
// InsecureServerCredentials refuses one, and a sync-server interceptor cannot stop a handler). Newer gRPC
// releases build ServerCredentials from a core object instead: an upgrade must revisit auth.cc, and
// tests/python/test_serve_auth.py fails if plaintext calls without a token get through.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>
#include <string_view>

namespace sdx::serve {

// a == b, in a time that depends on the lengths only, not on where the bytes differ.
bool constant_time_equal(std::string_view a, std::string_view b);

enum class BearerCheck { kOk, kMissing, kWrong };

// The `authorization` header value (nullptr when absent) against the token: "Bearer <token>" (the scheme
// case-insensitive, as RFC 6750 has it). A header of another scheme counts as missing.
BearerCheck check_bearer(const std::string_view* header, std::string_view token);

// True for the calls that need no token: the standard health service's.
bool is_open_method(std::string_view path);

// The whole file into *out, one trailing newline (\n or \r\n) stripped; false with a one-line error for an
// unreadable or empty file. `what` names the option in the error.
bool read_secret_file(const std::string& path, const char* what, std::string* out, std::string* error);

// The grpc::AuthMetadataProcessor that checks the token on every call (is_open_method ones aside).
class BearerTokenProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit BearerTokenProcessor(std::string token) : token_(std::move(token)) {}
  bool IsBlocking() const override { return false; }  // a compare: runs inline, not on a thread pool
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata, OutputMetadata* response_metadata) override;

 private:
  std::string token_;
};

// The credentials of the gRPC port: TLS when cert_pem is set (grpc::SslServerCredentials, key_pem its key),
// plaintext otherwise; with a non-empty token, BearerTokenProcessor checks every call of either.
std::shared_ptr<grpc::ServerCredentials> make_server_credentials(const std::string& token, const std::string& cert_pem,
                                                                 const std::string& key_pem);

}  // namespace sdx::serve
