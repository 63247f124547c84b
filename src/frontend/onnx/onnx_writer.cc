#include "frontend/onnx/onnx_writer.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "sdx_onnx.pb.h"

namespace sdx::onnx {
namespace {

Status write_type(const ir::TypeInfo& t, sdx_onnx::TypeProto* tp, const std::string& where) {
  using Kind = ir::TypeInfo::Kind;
  switch (t.kind) {
    case Kind::kTensor: {
      auto* tt = tp->mutable_tensor_type();
      tt->set_elem_type(dtype_to_onnx(t.elem));
      if (t.shape) {
        auto* shape = tt->mutable_shape();
        for (const ir::Dim& d : *t.shape) {
          auto* dim = shape->add_dim();
          if (d.is_fixed()) dim->set_dim_value(d.value);
          else if (!d.param.empty()) dim->set_dim_param(d.param);
        }
      }
      return Status::ok();
    }
    case Kind::kSequence:
    case Kind::kOptional: {
      if (t.kind == Kind::kSequence && t.inner)
        return write_type(*t.inner, tp->mutable_sequence_type()->mutable_elem_type(), where);
      if (t.kind == Kind::kOptional && t.inner)
        return write_type(*t.inner, tp->mutable_optional_type()->mutable_elem_type(), where);
      return unimplemented(where + ": a " + t.to_string() + " without an element type");
    }
    case Kind::kUnknown: return Status::ok();  // no type: the loader infers it
    case Kind::kMap: break;
  }
  return unimplemented(where + ": cannot write a value of type " + t.to_string());
}

Status write_tensor(const Tensor& t, const std::string& name, sdx_onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape().dims()) p->add_dims(d);
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < t.numel(); ++i) p->add_string_data(t.data<std::string>()[i]);
    return Status::ok();
  }
  if (!dtype_is_byte_addressable(t.dtype()) && t.dtype() != DType::kBool && dtype_storage_bytes(t.dtype(), 1) == 0)
    return unimplemented("tensor '" + name + "': element type " + dtype_name(t.dtype()) + " cannot be written");
  const size_t bytes = dtype_storage_bytes(t.dtype(), t.numel());
  p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), bytes));
  return Status::ok();
}

