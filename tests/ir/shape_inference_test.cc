#include "ir/shape_inference.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/type_inference.h"

namespace sdx::ir {
namespace {

Dim N(const char* s) { return Dim::symbolic(s); }
Dim F(int64_t v) { return Dim::fixed(v); }
TypeInfo f32(Dims d) { return TypeInfo::tensor(DType::kFloat32, std::move(d)); }

Attribute ints_attr(const char* name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInts;
  a.ints = std::move(v);
  return a;
}
Attribute int_attr(const char* name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}
Value* int64_init(Graph& g, const std::string& name, std::vector<int64_t> v) {
  return g.add_initializer(name, Tensor::from_values(DType::kInt64, Shape({static_cast<int64_t>(v.size())}), v.data()));
}

std::string shape_of(const Value* v) { return v->type().shape_string(); }

TEST(ShapeInference, BroadcastCarriesSymbolicDims) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("batch"), F(1), F(4)}));
  Value* y = g.add_input("y", f32({F(3), F(1)}));
  Value* z = g.add_input("z", f32({N("M")}));
  Node* add = g.add_node("Add", "", "add", {x, y}, {"s"});
  Node* mul = g.add_node("Mul", "", "mul", {add->output(0), z}, {"p"});
  Value* c = g.add_input("c", TypeInfo::tensor(DType::kBool, Dims{N("batch"), F(3), F(1)}));
  Node* where = g.add_node("Where", "", "where", {c, add->output(0), x}, {"w"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(add->output(0)), "[batch, 3, 4]");
  EXPECT_EQ(shape_of(mul->output(0)), "[batch, 3, 4]");  // M must be 1 or 4
  EXPECT_EQ(shape_of(where->output(0)), "[batch, 3, 4]");

  Graph h("two_symbols");
  Value* a = h.add_input("a", f32({N("A")}));
  Value* b = h.add_input("b", f32({N("B")}));
  Node* n = h.add_node("Sub", "", "sub", {a, b}, {"d"});
  ASSERT_TRUE(infer_types(h).is_ok());
  EXPECT_EQ(shape_of(n->output(0)), "[?]");  // either may be 1
}

TEST(ShapeInference, ReshapeWithConstantShape) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("batch"), F(3), F(4)}));
  Node* r1 = g.add_node("Reshape", "", "r1", {x, int64_init(g, "s1", {0, -1})}, {"y1"});
  Node* r2 = g.add_node("Reshape", "", "r2", {x, int64_init(g, "s2", {-1, 4})}, {"y2"});
  Node* k = g.add_node("Constant", "", "k", {}, {"s3"});
  k->add_attribute(ints_attr("value_ints", {2, -1, 2}));
  Value* fixed = g.add_input("f", f32({F(2), F(3), F(4)}));
  Node* r3 = g.add_node("Reshape", "", "r3", {fixed, k->output(0)}, {"y3"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(r1->output(0)), "[batch, 12]");
  EXPECT_EQ(shape_of(r2->output(0)), "[3*batch, 4]");  // a product of symbols (ir/dim_product.h)
  EXPECT_EQ(shape_of(r3->output(0)), "[2, 6, 2]");
}

