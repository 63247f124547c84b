// The public C++ API (include/sdx/) as a user sees it: this file is compiled with include/ as its only
// sdx include path (tests/CMakeLists.txt, target sdx_public_api_test), so a public header that reaches
// into src/ fails to build here. It loads and runs a tiny model and checks the errors of malformed ones.
//
// The models are embedded as bytes (no binary is committed), generated with onnx 1.23.2:
//
//   from onnx import helper, TensorProto
//   g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
//       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
//       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
//   m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8, producer_name="sdx-test")
//   # kDanglingInput: the same with the node reading "missing" (no such value), x and y of shape [4].
//   # kAddWeights: y = x + w, w an initializer float[4] = {1, 2, 3, 4} (16 bytes), built the same way.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sdx/sdx.h"

namespace {

const unsigned char kReluModel[] = {
    8,  8,   18, 8,   115, 100, 120, 45, 116, 101, 115, 116, 58,  75,  10, 18,  10,  1,  120, 18, 1,   121, 26, 4,
    114, 101, 108, 117, 34,  4,   82, 101, 108, 117, 18,  1,   103, 90,  24, 10,  1,   120, 18,  19, 10,  17,  8,  1,
    18, 13,  10, 7,   18,  5,   98,  97, 116, 99,  104, 10,  2,   8,   4,  98,  24,  10, 1,   121, 18,  19,  10, 17,
    8,  1,   18, 13,  10,  7,   18,  5,  98,  97,  116, 99,  104, 10,  2,  8,   4,   66, 4,   10, 0,   16,  17};
const unsigned char kDanglingInput[] = {
    8,   8,   58,  63, 10,  24,  10,  7,   109, 105, 115, 115, 105, 110, 103, 18, 1,  121, 26, 4,  114, 101, 108, 117,
    34,  4,   82,  101, 108, 117, 18,  1,   103, 90,  15,  10,  1,   120, 18,  10, 10, 8,   8,  1,  18,  4,   10,  2,
    8,   4,   98,  15,  10,  1,   121, 18,  10,  10,  8,   8,   1,   18,  4,   10, 2,  8,   4,  66, 4,   10,  0,   16,
    17};

const unsigned char kAddWeights[] = {
    8,   8,   18,  8,  115, 100, 120, 45,  116, 101, 115, 116, 58,  103, 10,  19,  10,  1,   120, 10,  1,   119,
    18,  1,   121, 26, 3,   97,  100, 100, 34,  3,   65,  100, 100, 18,  1,   103, 42,  25,  8,   4,   16,  1,
    34,  16,  0,   0,  128, 63,  0,   0,   0,   64,  0,   0,   64,  64,  0,   0,   128, 64,  66,  1,   119, 90,
    24,  10,  1,   120, 18,  19,  10,  17,  8,   1,   18,  13,  10,  7,   18,  5,   98,  97,  116, 99,  104, 10,
    2,   8,   4,   98,  24,  10,  1,   121, 18,  19,  10,  17,  8,   1,   18,  13,  10,  7,   18,  5,   98,  97,
    116, 99,  104, 10,  2,   8,   4,   66,  4,   10,  0,   16,  17};

std::string bytes_of(const unsigned char* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

sdx::Session load_relu(const sdx::SessionOptions& options = {}) {
  sdx::Result<sdx::Session> s = sdx::Session::load_bytes(bytes_of(kReluModel, sizeof(kReluModel)), options);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return std::move(s).value();
}

TEST(PublicApi, DescribesInputsAndOutputs) {
  sdx::Session s = load_relu();
  ASSERT_EQ(s.inputs().size(), 1u);
  ASSERT_EQ(s.outputs().size(), 1u);
  const sdx::ValueInfo& x = s.inputs()[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.type, "tensor(float)");
  EXPECT_TRUE(x.is_tensor);
  EXPECT_EQ(x.element_type, sdx::ElementType::kFloat32);
  ASSERT_TRUE(x.has_shape);
  ASSERT_EQ(x.shape.size(), 2u);
  EXPECT_EQ(x.shape[0].param, "batch");
  EXPECT_EQ(x.shape[1].value, 4);
  EXPECT_EQ(s.output_index("y"), 0);
  EXPECT_EQ(s.input_index("nope"), -1);
  EXPECT_TRUE(s.has_value("x"));
  EXPECT_FALSE(s.has_value("nope"));
}

TEST(PublicApi, RunsWithNamedInputsAndReports) {
  sdx::Session s = load_relu();
  const int64_t dims[] = {1, 4};
  const float x[] = {-1, 2, -3, 4};
  sdx::Result<sdx::Value> v = sdx::Value::borrow({sdx::ElementType::kFloat32, dims, 2, x});
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  sdx::RunReport report;
  for (int call = 1; call <= 3; ++call) {
    sdx::Result<std::vector<sdx::Value>> outs = s.run({{"x", v.value()}}, {"y"}, &report);
    ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
    ASSERT_EQ(outs.value().size(), 1u);
    const sdx::Value& y = outs.value()[0];
    ASSERT_TRUE(y.is_tensor());
    EXPECT_EQ(y.element_type(), sdx::ElementType::kFloat32);
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 4}));
    ASSERT_EQ(y.nbytes(), 4 * sizeof(float));
    const float* py = static_cast<const float*>(y.data());
    EXPECT_EQ(py[0], 0);
    EXPECT_EQ(py[1], 2);
    EXPECT_EQ(py[2], 0);
    EXPECT_EQ(py[3], 4);
    EXPECT_EQ(report.call_count, call);
    EXPECT_GT(report.slot_count, 0);
    EXPECT_STRNE(report.execution_mode, "");
  }
}