// Appends an initializer's bytes to the blob, 64-byte aligned, and points its proto there.
void write_to_blob(const Tensor& t, sdx_onnx::TensorProto* p, std::string* blob, const std::string& location) {
  const size_t bytes = dtype_storage_bytes(t.dtype(), t.numel());
  const size_t offset = (blob->size() + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  blob->resize(offset);
  blob->append(static_cast<const char*>(t.raw_data()), bytes);
  p->clear_raw_data();
  p->set_data_location(sdx_onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : {std::pair<const char*, std::string>{"location", location},
                             {"offset", std::to_string(offset)}, {"length", std::to_string(bytes)}}) {
    auto* e = p->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
}

class Writer {
 public:
  Writer(std::vector<int>* opsets, const SaveOptions& options, std::string* blob)
      : opsets_(opsets), options_(options), blob_(blob) {}

  Status graph(const ir::Graph& g, sdx_onnx::GraphProto* gp) {
    gp->set_name(g.name());
    for (const ir::Value* v : g.inputs()) {
      auto* vi = gp->add_input();
      vi->set_name(v->name());
      SDX_RETURN_IF_ERROR(write_type(v->type(), vi->mutable_type(), "input '" + v->name() + "'"), "");
    }
    for (const ir::Value* v : g.initializers()) {
      const Tensor& t = v->initializer();
      auto* tp = gp->add_initializer();
      SDX_RETURN_IF_ERROR(write_tensor(t, v->name(), tp), "");
      if (options_.weights_in_blob && t.dtype() != DType::kString && tp->raw_data().size() >= options_.blob_min_bytes)
        write_to_blob(t, tp, blob_, options_.blob_location);
    }
    for (const auto& n : g.nodes())
      if (!n->removed()) SDX_RETURN_IF_ERROR(node(*n, gp->add_node()), "node '" + n->name() + "'");
    for (const ir::Value* v : g.outputs()) {
      auto* vi = gp->add_output();
      vi->set_name(v->name());
      if (v->owner() == &g && !v->is_initializer())
        SDX_RETURN_IF_ERROR(write_type(v->type(), vi->mutable_type(), "output '" + v->name() + "'"), "");
    }
    return Status::ok();
  }

 private:
  Status node(const ir::Node& n, sdx_onnx::NodeProto* np) {
    np->set_name(n.name());
    np->set_op_type(n.op_type());
    np->set_domain(n.domain());
    for (const ir::Value* v : n.inputs()) np->add_input(v ? v->name() : "");
    for (const ir::Value* v : n.outputs()) np->add_output(v ? v->name() : "");
    opsets_->push_back(n.opset());
    int& newest = domains_[n.domain() == "ai.onnx" ? std::string() : n.domain()];
    newest = std::max(newest, n.opset());
    for (const ir::Attribute& a : n.attributes()) SDX_RETURN_IF_ERROR(attribute(a, np->add_attribute()), "attribute '" + a.name + "'");
    return Status::ok();
  }

  Status attribute(const ir::Attribute& a, sdx_onnx::AttributeProto* ap) {
    using T = ir::AttrType;
    using P = sdx_onnx::AttributeProto;
    ap->set_name(a.name);
    switch (a.type) {
      case T::kFloat: ap->set_type(P::FLOAT); ap->set_f(a.f); break;
      case T::kInt: ap->set_type(P::INT); ap->set_i(a.i); break;
      case T::kString: ap->set_type(P::STRING); ap->set_s(a.s); break;
      case T::kTensor: ap->set_type(P::TENSOR); return write_tensor(a.t, "", ap->mutable_t());
      case T::kGraph: ap->set_type(P::GRAPH); return graph(*a.g, ap->mutable_g());
      case T::kFloats: ap->set_type(P::FLOATS); for (float f : a.floats) ap->add_floats(f); break;
      case T::kInts: ap->set_type(P::INTS); for (int64_t i : a.ints) ap->add_ints(i); break;
      case T::kStrings: ap->set_type(P::STRINGS); for (const std::string& s : a.strings) ap->add_strings(s); break;
      case T::kTensors:
        ap->set_type(P::TENSORS);
        for (const Tensor& t : a.tensors) SDX_RETURN_IF_ERROR(write_tensor(t, "", ap->add_tensors()), "");
        break;
      case T::kGraphs:
        ap->set_type(P::GRAPHS);
        for (const auto& g : a.graphs) SDX_RETURN_IF_ERROR(graph(*g, ap->add_graphs()), "");
        break;
      case T::kTypeProto: ap->set_type(P::TYPE_PROTO); return write_type(a.tp, ap->mutable_tp(), "type attribute");
      default: return unimplemented(std::string("attributes of type ") + ir::attr_type_name(a.type) + " cannot be written");
    }
    return Status::ok();
  }

  std::vector<int>* opsets_;
  const SaveOptions& options_;
  std::string* blob_;

 public:
  // The newest opset each domain's nodes use ("" = ai.onnx): domains the optimizer introduced ("sdx")
  // get an opset import of their own.
  std::map<std::string, int> domains_;
};

// Every node in write order (the order Writer records opsets in).
void for_each_node(ir::Graph& g, const std::function<void(ir::Node&)>& f) {
  for (const auto& n : g.nodes()) {
    if (n->removed()) continue;
    f(*n);
    for (const ir::Attribute& a : n->attributes()) {
      if (a.type == ir::AttrType::kGraph && a.g) for_each_node(*a.g, f);
      if (a.type == ir::AttrType::kGraphs)
        for (const auto& sg : a.graphs) for_each_node(*sg, f);
    }
  }
}

}  // namespace

Result<SavedModel> save_model(const ir::Model& model, const SaveOptions& options) {
  if (!model.graph) return invalid_argument("save_model: the model has no graph");
  SavedModel saved;
  sdx_onnx::ModelProto mp;
  mp.set_ir_version(model.ir_version);
  mp.set_producer_name(model.producer);
  mp.set_producer_version(model.producer_version);
  mp.set_domain(model.domain);
  mp.set_model_version(model.model_version);
  mp.set_doc_string(model.doc_string);
  for (const auto& [k, v] : model.metadata) {
    auto* p = mp.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  Writer w(&saved.node_opsets, options, &saved.blob);
  SDX_RETURN_IF_ERROR(w.graph(*model.graph, mp.mutable_graph()), "writing graph '" + model.graph->name() + "'");
  if (options.node_opsets_in_metadata) {
    std::string list;
    for (int v : saved.node_opsets) list += (list.empty() ? "" : ",") + std::to_string(v);
    auto* p = mp.add_metadata_props();
    p->set_key(kNodeOpsetsKey);
    p->set_value(list);
  }
  std::map<std::string, int> opsets = model.opsets;
  for (const auto& [domain, version] : w.domains_) opsets.emplace(domain, version);
  for (const auto& [domain, version] : opsets) {
    auto* os = mp.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }
  if (mp.ByteSizeLong() > static_cast<size_t>(INT32_MAX))
    return resource_exhausted("the optimized model is over 2 GiB, the limit of one protobuf message");
  if (!mp.SerializeToString(&saved.bytes)) return internal_error("save_model: protobuf serialization failed");
  return saved;
}

Status apply_node_opsets(ir::Model& model, const std::vector<int>& opsets) {
  size_t count = 0;
  for_each_node(*model.graph, [&](ir::Node&) { ++count; });
  if (count != opsets.size())
    return data_loss("the model has " + std::to_string(count) + " nodes but " + std::to_string(opsets.size()) +
                     " node opsets were stored");
  size_t i = 0;
  bool bad = false;
  for_each_node(*model.graph, [&](ir::Node& n) {
    const int v = opsets[i++];
    if (v < 1) bad = true;
    n.set_opset(v);
  });
  if (bad) return data_loss("a stored node opset is below 1");
  return Status::ok();
}

}  // namespace sdx::onnx
