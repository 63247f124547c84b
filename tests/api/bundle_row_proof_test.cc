// api/bundle_row_proof.h: a bundle keeps the row proof made before the optimizer, so a session loaded from
// it (sdx compile, the disk plan cache) may still switch to automatic buckets; malformed entries are named.
#include "api/bundle_row_proof.h"

#include <gtest/gtest.h>

#include <random>

#include "api/bundle.h"
#include "frontend/onnx/onnx_writer.h"

namespace sdx::api {
namespace {

TEST(BundleRowProof, RoundTripsNamesAndReasonsWithSeparatorsInThem) {
  runtime::RowProof p;
  p.dims["batch"] = "";
  p.dims["a=b,c:d%"] = "node 'x=1' (Foo) has no row rule\nsecond line";
  p.dims["seq"] = "node 'sm' (Softmax) mixes positions along it (input 0 axis 1)";
  p.output_axes["batch"] = {{"logits", 0}, {"out:1,2=3", 2}};
  p.output_axes["a=b,c:d%"];  // no outputs is not a proof: refused below
  std::map<std::string, std::string> manifest{{"sdx_version", "x"}};
  runtime::RowProof proven = p;
  proven.output_axes.erase("a=b,c:d%");
  write_row_proof(proven, manifest);
  for (const auto& [k, v] : manifest) {
    EXPECT_EQ(k.find('='), std::string::npos) << k;  // the manifest splits a line at its first '='
    EXPECT_EQ(v.find('\n'), std::string::npos) << v;
  }
  Result<runtime::RowProof> back = read_row_proof(manifest);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->dims, proven.dims);
  EXPECT_EQ(back->output_axes, proven.output_axes);
  EXPECT_TRUE(read_row_proof({{"sdx_version", "x"}})->dims.empty());
}

TEST(BundleRowProof, MalformedEntriesAreNamed) {
  auto why = [](std::map<std::string, std::string> m) {
    Result<runtime::RowProof> r = read_row_proof(m);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(why({{"row_dim.b%4", ""}}).find("'row_dim.b%4': a '%' escape is cut short"), std::string::npos);
  EXPECT_NE(why({{"row_dim.b", "%zz"}}).find("'%zz' is not a '%' escape"), std::string::npos);
  EXPECT_NE(why({{"row_dim.b", ""}, {"row_axes.b", "out:x"}}).find("'out:x' is not output:axis"), std::string::npos);
  EXPECT_NE(why({{"row_dim.b", ""}, {"row_axes.b", "out:-1"}}).find("is not output:axis"), std::string::npos);
  EXPECT_NE(why({{"row_dim.b", ""}, {"row_axes.b", ":0"}}).find("is not output:axis"), std::string::npos);
  EXPECT_NE(why({{"row_dim.b", "mixed"}, {"row_axes.b", "out:0"}}).find("which it does not prove"), std::string::npos);
  EXPECT_EQ(why({{"row_dim.b", ""}, {"row_axes.b", "out:0,y:1"}}), "ok");
}

// x [batch, 4, 8, 8] -> Conv -> Relu -> y: the optimizer fuses Conv + Relu into sdx.FusedConv, which has no row
// rule; the bundle's session has the proof of the graph as loaded.
TEST(BundleRowProof, ASessionLoadedFromABundleHasTheProofOfTheGraphAsLoaded) {
  ir::Model m;
  m.opsets[""] = 17;
  m.ir_version = 8;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbolic("batch"), ir::Dim::fixed(4),
                                                                                              ir::Dim::fixed(8), ir::Dim::fixed(8)}));
  Tensor w = Tensor::allocate(DType::kFloat32, Shape{8, 4, 3, 3}).value();
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.f, 0.1f);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = d(rng);
  ir::Node* conv = g.add_node("Conv", "", "conv", {x, g.add_initializer("w", std::move(w))}, {"c"});
  ir::Node* relu = g.add_node("Relu", "", "relu", {conv->output(0)}, {"y"});
  for (ir::Node* n : {conv, relu}) n->set_opset(17);
  g.add_output(relu->output(0));
  const std::string onnx_bytes = onnx::save_model(m).value().bytes;

  runtime::SessionOptions options;
  options.disk_plan_cache = false;
  Result<std::string> bundle = compile_bundle(onnx_bytes, options, {});
  ASSERT_TRUE(bundle.is_ok()) << bundle.status().message();
  Result<std::unique_ptr<runtime::Session>> s = load_bundle(*bundle, options);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ((*s)->row_dims().at("batch"), "");
  EXPECT_EQ((*s)->row_proof().output_axes.at("batch"), (std::vector<std::pair<std::string, int>>{{"y", 0}}));
  // What proving the bundle's optimized graph would have said (why the proof travels with it).
  bool fused = false;
  for (const auto& n : (*s)->model().graph->nodes()) fused = fused || n->op_type() == "FusedConv";
  EXPECT_TRUE(fused);
}

}  // namespace
}  // namespace sdx::api
