#include "serve/auth.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sdx::serve {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer one is read, whatever the contents; a length difference is folded in too.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

BearerCheck check_bearer(const std::string_view* header, std::string_view token) {
  constexpr std::string_view kScheme = "bearer ";
  if (header == nullptr || header->size() < kScheme.size()) return BearerCheck::kMissing;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    const char c = (*header)[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) return BearerCheck::kMissing;
  }
  std::string_view given = header->substr(kScheme.size());
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  if (given.empty()) return BearerCheck::kMissing;
  return constant_time_equal(given, token) ? BearerCheck::kOk : BearerCheck::kWrong;
}

bool is_open_method(std::string_view path) { return path.rfind("/grpc.health.v1.Health/", 0) == 0; }

bool read_secret_file(const std::string& path, const char* what, std::string* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::string(what) + ": cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = std::string(what) + ": cannot read '" + path + "'";
    return false;
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.empty()) {
    *error = std::string(what) + ": '" + path + "' is empty";
    return false;
  }
  *out = std::move(text);
  return true;
}

grpc::Status BearerTokenProcessor::Process(const InputMetadata& auth_metadata, grpc::AuthContext* /*context*/,
                                           OutputMetadata* /*consumed_auth_metadata*/,
                                           OutputMetadata* /*response_metadata*/) {
  auto path = auth_metadata.find(":path");
  if (path != auth_metadata.end() && is_open_method(std::string_view(path->second.data(), path->second.size())))
    return grpc::Status::OK;
  auto it = auth_metadata.find("authorization");
  std::string_view header;
  if (it != auth_metadata.end()) header = std::string_view(it->second.data(), it->second.size());
  switch (check_bearer(it == auth_metadata.end() ? nullptr : &header, token_)) {
    case BearerCheck::kOk:
      return grpc::Status::OK;
    case BearerCheck::kMissing:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing bearer token");
    case BearerCheck::kWrong:
      break;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token");
}

namespace {

// Plaintext with an auth metadata processor. grpc::InsecureServerCredentials() refuses one (it asserts), while
// gRPC's core takes one on its insecure credentials as on any other: this wraps those, and hands the core
// the C++ processor through its C interface (inline, as grpc++ does for a processor that does not block).
class PlaintextWithProcessor final : public grpc::ServerCredentials {
 public:
  explicit PlaintextWithProcessor(std::shared_ptr<grpc::AuthMetadataProcessor> processor)
      : processor_(std::move(processor)) {}
  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>& processor) override {
    processor_ = processor;
  }

 private:
  using Holder = std::shared_ptr<grpc::AuthMetadataProcessor>;

  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    grpc_server_credentials* creds = grpc_insecure_server_credentials_create();
    grpc_server_credentials_set_auth_metadata_processor(creds, {&process, &destroy, new Holder(processor_)});
    const int port = grpc_server_add_http2_port(server, addr.c_str(), creds);
    grpc_server_credentials_release(creds);
    return port;
  }

  static grpc::string_ref ref(const grpc_slice& s) {
    return grpc::string_ref(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(s)), GRPC_SLICE_LENGTH(s));
  }

  static void process(void* state, grpc_auth_context* /*context*/, const grpc_metadata* md, size_t num_md,
                      grpc_process_auth_metadata_done_cb done, void* user_data) {
    grpc::AuthMetadataProcessor::InputMetadata input;
    for (size_t i = 0; i < num_md; ++i) input.insert({ref(md[i].key), ref(md[i].value)});
    grpc::AuthMetadataProcessor::OutputMetadata consumed, response;
    const grpc::Status st = (*static_cast<Holder*>(state))->Process(input, nullptr, &consumed, &response);
    done(user_data, nullptr, 0, nullptr, 0, static_cast<grpc_status_code>(st.error_code()),
         st.ok() ? nullptr : st.error_message().c_str());
  }

  static void destroy(void* state) { delete static_cast<Holder*>(state); }

  Holder processor_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> make_server_credentials(const std::string& token, const std::string& cert_pem,
                                                                 const std::string& key_pem) {
  std::shared_ptr<grpc::AuthMetadataProcessor> processor;
  if (!token.empty()) processor = std::make_shared<BearerTokenProcessor>(token);
  if (cert_pem.empty()) {
    if (!processor) return grpc::InsecureServerCredentials();
    return std::make_shared<PlaintextWithProcessor>(processor);
  }
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({key_pem, cert_pem});
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::SslServerCredentials(ssl);
  if (processor) creds->SetAuthMetadataProcessor(processor);
  return creds;
}

}  // namespace sdx::serve