TEST(ShapeInference, ConvAndPoolSpatialDims) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("N"), F(3), F(32), F(32)}));
  Value* w = g.add_input("w", f32({F(16), F(3), F(3), F(3)}));
  Node* conv = g.add_node("Conv", "", "conv", {x, w}, {"c"});
  conv->add_attribute(ints_attr("pads", {1, 1, 1, 1}));
  conv->add_attribute(ints_attr("strides", {2, 2}));
  Node* pool = g.add_node("MaxPool", "", "pool", {conv->output(0)}, {"p", "idx"});
  pool->add_attribute(ints_attr("kernel_shape", {3, 3}));
  pool->add_attribute(ints_attr("strides", {2, 2}));
  Node* pool_ceil = g.add_node("MaxPool", "", "pool_ceil", {conv->output(0)}, {"pc"});
  pool_ceil->add_attribute(ints_attr("kernel_shape", {3, 3}));
  pool_ceil->add_attribute(ints_attr("strides", {2, 2}));
  pool_ceil->add_attribute(int_attr("ceil_mode", 1));
  Node* gap = g.add_node("GlobalAveragePool", "", "gap", {pool->output(0)}, {"g"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(conv->output(0)), "[N, 16, 16, 16]");
  EXPECT_EQ(shape_of(pool->output(0)), "[N, 16, 7, 7]");
  EXPECT_EQ(shape_of(pool->output(1)), "[N, 16, 7, 7]");
  EXPECT_EQ(pool->output(1)->type().elem, DType::kInt64);
  EXPECT_EQ(shape_of(pool_ceil->output(0)), "[N, 16, 8, 8]");
  EXPECT_EQ(shape_of(gap->output(0)), "[N, 16, 1, 1]");
}

TEST(ShapeInference, MatMulBroadcastsBatchDims) {
  Graph g("main");
  Value* a = g.add_input("a", f32({N("B"), F(1), F(4), F(5)}));
  Value* b = g.add_input("b", f32({F(3), F(5), F(6)}));
  Value* v = g.add_input("v", f32({F(4)}));
  Node* mm = g.add_node("MatMul", "", "mm", {a, b}, {"y"});
  Node* mv = g.add_node("MatMul", "", "mv", {v, a}, {"z"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(mm->output(0)), "[B, 3, 4, 6]");
  EXPECT_EQ(shape_of(mv->output(0)), "[B, 1, 5]");
}

TEST(ShapeInference, ReduceKeepdims) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("N"), F(3), F(4)}));
  Node* sum = g.add_node("ReduceSum", "", "sum", {x, int64_init(g, "axes", {1})}, {"s"});
  Node* mean = g.add_node("ReduceMean", "", "mean", {x}, {"m"});
  mean->add_attribute(ints_attr("axes", {-1}));
  mean->add_attribute(int_attr("keepdims", 0));
  Node* all = g.add_node("ReduceMax", "", "all", {x}, {"a"});
  Node* arg = g.add_node("ArgMax", "", "arg", {x}, {"i"});
  arg->add_attribute(int_attr("axis", 2));
  arg->add_attribute(int_attr("keepdims", 0));
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(sum->output(0)), "[N, 1, 4]");
  EXPECT_EQ(shape_of(mean->output(0)), "[N, 3]");
  EXPECT_EQ(shape_of(all->output(0)), "[1, 1, 1]");
  EXPECT_EQ(shape_of(arg->output(0)), "[N, 3]");
}

TEST(ShapeInference, ShapeManipulation) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("N"), F(3), F(1), F(5)}));
  Node* tr = g.add_node("Transpose", "", "tr", {x}, {"t"});
  tr->add_attribute(ints_attr("perm", {0, 3, 1, 2}));
  Node* fl = g.add_node("Flatten", "", "fl", {x}, {"f"});
  Node* sq = g.add_node("Squeeze", "", "sq", {x, int64_init(g, "ax", {2})}, {"q"});
  Node* us = g.add_node("Unsqueeze", "", "us", {sq->output(0), int64_init(g, "ax2", {0, -1})}, {"u"});
  Node* cat = g.add_node("Concat", "", "cat", {x, x}, {"c"});
  cat->add_attribute(int_attr("axis", 1));
  Value* idx = g.add_input("idx", TypeInfo::tensor(DType::kInt64, Dims{N("K"), F(2)}));
  Node* ga = g.add_node("Gather", "", "ga", {x, idx}, {"g"});
  ga->add_attribute(int_attr("axis", 1));
  Node* sh = g.add_node("Shape", "", "sh", {x}, {"s"});
  Node* ex = g.add_node("Expand", "", "ex", {x, int64_init(g, "to", {2, 1, 3, 7, 1})}, {"e"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(tr->output(0)), "[N, 5, 3, 1]");
  EXPECT_EQ(shape_of(fl->output(0)), "[N, 15]");
  EXPECT_EQ(shape_of(sq->output(0)), "[N, 3, 5]");
  EXPECT_EQ(shape_of(us->output(0)), "[1, N, 3, 5, 1]");
  EXPECT_EQ(shape_of(cat->output(0)), "[N, 6, 1, 5]");
  EXPECT_EQ(shape_of(ga->output(0)), "[N, K, 2, 1, 5]");
  EXPECT_EQ(shape_of(sh->output(0)), "[4]");
  EXPECT_EQ(shape_of(ex->output(0)), "[2, N, 3, 7, 5]");
}

