// ir/symbolic_scalar.h: shape arithmetic on symbolic dims, and the Range shape rule built on it: a
// decoder's causal mask (Range over Shape -> Gather -> Add, as exporters write it) gets its static shape.
#include "ir/symbolic_scalar.h"

#include <gtest/gtest.h>

#include "ir/shape_inference.h"
#include "ir/type_inference.h"

namespace sdx::ir {
namespace {

Dim N(const char* s) { return Dim::symbolic(s); }
Dim F(int64_t v) { return Dim::fixed(v); }

Value* scalar(Graph& g, const std::string& name, int64_t v) {
  return g.add_initializer(name, Tensor::from_values(DType::kInt64, Shape{}, &v));
}
Attribute int_attr(const char* name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}
std::string spelled(const std::optional<Dim>& d) {
  if (!d) return "nullopt";
  return d->is_fixed() ? std::to_string(d->value) : d->param;
}

TEST(SymbolicScalar, SumsAndDifferencesOfDims) {
  EXPECT_EQ(spelled(add_dims(F(2), F(3))), "5");
  EXPECT_EQ(spelled(add_dims(N("p"), F(0))), "p");
  EXPECT_EQ(spelled(add_dims(N("p"), N("s"))), "p + s");
  EXPECT_EQ(spelled(add_dims(N("p"), F(1))), "p + 1");
  EXPECT_EQ(spelled(sub_dims(N("p + s"), N("p"))), "s");
  EXPECT_EQ(spelled(sub_dims(N("p + s"), N("s"))), "p");
  EXPECT_EQ(spelled(sub_dims(N("p + 1"), F(1))), "p");
  EXPECT_EQ(spelled(sub_dims(N("p"), N("p"))), "0");
  EXPECT_EQ(spelled(sub_dims(F(7), F(3))), "4");
  EXPECT_EQ(spelled(sub_dims(N("p"), N("s"))), "nullopt");    // not spelled as a sum with s
  EXPECT_EQ(spelled(sub_dims(N("pp + s"), N("p"))), "nullopt");  // whole names only
  EXPECT_EQ(spelled(sub_dims(F(3), N("p"))), "nullopt");
  EXPECT_EQ(spelled(add_dims(Dim{}, F(1))), "nullopt");        // an unknown dim stays unknown
}

// The causal mask of scripts/make_gpt2_decoder.py: past = Shape(kv)[2], total = past + Shape(ids)[1];
// Range(past, total) has "sequence_length" elements and Range(0, total) the total.
TEST(SymbolicScalar, DecoderMaskRangesGetTheirLengths) {
  Graph g("mask");
  Value* ids = g.add_input("input_ids", TypeInfo::tensor(DType::kInt64, Dims{N("batch"), N("sequence_length")}));
  Value* kv = g.add_input("past", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(4), N("past_sequence_length"), F(64)}));
  Value* one = scalar(g, "one", 1);
  Value* two = scalar(g, "two", 2);
  Value* zero = scalar(g, "zero", 0);
  Node* ids_shape = g.add_node("Shape", "", "ids_shape", {ids}, {"ids_shape"});
  Node* seq = g.add_node("Gather", "", "seq", {ids_shape->output(0), one}, {"seq"});
  Node* kv_shape = g.add_node("Shape", "", "kv_shape", {kv}, {"kv_shape"});
  Node* past = g.add_node("Gather", "", "past_len", {kv_shape->output(0), two}, {"past_len"});
  Node* total = g.add_node("Add", "", "total", {past->output(0), seq->output(0)}, {"total"});
  Node* q = g.add_node("Range", "", "q", {past->output(0), total->output(0), one}, {"q"});
  Node* k = g.add_node("Range", "", "k", {zero, total->output(0), one}, {"k"});
  Node* fixed = g.add_node("Range", "", "fixed", {two, scalar(g, "nine", 9), scalar(g, "three", 3)}, {"fixed"});
  Node* down = g.add_node("Range", "", "down", {scalar(g, "ten", 10), zero, scalar(g, "minus3", -3)}, {"down"});
  Node* empty = g.add_node("Range", "", "empty", {scalar(g, "five", 5), one, one}, {"empty"});
  Value* start = g.add_input("start", TypeInfo::tensor(DType::kInt64, Dims{}));
  Node* fed = g.add_node("Range", "", "fed", {start, total->output(0), one}, {"fed"});  // a fed start: unknown
  Node* tail = g.add_node("Shape", "", "tail", {kv}, {"tail"});
  tail->add_attribute(int_attr("start", -2));
  Node* last = g.add_node("Gather", "", "last", {tail->output(0), zero}, {"last"});  // Shape(kv)[-2:][0]
  Node* r = g.add_node("Range", "", "r", {zero, last->output(0), one}, {"r"});
  for (Node* n : {q, k, fixed, down, empty, fed, r}) g.add_output(n->output(0));
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(spelled(symbolic_scalar(total->output(0))), "past_sequence_length + sequence_length");
  EXPECT_EQ(q->output(0)->type().shape_string(), "[sequence_length]");
  EXPECT_EQ(k->output(0)->type().shape_string(), "[past_sequence_length + sequence_length]");
  EXPECT_EQ(fixed->output(0)->type().shape_string(), "[3]");  // 2, 5, 8
  EXPECT_EQ(down->output(0)->type().shape_string(), "?");  // a negative delta: a Dim holds no negative value
  EXPECT_EQ(empty->output(0)->type().shape_string(), "[0]");
  EXPECT_EQ(fed->output(0)->type().shape_string(), "?");
  EXPECT_EQ(r->output(0)->type().shape_string(), "[past_sequence_length]");
}

