// Bad-input tests for ONNX import: truncated and random bytes, missing
// definitions, and external data that tries to escape the model folder.
#include "frontend/onnx/onnx_loader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <random>

#include "frontend/onnx/external_data.h"
#include "sdx_onnx.pb.h"

namespace sdx::onnx {
namespace {
namespace fs = std::filesystem;

sdx_onnx::ModelProto relu_model() {
  sdx_onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("relu0");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sdx_loader_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

// A model whose initializer 'w' (4 floats) lives in external data at `location`, with one more
// external_data entry `key` = `value`.
std::string external_model_with(const std::string& location, const std::string& key, const std::string& value) {
  auto m = relu_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(4);
  w->set_data_location(sdx_onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  kv = w->add_external_data();
  kv->set_key(key);
  kv->set_value(value);
  return m.SerializeAsString();
}

std::string external_model(const std::string& location, int64_t length = 16) {
  return external_model_with(location, "length", std::to_string(length));
}

TEST(OnnxLoader, LoadsMinimalModel) {
  auto r = load_model_bytes(relu_model().SerializeAsString());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->graph->nodes().size(), 1u);
  EXPECT_EQ(r->graph->nodes()[0]->opset(), 17);
}

TEST(OnnxLoader, EmptyBytesAreRejected) {
  auto r = load_model_bytes("");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);
}

TEST(OnnxLoader, TruncatedModelIsRejected) {
  std::string bytes = relu_model().SerializeAsString();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 1, size_t{3}}) {
    auto r = load_model_bytes(bytes.substr(0, cut));
    EXPECT_FALSE(r.is_ok()) << "cut at " << cut;
  }
}

TEST(OnnxLoader, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(static_cast<size_t>(rng() % 512 + 1), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto r = load_model_bytes(bytes);  // must return, OK or not
    (void)r;
  }
  // Mutations of a valid model: flip bytes, never crash.
  std::string good = relu_model().SerializeAsString();
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = good;
    bytes[rng() % bytes.size()] = static_cast<char>(rng());
    auto r = load_model_bytes(bytes);
    (void)r;
  }
  SUCCEED();
}

TEST(OnnxLoader, UndefinedInputNamesTheNode) {
  auto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "nope");
  auto r = load_model_bytes(m.SerializeAsString());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("relu0"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

TEST(OnnxLoader, RawDataLengthIsChecked) {
  auto m = relu_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(4);
  w->set_raw_data(std::string(15, '\0'));
  auto r = load_model_bytes(m.SerializeAsString());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("'w'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("16"), std::string::npos) << r.status().message();
}

TEST(OnnxLoader, HugeDimsAreRejected) {
  auto m = relu_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 40);
  auto r = load_model_bytes(m.SerializeAsString());
  EXPECT_FALSE(r.is_ok());
}

TEST(OnnxLoader, DataLengthIsCheckedBeforeAllocating) {
  // 2^33 floats (32 GiB) declared, 4 bytes present: must fail on the length check,
  // not by trying to allocate what the file does not contain.
  auto m = relu_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(int64_t{1} << 33);
  w->set_raw_data(std::string(4, '\0'));
  auto r = load_model_bytes(m.SerializeAsString());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("raw_data has 4 bytes"), std::string::npos) << r.status().message();
  w->clear_raw_data();
  w->add_float_data(1.f);
  r = load_model_bytes(m.SerializeAsString());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("float_data holds 1 values"), std::string::npos) << r.status().message();
}

TEST(ExternalData, ReadsFileInsideFolder) {
  TempDir d;
  write_file(d.path() + "/w.bin", std::string(16, '\x01'));
  write_file(d.path() + "/model.onnx", external_model("w.bin"));
  auto r = load_model_file(d.path() + "/model.onnx");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
}

TEST(ExternalData, RejectsEscapes) {
  TempDir d;
  fs::create_directory(d.path() + "/m");
  write_file(d.path() + "/secret.bin", std::string(16, 'S'));
  write_file(d.path() + "/m/w.bin", std::string(16, '\x01'));
  struct Case {
    std::string location, expect;
  } cases[] = {
      {"../secret.bin", ".."},
      {"/etc/passwd", "absolute"},
      {"sub/../../secret.bin", ".."},
      {"missing.bin", "not found"},
  };
  for (const Case& c : cases) {
    write_file(d.path() + "/m/model.onnx", external_model(c.location));
    auto r = load_model_file(d.path() + "/m/model.onnx");
    ASSERT_FALSE(r.is_ok()) << c.location;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("'w'"), std::string::npos) << r.status().message();
  }
  // A symlink pointing outside.
  ASSERT_EQ(symlink((d.path() + "/secret.bin").c_str(), (d.path() + "/m/link.bin").c_str()), 0);
  write_file(d.path() + "/m/model.onnx", external_model("link.bin"));
  auto r = load_model_file(d.path() + "/m/model.onnx");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("symbolic"), std::string::npos) << r.status().message();
  // A hard link to a file outside.
  ASSERT_EQ(link((d.path() + "/secret.bin").c_str(), (d.path() + "/m/hard.bin").c_str()), 0);
  write_file(d.path() + "/m/model.onnx", external_model("hard.bin"));
  r = load_model_file(d.path() + "/m/model.onnx");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("hard link"), std::string::npos) << r.status().message();
}