TEST(ShapeInference, FixedContradictionNamesNodeAndShapes) {
  Graph g("main");
  Value* a = g.add_input("a", f32({F(3)}));
  Value* b = g.add_input("b", f32({F(4)}));
  g.add_node("Add", "", "bad_add", {a, b}, {"y"});
  Status s = infer_types(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("bad_add"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[3]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[4]"), std::string::npos) << s.message();

  Graph h("mm");
  Value* p = h.add_input("p", f32({N("B"), F(2), F(3)}));
  Value* q = h.add_input("q", f32({F(4), F(5)}));
  h.add_node("MatMul", "", "bad_mm", {p, q}, {"y"});
  s = infer_types(h);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("bad_mm"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[B, 2, 3]"), std::string::npos) << s.message();

  // A symbolic dim is never a contradiction.
  Graph k("ok");
  Value* u = k.add_input("u", f32({N("M")}));
  Value* v = k.add_input("v", f32({F(4)}));
  Node* n = k.add_node("Add", "", "add", {u, v}, {"y"});
  ASSERT_TRUE(infer_types(k).is_ok());
  EXPECT_EQ(shape_of(n->output(0)), "[4]");
}

// A declared shape is kept: its fixed dims and the symbols the inputs declare. A placeholder (a symbol no input
// declares, "unk__4", as exporters write in value_info and on graph outputs) or an unknown dim gives way to the
// inferred dim, so the inputs' symbols reach it (the session still reports a graph output as declared:
// runtime/compile_model.cc).
TEST(ShapeInference, DeclaredShapeIsKeptButItsPlaceholdersAreInferred) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("N"), F(3)}));
  g.add_input("other", f32({N("M")}));
  Node* n = g.add_node("Relu", "", "r", {x}, {"y"});
  n->output(0)->mutable_type() = f32({N("unk__4"), F(3)});
  Node* k = g.add_node("Relu", "", "r1", {n->output(0)}, {"k"});
  k->output(0)->mutable_type() = f32({N("M"), F(3)});  // an input's symbol: kept
  Node* m = g.add_node("Relu", "", "r2", {n->output(0)}, {"z"});
  m->output(0)->mutable_type() = f32({N("declared"), F(3)});
  g.add_output(m->output(0));
  g.add_output(k->output(0));
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(n->output(0)), "[N, 3]");
  EXPECT_EQ(shape_of(k->output(0)), "[M, 3]");
  EXPECT_EQ(shape_of(m->output(0)), "[N, 3]");
}