TEST(PublicApi, PositionalRunReplaysOnAContext) {
  sdx::Session s = load_relu();
  std::unique_ptr<sdx::RunContext> ctx = s.acquire_context();
  const int64_t dims[] = {2, 4};
  const float x[] = {-1, 2, -3, 4, 5, -6, 7, -8};
  const sdx::TensorView args[] = {{sdx::ElementType::kFloat32, dims, 2, x}};
  sdx::RunReport report;
  for (int call = 0; call < 4; ++call) {
    sdx::Status st = s.run(*ctx, args, 1, {}, &report);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }
  EXPECT_STREQ(report.phase, "REPLAYING");
  EXPECT_GT(report.replay_count, 0);
  ASSERT_EQ(ctx->num_outputs(), 1u);
  sdx::TensorView y;
  ASSERT_TRUE(ctx->output_view(0, &y));
  ASSERT_EQ(y.rank, 2);
  EXPECT_EQ(y.dims[0], 2);
  float copy[8] = {};
  void* dst[] = {copy};
  s.copy_outputs(*ctx, dst);
  const float expected[] = {0, 2, 0, 4, 5, 0, 7, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(copy[i], expected[i]) << i;
  s.release_context(std::move(ctx));
}

TEST(PublicApi, InputErrorsAreValues) {
  sdx::Session s = load_relu();
  const int64_t dims[] = {1, 3};
  const float x[] = {1, 2, 3};
  sdx::Result<std::vector<sdx::Value>> outs =
      s.run({{"x", sdx::Value::borrow({sdx::ElementType::kFloat32, dims, 2, x}).value()}});
  ASSERT_FALSE(outs.is_ok());
  EXPECT_EQ(outs.status().code(), sdx::StatusCode::kInvalidArgument);
  EXPECT_NE(outs.status().message().find("'x'"), std::string::npos) << outs.status().message();
}

TEST(PublicApi, OptionsComeFromTheTable) {
  const std::vector<sdx::OptionInfo> table = sdx::SessionOptions::table();
  bool found = false;
  for (const sdx::OptionInfo& row : table)
    if (row.name == "warmup_runs") {
      found = true;
      EXPECT_EQ(row.env, "SDX_WARMUP_ITERATIONS");
      EXPECT_EQ(std::get<int64_t>(row.default_value), 1);
    }
  EXPECT_TRUE(found);

  sdx::SessionOptions o;
  ASSERT_TRUE(o.set("warmup_runs", int64_t{3}).is_ok());
  EXPECT_EQ(std::get<int64_t>(o.get("warmup_runs").value()), 3);
  ASSERT_TRUE(o.set("execution_mode", std::string("SLOT_BY_SLOT")).is_ok());
  sdx::Status unknown = o.set("warmup_rounds", int64_t{3});
  EXPECT_EQ(unknown.code(), sdx::StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("warmup_runs"), std::string::npos) << unknown.message();
  sdx::Status bad = o.set("plan_cache_memory_fraction", 2.0);
  EXPECT_EQ(bad.code(), sdx::StatusCode::kInvalidArgument) << bad.to_string();
  sdx::Status wrong_type = o.set("execution_mode", std::string("WARP_DRIVE"));
  EXPECT_EQ(wrong_type.code(), sdx::StatusCode::kInvalidArgument) << wrong_type.to_string();

  sdx::Session s = load_relu(o);
  const int64_t dims[] = {1, 4};
  const float x[] = {1, 2, 3, 4};
  sdx::RunReport report;
  ASSERT_TRUE(s.run({{"x", sdx::Value::borrow({sdx::ElementType::kFloat32, dims, 2, x}).value()}}, {}, &report).is_ok());
  EXPECT_STREQ(report.mode_requested, "SLOT_BY_SLOT");
}

TEST(PublicApi, MalformedModelsGiveClearErrors) {
  sdx::Result<sdx::Session> garbage = sdx::Session::load_bytes("this is not an ONNX model");
  ASSERT_FALSE(garbage.is_ok());
  EXPECT_FALSE(garbage.status().message().empty());

  sdx::Result<sdx::Session> dangling = sdx::Session::load_bytes(bytes_of(kDanglingInput, sizeof(kDanglingInput)));
  ASSERT_FALSE(dangling.is_ok());
  EXPECT_EQ(dangling.status().code(), sdx::StatusCode::kInvalidArgument) << dangling.status().to_string();
  // The message names the offending value and the node that reads it.
  EXPECT_NE(dangling.status().message().find("missing"), std::string::npos) << dangling.status().message();
  EXPECT_NE(dangling.status().message().find("relu"), std::string::npos) << dangling.status().message();

  sdx::Result<sdx::Session> absent = sdx::Session::load("/nonexistent/sdx_public_api_model.onnx");
  ASSERT_FALSE(absent.is_ok());
  EXPECT_EQ(absent.status().code(), sdx::StatusCode::kNotFound);
  EXPECT_NE(absent.status().message().find("/nonexistent/sdx_public_api_model.onnx"), std::string::npos)
      << absent.status().message();
}

TEST(PublicApi, CompilesABundleAndLoadsIt) {
  const int64_t dims[] = {1, 4};
  const float x[] = {1, -2, 3, -4};
  sdx::Result<std::string> bundle = sdx::compile_bundle(bytes_of(kReluModel, sizeof(kReluModel)), {},
                                                        {{{"x", {sdx::ElementType::kFloat32, dims, 2, x}}}});
  ASSERT_TRUE(bundle.is_ok()) << bundle.status().to_string();
  sdx::Session s = std::move(sdx::Session::load_bytes(bundle.value())).value();
  sdx::Result<std::vector<sdx::Value>> outs =
      s.run({{"x", sdx::Value::borrow({sdx::ElementType::kFloat32, dims, 2, x}).value()}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(static_cast<const float*>(outs.value()[0].data())[2], 3);
}

}  // namespace

TEST(PublicApi, WeightBytesCountTheInitializersKept) {
  EXPECT_EQ(load_relu().weight_bytes(), 0);  // no initializer
  sdx::Result<sdx::Session> s = sdx::Session::load_bytes(bytes_of(kAddWeights, sizeof(kAddWeights)));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s.value().weight_bytes(), 16);  // w: 4 floats
}