TEST(ExternalData, LengthMustMatchDims) {
  TempDir d;
  write_file(d.path() + "/w.bin", std::string(64, '\x01'));
  write_file(d.path() + "/model.onnx", external_model("w.bin", 12));
  auto r = load_model_file(d.path() + "/model.onnx");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("length"), std::string::npos) << r.status().message();
  // File shorter than the declared length.
  write_file(d.path() + "/w.bin", std::string(8, '\x01'));
  write_file(d.path() + "/model.onnx", external_model("w.bin", 16));
  r = load_model_file(d.path() + "/model.onnx");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("exceeds"), std::string::npos) << r.status().message();
}

// A FIFO with no writer, or a device, named as external data errors at once instead of blocking the
// load (the file is opened O_NONBLOCK and must be a regular file before any read).
TEST(ExternalData, FifoAndDeviceErrorWithinOneSecond) {
  TempDir d;
  ASSERT_EQ(mkfifo((d.path() + "/fifo.bin").c_str(), 0600), 0);
  std::vector<std::string> locations = {"fifo.bin"};
  if (mknod((d.path() + "/zero.bin").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0) locations.push_back("zero.bin");
  else std::cerr << "mknod not permitted here: only the FIFO is checked\n";
  for (const std::string& location : locations) {
    write_file(d.path() + "/model.onnx", external_model(location));
    const auto start = std::chrono::steady_clock::now();
    auto r = load_model_file(d.path() + "/model.onnx");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(r.is_ok()) << location;
    EXPECT_LT(seconds, 1.0) << location;
    EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
  }
}

// offset and length are decimal digits only: "0x4" is not 0, "-1" is not "to the end", "4junk" is not 4.
TEST(ExternalData, OffsetAndLengthAreParsedStrictly) {
  TempDir d;
  write_file(d.path() + "/w.bin", std::string(32, '\x01'));
  for (const std::string key : {"offset", "length"}) {
    for (const std::string value : {"0x4", "-1", "4junk", "", " 4", "+4", "99999999999999999999999"}) {
      write_file(d.path() + "/model.onnx", external_model_with("w.bin", key, value));
      auto r = load_model_file(d.path() + "/model.onnx");
      ASSERT_FALSE(r.is_ok()) << key << "=" << value;
      EXPECT_NE(r.status().message().find("'" + key + "'"), std::string::npos) << r.status().message();
    }
  }
  EXPECT_EQ(parse_external_data_number("16").value(), 16);
  EXPECT_EQ(parse_external_data_number("9223372036854775807").value(), INT64_MAX);
  EXPECT_FALSE(parse_external_data_number("9223372036854775808").is_ok());
}

TEST(OnnxLoader, IrVersionAndOpsetsOutsideTheSpecAreRejected) {
  for (int64_t ir : {int64_t{-1}, int64_t{0}, int64_t{1} << 40}) {
    auto m = relu_model();
    m.set_ir_version(ir);
    auto r = load_model_bytes(m.SerializeAsString());
    ASSERT_FALSE(r.is_ok()) << ir;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidGraph);
    EXPECT_NE(r.status().message().find("ir_version"), std::string::npos) << r.status().message();
  }
  for (int64_t v : {int64_t{-1}, int64_t{0}, (int64_t{1} << 32) + 17}) {
    auto m = relu_model();
    m.mutable_opset_import(0)->set_version(v);
    auto r = load_model_bytes(m.SerializeAsString());
    ASSERT_FALSE(r.is_ok()) << v;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidGraph) << r.status().to_string();
  }
  auto m = relu_model();
  m.add_opset_import()->set_version(13);  // the default domain again
  auto r = load_model_bytes(m.SerializeAsString());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("twice"), std::string::npos) << r.status().message();
}

TEST(OnnxLoader, SparseValueTypesAreRejected) {
  auto m = relu_model();
  auto* vi = m.mutable_graph()->add_value_info();
  vi->set_name("y");
  vi->mutable_type()->mutable_sparse_tensor_type()->set_elem_type(1);
  auto r = load_model_bytes(m.SerializeAsString());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("sparse"), std::string::npos) << r.status().message();
}

TEST(ExternalData, BytesModelCannotUseExternalData) {
  auto r = load_model_bytes(external_model("w.bin"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("bytes"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace sdx::onnx
