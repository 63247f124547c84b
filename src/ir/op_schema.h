// OpSchema: one registration per operator: arity, fusion category, whether its
// output shapes follow from input shapes alone (capturable) or depend on data
// (a GAP in a captured plan), and optional output type inference.
//
// Register next to the op's family, once:
//   SDX_OP_SCHEMA(Relu).category(OpCategory::kElementwise).inputs(1, 1).outputs(1, 1)
//       .infer(infer_same_as_input(0)).infer_shape(shape_same_as_input(0));
//   SDX_OP_SCHEMA(NonZero).category(OpCategory::kGather).data_dependent();
//
// Look up: const OpSchema* s = OpSchemaRegistry::get().find("Relu", "", 14);
#pragma once

#include <climits>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

enum class OpCategory : uint8_t {
#define SDX_OP_CATEGORY(e, s) e,
#include "ir/op_category_defs.inc"
#undef SDX_OP_CATEGORY
};
const char* op_category_name(OpCategory c);

// Floating-point operations of one execution from the frozen input and output shapes (an input or
// output may be null when omitted); used for GFLOP/s in kernel events. Rules live in ir/op_cost.h.
using FlopsFn = double (*)(const Node& node, const std::vector<const Shape*>& in, const std::vector<const Shape*>& out);

// Fills in node outputs' TypeInfo from its inputs' TypeInfo where it can.
using TypeInferenceFn = std::function<Status(Node& node)>;
// Fills in node outputs' static shape from its inputs' shapes (and constant inputs)
// where it can; runs after type inference. Rules live in ir/shape_inference.h.
using ShapeInferenceFn = std::function<Status(Node& node)>;

// A declared attribute. kUndefined type means "any type" (the type changed across opsets).
struct AttrSpec {
  const char* name;
  AttrType type;
};

class OpSchema {
 public:
  OpSchema() = default;
  OpSchema(std::string name, std::string domain) : name_(std::move(name)), domain_(std::move(domain)) {}

  OpSchema& since(int version) { since_ = version; return *this; }
  // Applies a family preset (category, arity, inference) shared by many ops of one file.
  OpSchema& apply(void (*preset)(OpSchema&)) {
    preset(*this);
    return *this;
  }
  OpSchema& category(OpCategory c) { category_ = c; return *this; }
  OpSchema& inputs(int min, int max) { min_in_ = min; max_in_ = max; return *this; }
  OpSchema& outputs(int min, int max) { min_out_ = min; max_out_ = max; return *this; }
  OpSchema& data_dependent() { capturable_ = false; return *this; }
  // Output shapes depend on the values of these inputs only (Reshape's shape, Slice's starts...):
  // when each of them is fixed for a given input-shape signature (an initializer, a Constant, a
  // Shape of something), the step is capturable after all.
  OpSchema& data_dependent_on(std::initializer_list<int> inputs) {
    capturable_ = false;
    shape_inputs_.assign(inputs.begin(), inputs.end());
    return *this;
  }
  OpSchema& infer(TypeInferenceFn fn) { infer_ = std::move(fn); return *this; }
  OpSchema& infer_shape(ShapeInferenceFn fn) { infer_shape_ = std::move(fn); return *this; }
  // Declares the op's arithmetic cost (MatMul, Gemm, Conv, Attention, ...); ops without one report no GFLOP/s.
  OpSchema& flops(FlopsFn fn) { flops_ = fn; return *this; }
  // Declares every attribute the op accepts in any opset (tools/onnx_attrs.py prints
  // this list from the ONNX spec). Once declared, the verifier rejects unknown
  // attributes and attributes of the wrong type, naming the node.
  OpSchema& attrs(std::initializer_list<AttrSpec> specs) {
    attrs_.assign(specs.begin(), specs.end());
    attrs_declared_ = true;
    return *this;
  }

  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }
  int since_version() const { return since_; }
  OpCategory op_category() const { return category_; }
  bool capturable() const { return capturable_; }
  // The inputs whose values decide output shapes (empty: any value may).
  const std::vector<int>& shape_inputs() const { return shape_inputs_; }
  int min_inputs() const { return min_in_; }
  int max_inputs() const { return max_in_; }
  int min_outputs() const { return min_out_; }
  int max_outputs() const { return max_out_; }
  const TypeInferenceFn& inference() const { return infer_; }
  const ShapeInferenceFn& shape_inference() const { return infer_shape_; }
  FlopsFn flops_fn() const { return flops_; }

  // Checks arity of a node against this schema.
  Status check_arity(const Node& node) const;
  // Checks attribute names and types against the declaration (no-op when undeclared).
  Status check_attributes(const Node& node) const;
  bool attributes_declared() const { return attrs_declared_; }
  const std::vector<AttrSpec>& attribute_specs() const { return attrs_; }

 private:
  std::string name_, domain_;
  int since_ = 1;
  OpCategory category_ = OpCategory::kOther;
  bool capturable_ = true;
  std::vector<int> shape_inputs_;
  int min_in_ = 0, max_in_ = INT_MAX, min_out_ = 1, max_out_ = INT_MAX;
  TypeInferenceFn infer_;
  ShapeInferenceFn infer_shape_;
  FlopsFn flops_ = nullptr;
  std::vector<AttrSpec> attrs_;
  bool attrs_declared_ = false;
};

class OpSchemaRegistry {
 public:
  static OpSchemaRegistry& get();
  void add(OpSchema schema);
  // The schema for (op, domain); "ai.onnx" is treated as "".
  const OpSchema* find(const std::string& op, const std::string& domain) const;
  std::vector<const OpSchema*> all() const;

 private:
  std::unordered_map<std::string, OpSchema> schemas_;
};

struct OpSchemaRegistrar {
  OpSchemaRegistrar(const OpSchema& schema) { OpSchemaRegistry::get().add(schema); }  // NOLINT
};

// Common inference rules.
TypeInferenceFn infer_same_as_input(int input_index);
TypeInferenceFn infer_fixed_type(DType t);
TypeInferenceFn infer_from_attr_to();  // Cast-style "to" attribute

std::string normalize_domain(const std::string& domain);

}  // namespace sdx::ir

// Declares a static registration; the builder chain follows.
#define SDX_OP_SCHEMA_DOMAIN(op, domain) \
  static const ::sdx::ir::OpSchemaRegistrar SDX_CONCAT_(sdx_schema_reg_, __LINE__) = ::sdx::ir::OpSchema(#op, domain)
#define SDX_OP_SCHEMA(op) SDX_OP_SCHEMA_DOMAIN(op, "")
