// Model edits at load (frontend/onnx/model_edits.h, ExternalData::files): free dimensions by name and
// denotation, initializers replaced by name, external data from memory; each bad edit names what is wrong.
#include "frontend/onnx/model_edits.h"

#include <gtest/gtest.h>

#include <cstring>

#include "frontend/onnx/onnx_loader.h"
#include "sdx_onnx.pb.h"

namespace sdx::onnx {
namespace {

// y = x * w; x float[batch (denotation DATA_BATCH), 2], w float[2] external at "w.bin".
std::string mul_model(bool external_w) {
  sdx_onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  auto* d0 = x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
  d0->set_dim_param("batch");
  d0->set_denotation("DATA_BATCH");
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(2);
  if (external_w) {
    w->set_data_location(sdx_onnx::TensorProto::EXTERNAL);
    auto* e = w->add_external_data();
    e->set_key("location");
    e->set_value("w.bin");
  } else {
    w->add_float_data(1.0f);
    w->add_float_data(2.0f);
  }
  auto* n = g->add_node();
  n->set_op_type("Mul");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

const ir::Value* input(const ir::Model& m) { return m.graph->inputs()[0]; }

TEST(ModelEdits, FreeDimsByNameAndDenotation) {
  for (bool by_denotation : {false, true}) {
    ModelEdits edits;
    edits.free_dims.push_back({by_denotation, by_denotation ? "DATA_BATCH" : "batch", 5});
    auto m = load_model_bytes(mul_model(false), ExternalData{}, &edits);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(input(*m)->type().shape_string(), "[5, 2]");
  }
  ModelEdits none;
  none.free_dims.push_back({false, "seq", 5});  // matches nothing: no change, no error
  auto m = load_model_bytes(mul_model(false), ExternalData{}, &none);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(input(*m)->type().shape_string(), "[batch, 2]");
  ModelEdits negative;
  negative.free_dims.push_back({false, "batch", -1});
  auto bad = load_model_bytes(mul_model(false), ExternalData{}, &negative);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'batch' = -1"), std::string::npos) << bad.status().message();
}

TEST(ModelEdits, InitializersReplacedByNameAndCheckedAgainstTheModel) {
  const float values[2] = {3.0f, 4.0f};
  ModelEdits edits;
  edits.initializers.emplace("w", Tensor::from_values(DType::kFloat32, Shape{2}, values));
  auto m = load_model_bytes(mul_model(true), ExternalData{}, &edits);  // external data never read
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->graph->find_value("w")->initializer().data<float>()[1], 4.0f);

  ModelEdits wrong_shape;
  wrong_shape.initializers.emplace("w", Tensor::from_values(DType::kFloat32, Shape{1, 2}, values));
  auto bad = load_model_bytes(mul_model(false), ExternalData{}, &wrong_shape);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("initializer 'w'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("declares float[2]"), std::string::npos) << bad.status().message();

  ModelEdits unknown;
  unknown.initializers.emplace("v", Tensor::from_values(DType::kFloat32, Shape{2}, values));
  bad = load_model_bytes(mul_model(false), ExternalData{}, &unknown);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'v'"), std::string::npos) << bad.status().message();
}

TEST(ModelEdits, ExternalFilesFromMemoryAreBoundsChecked) {
  const float values[2] = {5.0f, 6.0f};
  const std::string file(reinterpret_cast<const char*>(values), sizeof(values));
  std::map<std::string, std::string_view> files{{"w.bin", file}};
  auto m = load_model_bytes(mul_model(true), ExternalData{"", {}, nullptr, &files});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->graph->find_value("w")->initializer().data<float>()[0], 5.0f);

  const std::string short_file = file.substr(0, 4);
  std::map<std::string, std::string_view> short_files{{"w.bin", short_file}};
  auto bad = load_model_bytes(mul_model(true), ExternalData{"", {}, nullptr, &short_files});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("outside the in-memory file 'w.bin'"), std::string::npos)
      << bad.status().message();
  // Not supplied and no folder to read from: refused as before.
  EXPECT_FALSE(load_model_bytes(mul_model(true), ExternalData{}).is_ok());
}

}  // namespace
}  // namespace sdx::onnx
