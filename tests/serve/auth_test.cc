#include "serve/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "serve/server_options.h"

namespace sdx::serve {
namespace {

TEST(Auth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("s3cret", "s3cret"));
  EXPECT_FALSE(constant_time_equal("s3cret", "s3creT"));
  EXPECT_FALSE(constant_time_equal("s3cret", "s3cre"));  // a prefix is not equal
  EXPECT_FALSE(constant_time_equal("s3cre", "s3cret"));
  EXPECT_FALSE(constant_time_equal("", "x"));
  EXPECT_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));  // bytes past a NUL count
}

TEST(Auth, ConstantTimeEqualDoesNotStopAtTheFirstDifference) {
  // The time of a compare does not depend on where the bytes differ: a first-byte and a last-byte mismatch
  // of a long token take about as long (generous bounds: this is a smoke check, not a timing proof).
  const std::string token(1 << 16, 'a');
  std::string first = token, last = token;
  first.front() = 'b';
  last.back() = 'b';
  auto time_of = [&](const std::string& other) {
    auto best = std::chrono::nanoseconds::max();
    for (int rep = 0; rep < 50; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      volatile bool eq = constant_time_equal(token, other);
      (void)eq;
      best =
          std::min(best, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0));
    }
    return static_cast<double>(best.count());
  };
  const double t_first = time_of(first), t_last = time_of(last);
  EXPECT_GT(t_first * 4, t_last);
  EXPECT_GT(t_last * 4, t_first);
}

TEST(Auth, CheckBearerHeader) {
  const std::string_view ok = "Bearer tok", lower = "bearer tok", upper = "BEARER tok", spaced = "Bearer   tok";
  const std::string_view wrong = "Bearer tik", longer = "Bearer tok2", basic = "Basic tok", bare = "tok",
                         empty = "Bearer ", nothing = "";
  EXPECT_EQ(check_bearer(&ok, "tok"), BearerCheck::kOk);
  EXPECT_EQ(check_bearer(&lower, "tok"), BearerCheck::kOk);  // the scheme is case-insensitive (RFC 6750)
  EXPECT_EQ(check_bearer(&upper, "tok"), BearerCheck::kOk);
  EXPECT_EQ(check_bearer(&spaced, "tok"), BearerCheck::kOk);
  EXPECT_EQ(check_bearer(&wrong, "tok"), BearerCheck::kWrong);
  EXPECT_EQ(check_bearer(&longer, "tok"), BearerCheck::kWrong);
  EXPECT_EQ(check_bearer(nullptr, "tok"), BearerCheck::kMissing);
  EXPECT_EQ(check_bearer(&basic, "tok"), BearerCheck::kMissing);
  EXPECT_EQ(check_bearer(&bare, "tok"), BearerCheck::kMissing);
  EXPECT_EQ(check_bearer(&empty, "tok"), BearerCheck::kMissing);
  EXPECT_EQ(check_bearer(&nothing, "tok"), BearerCheck::kMissing);
}

TEST(Auth, ProcessorChecksEveryCallButHealth) {
  BearerTokenProcessor p("tok");
  grpc::AuthMetadataProcessor::OutputMetadata consumed, response;
  auto run = [&](const char* path, const char* header) {
    grpc::AuthMetadataProcessor::InputMetadata md;
    md.insert({":path", path});
    if (header) md.insert({"authorization", header});
    return p.Process(md, nullptr, &consumed, &response);
  };
  EXPECT_TRUE(run("/inference.GRPCInferenceService/ModelInfer", "Bearer tok").ok());
  grpc::Status missing = run("/inference.GRPCInferenceService/ModelInfer", nullptr);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(missing.error_message(), "missing bearer token");
  grpc::Status wrong = run("/sdx.v1.RemoteService/Run", "Bearer nope");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message(), "wrong bearer token");
  EXPECT_TRUE(run("/grpc.health.v1.Health/Check", nullptr).ok());  // probes send no token
  EXPECT_TRUE(run("/grpc.health.v1.Health/Watch", nullptr).ok());
  EXPECT_FALSE(run("/grpc.health.v1.HealthX/Check", nullptr).ok());
}

TEST(Auth, ReadSecretFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("sdx_auth_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  };
  std::string out, error;
  ASSERT_TRUE(read_secret_file(write("a", "tok\n"), "--auth-token-file", &out, &error)) << error;
  EXPECT_EQ(out, "tok");
  ASSERT_TRUE(read_secret_file(write("b", "tok\r\n"), "--auth-token-file", &out, &error)) << error;
  EXPECT_EQ(out, "tok");
  ASSERT_TRUE(read_secret_file(write("c", "tok"), "--auth-token-file", &out, &error)) << error;
  EXPECT_EQ(out, "tok");
  EXPECT_FALSE(read_secret_file(write("d", ""), "--auth-token-file", &out, &error));
  EXPECT_NE(error.find("is empty"), std::string::npos) << error;
  EXPECT_FALSE(read_secret_file(write("e", "\n"), "--auth-token-file", &out, &error));
  EXPECT_FALSE(read_secret_file((dir / "absent").string(), "--tls-cert", &out, &error));
  EXPECT_NE(error.find("--tls-cert: cannot read"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);  // one line
  std::filesystem::remove_all(dir);
}

TEST(Auth, TlsOptionsGoTogether) {
  std::vector<const char*> args = {"sdx-serve", "--model-repository", "m", "--tls-cert", "c.pem"};
  ServerOptions o;
  std::string error;
  EXPECT_FALSE(parse_server_options(static_cast<int>(args.size()), args.data(), &o, &error));
  EXPECT_EQ(error, "--tls-cert and --tls-key go together");
  args.insert(args.end(), {"--tls-key", "k.pem", "--auth-token-file", "t"});
  ServerOptions p;
  ASSERT_TRUE(parse_server_options(static_cast<int>(args.size()), args.data(), &p, &error)) << error;
  EXPECT_EQ(p.tls_cert, "c.pem");
  EXPECT_EQ(p.tls_key, "k.pem");
  EXPECT_EQ(p.auth_token_file, "t");
}

}  // namespace
}  // namespace sdx::serve
