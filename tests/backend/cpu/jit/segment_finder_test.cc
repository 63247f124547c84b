#include "backend/cpu/jit/segment_finder.h"

#include <gtest/gtest.h>

#include <map>

namespace sdx::jit {
namespace {

using ir::TypeInfo;

struct Built {
  ir::Model model;
  plan::Plan plan;
  std::vector<ValueType> types;
};

// Builds a graph from (op, inputs by name) with every value float32 of `shape` unless `shapes` says
// otherwise; "x" is the graph input, c* are initializers, the last node's output is "y".
std::unique_ptr<Built> build(const std::vector<std::pair<std::string, std::vector<std::string>>>& nodes,
                             std::vector<std::string> extra_outputs = {}, std::map<std::string, Shape> shapes = {},
                             DType dtype = DType::kFloat32) {
  auto b = std::make_unique<Built>();
  b->model.opsets[""] = 17;
  b->model.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *b->model.graph;
  std::map<std::string, ir::Value*> values;
  const Shape def{1, 16};
  auto shape_of = [&](const std::string& n) { return shapes.count(n) ? shapes[n] : def; };
  values["x"] = g.add_input("x", TypeInfo::tensor(dtype));
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<ir::Value*> ins;
    for (const std::string& n : nodes[i].second) {
      if (!values.count(n)) values[n] = g.add_initializer(n, Tensor::allocate(dtype, shape_of(n)).value());
      ins.push_back(values[n]);
    }
    const std::string out = i + 1 == nodes.size() ? "y" : "t" + std::to_string(i);
    ir::Node* node = g.add_node(nodes[i].first, "", "n" + std::to_string(i), ins, {out});
    node->set_opset(17);
    values[out] = node->output(0);
  }
  g.add_output(values["y"]);
  for (const std::string& o : extra_outputs) g.add_output(values[o]);
  std::vector<ir::Value*> outs(g.outputs().begin(), g.outputs().end());
  b->plan = plan::compile(g, outs).value();
  for (const plan::Slot& s : b->plan.slots()) b->types.push_back({true, dtype, shape_of(s.value->name())});
  return b;
}

TEST(SegmentFinder, ChainIsOneSegmentWithBroadcastConstants) {
  auto b = build({{"Add", {"x", "c0"}}, {"Relu", {"t0"}}, {"Mul", {"t1", "c1"}}, {"Neg", {"t2"}}},
                 {}, {{"c0", Shape{16}}, {"c1", Shape{}}});
  auto segs = find_segments(b->plan, b->types);
  ASSERT_EQ(segs.size(), 1u);
  const Segment& s = segs[0];
  EXPECT_EQ(s.first_step, 0);
  EXPECT_EQ(s.last_step, 3);
  EXPECT_EQ(s.ir.instrs.size(), 4u);
  ASSERT_EQ(s.ir.inputs.size(), 3u);  // x, c0, c1
  EXPECT_EQ(s.ir.inputs[1].count, 16);
  EXPECT_EQ(s.ir.inputs[2].count, 1);
  ASSERT_EQ(s.ir.outputs.size(), 1u);
  EXPECT_EQ(b->model.graph->values()[static_cast<size_t>(s.output_values[0])]->name(), "y");
  EXPECT_TRUE(s.ir.validate().is_ok());
}

TEST(SegmentFinder, IntermediatesReadOutsideBecomeOutputs) {
  auto b = build({{"Relu", {"x"}}, {"Neg", {"t0"}}, {"Abs", {"t1"}}}, {"t0"});
  auto segs = find_segments(b->plan, b->types);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].ir.outputs.size(), 2u);  // t0 (a graph output) and y; t1 stays in registers
}

TEST(SegmentFinder, OtherCategoriesAndTypesAreBoundaries) {
  // Softmax (NORMALIZATION) splits the chain; single ops are no segment.
  auto b = build({{"Relu", {"x"}}, {"Neg", {"t0"}}, {"Softmax", {"t1"}}, {"Abs", {"t2"}}, {"Floor", {"t3"}}});
  auto segs = find_segments(b->plan, b->types);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].last_step, 1);
  EXPECT_EQ(segs[1].first_step, 3);
  std::string why;
  EXPECT_FALSE(step_is_fusible(b->plan, 2, b->types, &why));
  EXPECT_EQ(why, "category NORMALIZATION");
  // Integer chains stay unfused.
  auto ints = build({{"Neg", {"x"}}, {"Abs", {"t0"}}}, {}, {}, DType::kInt32);
  EXPECT_TRUE(find_segments(ints->plan, ints->types).empty());
  // An op outside the JIT table (Erf) is a boundary too.
  auto erf = build({{"Relu", {"x"}}, {"Erf", {"t0"}}, {"Neg", {"t1"}}});
  EXPECT_TRUE(find_segments(erf->plan, erf->types).empty());
}

TEST(SegmentFinder, ShapeChangeStartsANewSegment) {
  // t1 broadcasts up to [4, 16]: a new domain, so a new segment.
  auto b = build({{"Relu", {"x"}}, {"Neg", {"t0"}}, {"Add", {"t1", "c0"}}, {"Abs", {"t2"}}},
                 {}, {{"c0", Shape{4, 16}}, {"t2", Shape{4, 16}}, {"y", Shape{4, 16}}});
  auto segs = find_segments(b->plan, b->types);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].ir.domain, (Shape{1, 16}));
  EXPECT_EQ(segs[1].ir.domain, (Shape{4, 16}));
  EXPECT_EQ(segs[1].first_step, 2);
}

}  // namespace
}  // namespace sdx::jit
