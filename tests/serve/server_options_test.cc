#include "serve/server_options.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sdx::serve {
namespace {

bool parse(std::vector<const char*> args, ServerOptions* opts, std::string* error) {
  args.insert(args.begin(), "sdx-serve");
  return parse_server_options(static_cast<int>(args.size()), args.data(), opts, error);
}

TEST(ServerOptions, DefaultsAndValues) {
  ServerOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--model-repository", "models"}, &o, &error)) << error;
  EXPECT_EQ(o.model_repository, "models");
  EXPECT_EQ(o.host, "127.0.0.1");  // loopback unless told otherwise
  EXPECT_EQ(o.port, 8001);
  ServerOptions p;
  ASSERT_TRUE(parse({"--model-repository=m", "--host", "0.0.0.0", "--port=0", "--max-message-bytes", "4096"}, &p,
                    &error)) << error;
  EXPECT_EQ(p.host, "0.0.0.0");
  EXPECT_EQ(p.port, 0);
  EXPECT_EQ(p.max_message_bytes, 4096);
}

TEST(ServerOptions, AdmissionAndMetrics) {
  ServerOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--model-repository", "m"}, &o, &error)) << error;
  EXPECT_EQ(o.metrics_port, 8002);
  EXPECT_EQ(o.max_queue, 64);
  EXPECT_EQ(o.model_concurrency, 0);  // the hardware threads
  EXPECT_FALSE(o.log_requests);
  ServerOptions p;
  ASSERT_TRUE(parse({"--model-repository", "m", "--metrics-port", "0", "--max-queue=1", "--log-requests",
                     "--model-concurrency", "2"}, &p, &error)) << error;
  EXPECT_EQ(p.metrics_port, 0);
  EXPECT_EQ(p.max_queue, 1);
  EXPECT_EQ(p.model_concurrency, 2);
  EXPECT_TRUE(p.log_requests);
  ServerOptions q;
  EXPECT_FALSE(parse({"--model-repository", "m", "--max-queue", "0"}, &q, &error));
  EXPECT_NE(error.find("--max-queue"), std::string::npos);
  EXPECT_FALSE(parse({"--model-repository", "m", "--metrics-port", "70000"}, &q, &error));
  EXPECT_NE(error.find("--metrics-port"), std::string::npos);
}

TEST(ServerOptions, MaxModelBytes) {
  ServerOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--model-repository", "m"}, &o, &error)) << error;
  EXPECT_EQ(o.max_model_bytes, int64_t{2} << 30);
  ASSERT_TRUE(parse({"--model-repository", "m", "--max-model-bytes", "8589934592"}, &o, &error)) << error;
  EXPECT_EQ(o.max_model_bytes, int64_t{8} << 30);  // past 2 GiB: uploads come in chunks
  ServerOptions p;
  EXPECT_FALSE(parse({"--model-repository", "m", "--max-model-bytes", "0"}, &p, &error));
  EXPECT_NE(error.find("--max-model-bytes"), std::string::npos) << error;
}

TEST(ServerOptions, UsageErrorsAreOneLine) {
  const std::vector<std::vector<const char*>> bad = {
      {},                                                  // no repository
      {"--model-repository"},                              // no value
      {"--model-repository", "m", "--port", "65536"},      // out of range
      {"--model-repository", "m", "--port", "80x"},        // not a number
      {"--model-repository", "m", "--max-message-bytes", "10"},
      {"--model-repository", "m", "--verbose"},            // unknown
  };
  for (const auto& args : bad) {
    ServerOptions o;
    std::string error;
    EXPECT_FALSE(parse(args, &o, &error));
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(ServerOptions, MemoryBudgetTakesSuffixes) {
  ServerOptions o;
  std::string error;
  ASSERT_TRUE(parse({"--model-repository", "m"}, &o, &error)) << error;
  EXPECT_EQ(o.memory_budget, 0);  // unlimited
  EXPECT_EQ(o.model_cache_dir, "");
  const std::vector<std::pair<const char*, int64_t>> sizes = {
      {"0", 0}, {"1000", 1000}, {"512K", 512 << 10}, {"512M", int64_t{512} << 20}, {"2G", int64_t{2} << 30},
      {"3T", int64_t{3} << 40}, {"2GiB", int64_t{2} << 30}, {"7MiB", int64_t{7} << 20}};
  for (const auto& [text, bytes] : sizes) {
    ServerOptions p;
    ASSERT_TRUE(parse({"--model-repository", "m", "--memory-budget", text}, &p, &error)) << text << ": " << error;
    EXPECT_EQ(p.memory_budget, bytes) << text;
  }
  ServerOptions p;
  ASSERT_TRUE(parse({"--model-repository", "m", "--memory-budget=1G", "--model-cache-dir", "/tmp/c"}, &p, &error));
  EXPECT_EQ(p.memory_budget, int64_t{1} << 30);
  EXPECT_EQ(p.model_cache_dir, "/tmp/c");
  for (const char* bad : {"", "-1", "1.5G", "2g", "G", "12X", "1 G", "9999999999T", "99999999999999999999"}) {
    ServerOptions q;
    EXPECT_FALSE(parse({"--model-repository", "m", "--memory-budget", bad}, &q, &error)) << bad;
    EXPECT_NE(error.find("--memory-budget"), std::string::npos) << error;
  }
  ServerOptions q;
  EXPECT_FALSE(parse({"--model-repository", "m", "--model-cache-dir="}, &q, &error));
  EXPECT_NE(error.find("--model-cache-dir"), std::string::npos) << error;
  EXPECT_NE(std::string(server_usage()).find("--memory-budget BYTES"), std::string::npos);
}

}  // namespace
}  // namespace sdx::serve
