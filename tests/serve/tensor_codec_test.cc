#include "serve/tensor_codec.h"

#include <gtest/gtest.h>

#include <cstring>

namespace sdx::serve {
namespace {

using InputTensor = inference::ModelInferRequest::InferInputTensor;

InputTensor tensor(const std::string& name, const std::string& datatype, std::vector<int64_t> shape) {
  InputTensor t;
  t.set_name(name);
  t.set_datatype(datatype);
  for (int64_t d : shape) t.add_shape(d);
  return t;
}

std::string raw_floats(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

ValueInfo float_input(const std::string& name) {
  ValueInfo info;
  info.name = name;
  info.type = "tensor(float)";
  info.is_tensor = true;
  info.element_type = ElementType::kFloat32;
  return info;
}

TEST(TensorCodec, RawFloatsDecodeToTheirBytes) {
  const std::string raw = raw_floats({1, 2, 3, 4, 5, 6});
  Value v;
  ASSERT_TRUE(decode_input(tensor("x", "FP32", {2, 3}), &raw, ElementType::kFloat32, &v).is_ok());
  EXPECT_EQ(v.element_type(), ElementType::kFloat32);
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(v.nbytes(), raw.size());
  EXPECT_EQ(std::memcmp(v.data(), raw.data(), raw.size()), 0);
}

TEST(TensorCodec, RawByteCountMustEqualDtypeTimesShape) {
  const std::string raw = raw_floats({1, 2, 3, 4, 5});  // 20 bytes; FP32 [2, 3] takes 24
  Value v;
  Status st = decode_input(tensor("x", "FP32", {2, 3}), &raw, ElementType::kFloat32, &v);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("input 'x'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("20 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("takes 24"), std::string::npos) << st.message();
  const std::string more = raw + std::string(8, '\0');  // 28 bytes: too many is refused too
  EXPECT_EQ(decode_input(tensor("x", "FP32", {2, 3}), &more, ElementType::kFloat32, &v).code(),
            StatusCode::kInvalidArgument);
}

TEST(TensorCodec, DatatypeMustBeKnownAndTheModels) {
  const std::string raw(8, '\0');
  Value v;
  Status unknown = decode_input(tensor("x", "FLOAT", {2}), &raw, ElementType::kFloat32, &v);
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("unknown datatype 'FLOAT'"), std::string::npos) << unknown.message();
  Status wrong = decode_input(tensor("x", "FP64", {1}), &raw, ElementType::kFloat32, &v);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("the model's input is FP32"), std::string::npos) << wrong.message();
}

TEST(TensorCodec, NegativeDimIsRefused) {
  const std::string raw;
  Value v;
  EXPECT_EQ(decode_input(tensor("x", "FP32", {-1, 3}), &raw, ElementType::kFloat32, &v).code(),
            StatusCode::kInvalidArgument);
}

TEST(TensorCodec, TypedContentsCountMustMatch) {
  InputTensor t = tensor("ids", "INT64", {3});
  for (int64_t i : {7, 8, 9}) t.mutable_contents()->add_int64_contents(i);
  Value v;
  ASSERT_TRUE(decode_input(t, nullptr, ElementType::kInt64, &v).is_ok());
  EXPECT_EQ(static_cast<const int64_t*>(v.data())[2], 9);
  t.mutable_contents()->add_int64_contents(10);
  Status st = decode_input(t, nullptr, ElementType::kInt64, &v);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("4 values in contents.int64_contents"), std::string::npos) << st.message();
}

TEST(TensorCodec, NarrowTypesReadTheirWideField) {
  InputTensor t = tensor("b", "UINT8", {2});
  t.mutable_contents()->add_uint_contents(200);
  t.mutable_contents()->add_uint_contents(3);
  Value v;
  ASSERT_TRUE(decode_input(t, nullptr, ElementType::kUint8, &v).is_ok());
  EXPECT_EQ(static_cast<const uint8_t*>(v.data())[0], 200);
  InputTensor half = tensor("h", "FP16", {1});
  half.mutable_contents()->add_fp32_contents(1.0f);
  EXPECT_EQ(decode_input(half, nullptr, ElementType::kFloat16, &v).code(), StatusCode::kInvalidArgument);
}

TEST(TensorCodec, RawBytesAreLengthPrefixed) {
  std::string raw;
  for (std::string s : {"ab", "", "xyz"}) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    raw.append(reinterpret_cast<const char*>(&n), 4);  // little-endian on the machines sdx builds for
    raw += s;
  }
  Value v;
  ASSERT_TRUE(decode_input(tensor("s", "BYTES", {3}), &raw, ElementType::kString, &v).is_ok());
  EXPECT_EQ(v.string_at(0), "ab");
  EXPECT_EQ(v.string_at(1), "");
  EXPECT_EQ(v.string_at(2), "xyz");
  EXPECT_EQ(decode_input(tensor("s", "BYTES", {2}), &raw, ElementType::kString, &v).code(),
            StatusCode::kInvalidArgument);  // three elements for a shape of two
  const std::string cut = raw.substr(0, raw.size() - 1);
  Status st = decode_input(tensor("s", "BYTES", {3}), &cut, ElementType::kString, &v);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("end inside element 2"), std::string::npos) << st.message();
}

TEST(TensorCodec, RequestInputsAreCheckedAgainstTheModel) {
  const std::vector<ValueInfo> model = {float_input("a"), float_input("b")};
  inference::ModelInferRequest req;
  *req.add_inputs() = tensor("a", "FP32", {1});
  req.add_raw_input_contents(raw_floats({1}));
  Session::Feeds feeds;
  Status missing = decode_inputs(req, model, &feeds);
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("input 'b': missing"), std::string::npos) << missing.message();

  *req.add_inputs() = tensor("c", "FP32", {1});
  req.add_raw_input_contents(raw_floats({2}));
  feeds.clear();
  Status unknown = decode_inputs(req, model, &feeds);
  EXPECT_NE(unknown.message().find("input 'c': the model has no such input"), std::string::npos) << unknown.message();

  req.mutable_inputs(1)->set_name("a");
  feeds.clear();
  EXPECT_NE(decode_inputs(req, model, &feeds).message().find("given twice"), std::string::npos);

  req.mutable_inputs(1)->set_name("b");
  req.add_raw_input_contents(raw_floats({3}));  // three raw entries for two inputs
  feeds.clear();
  EXPECT_EQ(decode_inputs(req, model, &feeds).code(), StatusCode::kInvalidArgument);
}

TEST(TensorCodec, OutputsEncodeAsRawContents) {
  const int64_t dims[] = {2};
  const float y[] = {1.5f, -2.0f};
  std::vector<Value> values = {Value::copy_of({ElementType::kFloat32, dims, 1, y}).value(),
                               Value::strings({"hi", "there"}, {2}).value()};
  inference::ModelInferResponse resp;
  ASSERT_TRUE(encode_outputs({"y", "s"}, values, &resp).is_ok());
  ASSERT_EQ(resp.outputs_size(), 2);
  EXPECT_EQ(resp.outputs(0).datatype(), "FP32");
  EXPECT_EQ(resp.outputs(0).shape(0), 2);
  EXPECT_EQ(resp.raw_output_contents(0), raw_floats({1.5f, -2.0f}));
  EXPECT_EQ(resp.outputs(1).datatype(), "BYTES");
  EXPECT_EQ(resp.raw_output_contents(1), std::string("\x02\0\0\0hi\x05\0\0\0there", 15));
}

}  // namespace
}  // namespace sdx::serve
