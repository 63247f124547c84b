#include "ir/op_schema.h"

namespace sdx::ir {

const char* op_category_name(OpCategory c) {
  static const char* kNames[] = {
#define SDX_OP_CATEGORY(e, s) s,
#include "ir/op_category_defs.inc"
#undef SDX_OP_CATEGORY
  };
  return kNames[static_cast<int>(c)];
}

std::string normalize_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

static std::string schema_key(const std::string& op, const std::string& domain) {
  return normalize_domain(domain) + "::" + op;
}

OpSchemaRegistry& OpSchemaRegistry::get() {
  static OpSchemaRegistry* registry = new OpSchemaRegistry();  // never destroyed: used by static registrars
  return *registry;
}

void OpSchemaRegistry::add(OpSchema schema) {
  std::string key = schema_key(schema.name(), schema.domain());
  schemas_[key] = std::move(schema);
}

const OpSchema* OpSchemaRegistry::find(const std::string& op, const std::string& domain) const {
  auto it = schemas_.find(schema_key(op, domain));
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> OpSchemaRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [k, s] : schemas_) out.push_back(&s);
  return out;
}

Status OpSchema::check_arity(const Node& node) const {
  int nin = node.num_inputs();
  while (nin > 0 && node.input(nin - 1) == nullptr) --nin;
  if (nin < min_in_ || nin > max_in_)
    return invalid_argument(node.describe() + " has " + std::to_string(nin) + " inputs; " + name_ + " takes " +
                            std::to_string(min_in_) + (max_in_ == INT_MAX ? " or more" : " to " + std::to_string(max_in_)));
  int nout = node.num_outputs();
  if (nout < min_out_ || nout > max_out_)
    return invalid_argument(node.describe() + " has " + std::to_string(nout) + " outputs; " + name_ + " produces " +
                            std::to_string(min_out_) + (max_out_ == INT_MAX ? " or more" : " to " + std::to_string(max_out_)));
  return Status::ok();
}

Status OpSchema::check_attributes(const Node& node) const {
  if (!attrs_declared_) return Status::ok();
  for (const Attribute& a : node.attributes()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : attrs_)
      if (a.name == s.name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : attrs_) known += (known.empty() ? "" : ", ") + std::string(s.name);
      return invalid_argument(node.describe() + " has attribute '" + a.name + "', which " + name_ + " does not define" +
                              (known.empty() ? " (it takes no attributes)" : " (it takes: " + known + ")"));
    }
    if (spec->type != AttrType::kUndefined && spec->type != a.type)
      return invalid_argument(node.describe() + ": attribute '" + a.name + "' must be of type " + attr_type_name(spec->type) +
                              " but is " + attr_type_name(a.type));
  }
  return Status::ok();
}

TypeInferenceFn infer_same_as_input(int input_index) {
  return [input_index](Node& node) -> Status {
    Value* in = node.input(input_index);
    if (!in) return Status::ok();
    for (Value* out : node.outputs())
      if (out && out->type().kind == TypeInfo::Kind::kUnknown) out->mutable_type() = TypeInfo::tensor(in->type().elem);
    return Status::ok();
  };
}

TypeInferenceFn infer_fixed_type(DType t) {
  return [t](Node& node) -> Status {
    for (Value* out : node.outputs())
      if (out && out->type().kind == TypeInfo::Kind::kUnknown) out->mutable_type() = TypeInfo::tensor(t);
    return Status::ok();
  };
}

TypeInferenceFn infer_from_attr_to() {
  return [](Node& node) -> Status {
    auto dt = dtype_from_onnx(static_cast<int>(node.attr_int("to", 0)));
    if (!dt) return invalid_argument(node.describe() + ": attribute 'to' is not a valid element type");
    Value* out = node.output(0);
    if (out && out->type().kind == TypeInfo::Kind::kUnknown) out->mutable_type() = TypeInfo::tensor(*dt);
    return Status::ok();
  };
}

}  // namespace sdx::ir