// A Reshape whose target is computed from its input's shape (Shape -> Gather -> Unsqueeze -> Concat, as
// exporters write the split into heads) gets the symbols: [batch, seq, 768] -> [batch, seq, 12, 64].
TEST(SymbolicScalar, ComputedReshapeTargetsKeepTheirSymbols) {
  Graph g("heads");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), N("seq"), F(768)}));
  Node* shape = g.add_node("Shape", "", "shape", {x}, {"shape"});
  Node* b = g.add_node("Gather", "", "b", {shape->output(0), scalar(g, "i0", 0)}, {"b"});
  Node* s = g.add_node("Gather", "", "s", {shape->output(0), scalar(g, "i1", 1)}, {"s"});
  Value* axes = g.add_initializer("axes", Tensor::from_values(DType::kInt64, Shape{1}, std::vector<int64_t>{0}.data()));
  Node* ub = g.add_node("Unsqueeze", "", "ub", {b->output(0), axes}, {"ub"});
  Node* us = g.add_node("Unsqueeze", "", "us", {s->output(0), axes}, {"us"});
  const int64_t heads[2] = {12, 64};
  Value* tail = g.add_initializer("tail", Tensor::from_values(DType::kInt64, Shape{2}, heads));
  Node* target = g.add_node("Concat", "", "target", {ub->output(0), us->output(0), tail}, {"target"});
  target->add_attribute(int_attr("axis", 0));
  Node* r = g.add_node("Reshape", "", "r", {x, target->output(0)}, {"r"});
  g.add_output(r->output(0));
  ASSERT_TRUE(infer_types(g).is_ok());
  auto v = symbolic_vector(target->output(0));
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->size(), 4u);
  EXPECT_EQ(r->output(0)->type().shape_string(), "[batch, seq, 12, 64]");
}

// Hugging Face's token_type_ids buffer, as BERT exports write it: a [1, 512] table cut to [0, S) and expanded to
// Where(Equal(shape, -1), ones, shape) with shape = [B, S]: the result is [batch, seq].
TEST(SymbolicScalar, ABufferCutAndExpandedToTheInputsShapeKeepsItsSymbols) {
  Graph g("token_types");
  Value* ids = g.add_input("ids", TypeInfo::tensor(DType::kInt64, Dims{N("batch"), N("seq")}));
  std::vector<int64_t> zeros(512, 0);
  Value* table = g.add_initializer("table", Tensor::from_values(DType::kInt64, Shape{1, 512}, zeros.data()));
  auto vec = [&](const char* name, std::vector<int64_t> v) {
    return g.add_initializer(name, Tensor::from_values(DType::kInt64, Shape{static_cast<int64_t>(v.size())}, v.data()));
  };
  Node* shape = g.add_node("Shape", "", "shape", {ids}, {"shape"});
  Node* b = g.add_node("Gather", "", "b", {shape->output(0), scalar(g, "i0", 0)}, {"b"});
  Node* s = g.add_node("Gather", "", "s", {shape->output(0), scalar(g, "i1", 1)}, {"s"});
  Node* ub = g.add_node("Unsqueeze", "", "ub", {b->output(0), vec("a0", {0})}, {"ub"});
  Node* us = g.add_node("Unsqueeze", "", "us", {s->output(0), vec("a1", {0})}, {"us"});
  Node* cut = g.add_node("Slice", "", "cut", {table, vec("st", {0}), us->output(0), vec("ax", {1}), vec("sp", {1})}, {"cut"});
  cut->set_opset(13);  // starts, ends, axes and steps as inputs
  Node* cat = g.add_node("Concat", "", "cat", {ub->output(0), us->output(0)}, {"cat"});
  cat->add_attribute(int_attr("axis", 0));
  Node* flat = g.add_node("Reshape", "", "flat", {cat->output(0), vec("m1", {-1})}, {"flat"});
  Node* fshape = g.add_node("Shape", "", "fshape", {flat->output(0)}, {"fshape"});
  Node* ones = g.add_node("ConstantOfShape", "", "ones", {fshape->output(0)}, {"ones"});
  Attribute one;
  one.name = "value";
  one.type = AttrType::kTensor;
  const int64_t v1 = 1;
  one.t = Tensor::from_values(DType::kInt64, Shape{1}, &v1);
  ones->add_attribute(one);
  Node* eq = g.add_node("Equal", "", "eq", {flat->output(0), scalar(g, "minus1", -1)}, {"eq"});
  Node* target = g.add_node("Where", "", "target", {eq->output(0), ones->output(0), flat->output(0)}, {"target"});
  Node* types = g.add_node("Expand", "", "types", {cut->output(0), target->output(0)}, {"types"});
  g.add_output(types->output(0));
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(cut->output(0)->type().shape_string(), "[1, seq]");
  EXPECT_EQ(types->output(0)->type().shape_string(), "[batch, seq]");
}

}  // namespace
}  // namespace sdx::ir
