// Attribute: a named, typed constant parameter of a node (ONNX AttributeProto).
//
//   const Attribute* a = node.attr("axis");  int64_t axis = node.attr_int("axis", 0);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/type_info.h"

namespace sdx::ir {

class Graph;

enum class AttrType : uint8_t {
  kUndefined, kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs,
  kTypeProto, kTypeProtos, kSparseTensor,
};
const char* attr_type_name(AttrType t);

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0.f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo tp;
};

}  // namespace sdx::ir
