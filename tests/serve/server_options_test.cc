#include "serve/server_options.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sdx::serve