TEST(ShapeInference, UnknownInputsLeaveShapeUnknownAndAComputedShapeGivesTheRank) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));  // rank unknown
  Value* s = g.add_input("s", TypeInfo::tensor(DType::kInt64, Dims{F(2)}));
  Node* relu = g.add_node("Relu", "", "relu", {x}, {"y"});
  Node* reshape = g.add_node("Reshape", "", "reshape", {relu->output(0), s}, {"z"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_FALSE(relu->output(0)->type().shape.has_value());
  // The shape input is not constant, but its length is: rank 2, dims unknown.
  ASSERT_TRUE(reshape->output(0)->type().shape.has_value());
  ASSERT_EQ(reshape->output(0)->type().shape->size(), 2u);
  for (const Dim& d : *reshape->output(0)->type().shape) EXPECT_FALSE(d.is_fixed());
  // A shape input of unknown length leaves the rank unknown too.
  Value* s2 = g.add_input("s2", TypeInfo::tensor(DType::kInt64));
  Node* reshape2 = g.add_node("Reshape", "", "reshape2", {relu->output(0), s2}, {"z2"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_FALSE(reshape2->output(0)->type().shape.has_value());
}

// Slice keeps the data's rank whatever its bounds: exact dims for constant bounds on fixed dims
// (negative indices, clamping, negative steps), unknown dims where the bounds come at run time (an
// exported BERT's position-id slice up to the sequence length). Split divides the axis by its sizes or
// into equal parts; Expand to a computed shape of known length gets that rank.
TEST(ShapeInference, SliceSplitAndExpandKeepTheRank) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("batch"), F(10), F(8)}));
  auto slice = [&](const char* name, std::vector<Value*> in) {
    in.insert(in.begin(), x);
    Node* n = g.add_node("Slice", "", name, in, {std::string(name) + "_y"});
    n->set_opset(13);
    return n;
  };
  Node* s1 = slice("s1", {int64_init(g, "st1", {1, -3}), int64_init(g, "en1", {100, 8}), int64_init(g, "ax1", {1, 2})});
  Node* s2 = slice("s2", {int64_init(g, "st2", {-1}), int64_init(g, "en2", {-11}), int64_init(g, "ax2", {1}),
                          int64_init(g, "sp2", {-3})});
  Value* end = g.add_input("end", TypeInfo::tensor(DType::kInt64, Dims{F(1)}));
  Node* s3 = slice("s3", {int64_init(g, "st3", {0}), end, int64_init(g, "ax3", {1})});
  Value* starts = g.add_input("starts", TypeInfo::tensor(DType::kInt64, Dims{F(2)}));
  Node* s4 = slice("s4", {starts, starts});  // no axes: the first two
  Node* sp = g.add_node("Split", "", "sp", {x, int64_init(g, "sizes", {3, 7})}, {"a", "b"});
  sp->add_attribute(int_attr("axis", 1));
  sp->set_opset(13);
  Node* eq = g.add_node("Split", "", "eq", {x}, {"c", "d", "e"});
  eq->add_attribute(int_attr("axis", -1));
  eq->add_attribute(int_attr("num_outputs", 3));
  eq->set_opset(18);
  Value* shape = g.add_input("shape", TypeInfo::tensor(DType::kInt64, Dims{F(4)}));
  Node* ex = g.add_node("Expand", "", "ex", {x, shape}, {"big"});
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(shape_of(s1->output(0)), "[batch, 9, 3]");
  EXPECT_EQ(shape_of(s2->output(0)), "[batch, 4, 8]");  // 9, 6, 3, 0
  EXPECT_EQ(shape_of(s3->output(0)), "[batch, ?, 8]");
  EXPECT_EQ(shape_of(s4->output(0)), "[?, ?, 8]");
  EXPECT_EQ(shape_of(sp->output(0)), "[batch, 3, 8]");
  EXPECT_EQ(shape_of(sp->output(1)), "[batch, 7, 8]");
  EXPECT_EQ(shape_of(eq->output(0)), "[batch, 10, 3]");
  EXPECT_EQ(shape_of(eq->output(2)), "[batch, 10, 2]");
  EXPECT_EQ(shape_of(ex->output(0)), "[?, ?, 10, 8]");
}

TEST(ShapeInference, PrinterShowsTypesAndShapes) {
  Graph g("main");
  Value* x = g.add_input("x", f32({N("N"), F(3)}));
  Node* n = g.add_node("Relu", "", "r", {x}, {"y"});
  g.add_output(n->output(0));
  ASSERT_TRUE(infer_types(g).is_ok());
  std::string text = print_graph(g);
  EXPECT_NE(text.find("y: float[N, 3] = Relu(x)"), std::string::npos) << text;
}

}  // namespace
}  // namespace sdx::ir
