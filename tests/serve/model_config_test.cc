#include "serve/model_config.h"

#include <gtest/gtest.h>

namespace sdx::serve {
namespace {

TEST(ModelConfigTest, ParsesAndValidates) {
  Result<ModelConfig> c = parse_model_config(
      R"({"max_batch_size": 16, "dynamic_batching": {"preferred_batch_size": [16, 4, 4],
          "max_queue_delay_microseconds": 500}})",
      "m/config.json");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c.value().max_batch_size, 16);
  EXPECT_TRUE(c.value().dynamic_batching);
  EXPECT_EQ(c.value().preferred_batch_sizes, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(c.value().max_queue_delay_us, 500);
  EXPECT_FALSE(c.value().pad_to_preferred);
  Result<ModelConfig> padded = parse_model_config(
      R"({"max_batch_size": 8,
          "dynamic_batching": {"preferred_batch_size": [4, 8], "pad_to_preferred_batch_size": true}})",
      "m/config.json");
  ASSERT_TRUE(padded.is_ok()) << padded.status().message();
  EXPECT_TRUE(padded.value().pad_to_preferred);
  EXPECT_FALSE(parse_model_config(R"({"max_batch_size": 4})", "f").value().dynamic_batching);
  EXPECT_EQ(parse_model_config("{}", "f").value().max_batch_size, 0);

  auto error = [](const std::string& text) { return parse_model_config(text, "m/config.json").status().message(); };
  EXPECT_EQ(error(R"({"max_batch_size": "8"})"),
            "m/config.json: field 'max_batch_size' must be an integer, not a string");
  EXPECT_EQ(error(R"({"max_batch_size": -1})"), "m/config.json: field 'max_batch_size' must be in 0..1048576, not -1");
  EXPECT_EQ(error(R"({"max_batch_size": 2.5})"), "m/config.json: field 'max_batch_size' must be an integer, not 2.5");
  EXPECT_NE(error(R"({"max_batch": 8})").find("field 'max_batch' is not a known field"), std::string::npos);
  EXPECT_NE(error(R"({"dynamic_batching": {}})").find("field 'dynamic_batching' needs \"max_batch_size\""),
            std::string::npos);
  EXPECT_NE(error(R"({"max_batch_size": 4, "dynamic_batching": {"preferred_batch_size": [8]}})")
                .find("field 'dynamic_batching.preferred_batch_size[0]' must be in 1..4, not 8"),
            std::string::npos);
  EXPECT_NE(error(R"({"max_batch_size": 4, "dynamic_batching": {"delay": 1}})")
                .find("field 'dynamic_batching.delay' is not a known field"),
            std::string::npos);
  EXPECT_EQ(error(R"({"max_batch_size": 4, "dynamic_batching": {"pad_to_preferred_batch_size": 1}})"),
            "m/config.json: field 'dynamic_batching.pad_to_preferred_batch_size' must be true or false, not a number");
  EXPECT_NE(error("{\"max_batch_size\": 4").find("m/config.json: is not valid JSON"), std::string::npos);
  EXPECT_NE(error("[1]").find("must hold an object"), std::string::npos);
}

TEST(ModelConfigTest, InstanceGroup) {
  Result<ModelConfig> c = parse_model_config(R"({"instance_group": [{"count": 4, "kind": "KIND_AUTO"}]})", "f");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c.value().instance_count, 4);
  EXPECT_EQ(parse_model_config(R"({"instance_group": [{"count": 2}]})", "f").value().instance_count, 2);
  EXPECT_EQ(parse_model_config("{}", "f").value().instance_count, 0);
  auto error = [](const std::string& text) { return parse_model_config(text, "m/config.json").status().message(); };
  EXPECT_EQ(error(R"({"instance_group": [{"count": 0}]})"),
            "m/config.json: field 'instance_group[0].count' must be in 1..1024, not 0");
  EXPECT_NE(error(R"({"instance_group": [{"count": 1}, {"count": 2}]})").find("exactly one group"), std::string::npos);
  EXPECT_NE(error(R"({"instance_group": [{"count": 1, "kind": "KIND_GPU"}]})").find("runs models on the CPU"),
            std::string::npos);
  EXPECT_NE(error(R"({"instance_group": [{"gpus": [0]}]})").find("'instance_group[0].gpus' is not a known field"),
            std::string::npos);
  EXPECT_NE(error(R"({"instance_group": {"count": 1}})").find("must be an array"), std::string::npos);
}

}  // namespace
}  // namespace sdx::serve
