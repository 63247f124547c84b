#include "frontend/onnx/onnx_loader.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>

#include "frontend/onnx/external_data.h"
#include "frontend/onnx/onnx_writer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/onnx_signature.h"
#include "sdx_onnx.pb.h"

namespace sdx::onnx {
namespace {

Result<ir::TypeInfo> type_from_proto(const sdx_onnx::TypeProto& tp) {
  ir::TypeInfo ti;
  switch (tp.value_case()) {
    case sdx_onnx::TypeProto::kTensorType: {
      auto dt = dtype_from_onnx(tp.tensor_type().elem_type());
      ti.kind = ir::TypeInfo::Kind::kTensor;
      ti.elem = dt ? *dt : DType::kUndefined;
      if (tp.tensor_type().has_shape()) {
        std::vector<ir::Dim> dims;
        for (const auto& d : tp.tensor_type().shape().dim()) {
          if (d.has_dim_value()) dims.push_back(ir::Dim::fixed(d.dim_value()));
          else dims.push_back(ir::Dim::symbolic(d.dim_param()));
        }
        ti.shape = std::move(dims);
      }
      return ti;
    }
    case sdx_onnx::TypeProto::kSequenceType: {
      ti.kind = ir::TypeInfo::Kind::kSequence;
      SDX_ASSIGN_OR_RETURN(ir::TypeInfo inner, type_from_proto(tp.sequence_type().elem_type()), "sequence element");
      ti.inner = std::make_shared<ir::TypeInfo>(std::move(inner));
      return ti;
    }
    case sdx_onnx::TypeProto::kOptionalType: {
      ti.kind = ir::TypeInfo::Kind::kOptional;
      SDX_ASSIGN_OR_RETURN(ir::TypeInfo inner, type_from_proto(tp.optional_type().elem_type()), "optional element");
      ti.inner = std::make_shared<ir::TypeInfo>(std::move(inner));
      return ti;
    }
    case sdx_onnx::TypeProto::kMapType:
      ti.kind = ir::TypeInfo::Kind::kMap;
      return ti;
    case sdx_onnx::TypeProto::kSparseTensorType:
      return unimplemented("sparse tensors are not supported");
    case sdx_onnx::TypeProto::VALUE_NOT_SET:
      return ti;  // no type given: left for inference
    default:
      return unimplemented("value type case " + std::to_string(static_cast<int>(tp.value_case())) +
                           " is not supported");
  }
}

class Importer {
 public:
  Importer(const ExternalData& external, const std::map<std::string, int>& opsets,
           const std::map<std::string, Tensor>* replaced)
      : external_(external), replaced_(replaced), opsets_(opsets) {}
  // Replaced initializers the main graph does not have (an error).
  std::vector<std::string> unused_replacements() const {
    std::vector<std::string> out;
    if (replaced_)
      for (const auto& [name, t] : *replaced_)
        if (!used_.count(name)) out.push_back(name);
    return out;
  }
  // Whether a tensor was read from a file (external data not in the in-memory blob).
  bool read_files() const { return read_files_; }

  Status import_graph(const sdx_onnx::GraphProto& gp, ir::Graph& g) {
    const std::string where = "graph '" + gp.name() + "'";
    if (gp.sparse_initializer_size() > 0)
      return unimplemented(where + ": sparse initializers are not supported");
    for (const auto& vi : gp.input()) {
      if (vi.name().empty()) return invalid_argument(where + ": a graph input has no name");
      if (g.find_value(vi.name())) return invalid_argument(where + ": input '" + vi.name() + "' is declared twice");
      SDX_ASSIGN_OR_RETURN(ir::TypeInfo ti, type_from_proto(vi.type()), where + " input '" + vi.name() + "'");
      g.add_input(vi.name(), std::move(ti));
    }
    for (const auto& tp : gp.initializer()) {
      if (tp.name().empty()) return invalid_argument(where + ": an initializer has no name");
      if (const Tensor* r = replacement(tp)) {
        SDX_RETURN_IF_ERROR(check_replacement(tp, *r), where + " initializer '" + tp.name() + "'");
        g.add_initializer(tp.name(), *r);
        continue;
      }
      SDX_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, external_), where + " initializer '" + tp.name() + "'");
      note_external(tp);
      g.add_initializer(tp.name(), std::move(t));
    }
    for (int i = 0; i < gp.node_size(); ++i) SDX_RETURN_IF_ERROR(import_node(gp.node(i), i, g), where);
    for (const auto& vi : gp.value_info()) {
      ir::Value* v = g.find_value(vi.name());
      if (!v || v->is_initializer()) continue;
      SDX_ASSIGN_OR_RETURN(ir::TypeInfo ti, type_from_proto(vi.type()), where + " value_info '" + vi.name() + "'");
      if (ti.kind != ir::TypeInfo::Kind::kUnknown) v->mutable_type() = std::move(ti);
    }
    for (const auto& vi : gp.output()) {
      ir::Value* v = g.resolve(vi.name());
      if (!v) return invalid_argument(where + ": output '" + vi.name() + "' is not produced by any node, input or initializer");
      SDX_ASSIGN_OR_RETURN(ir::TypeInfo ti, type_from_proto(vi.type()), where + " output '" + vi.name() + "'");
      if (ti.kind != ir::TypeInfo::Kind::kUnknown && v->owner() == &g && !v->is_initializer()) v->mutable_type() = std::move(ti);
      g.add_output(v);
    }
    return g.sort_topologically();
  }

 private:
  Status import_node(const sdx_onnx::NodeProto& np, int index, ir::Graph& g) {
    std::string name = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
    const std::string where = "node '" + name + "' (" + np.op_type() + ")";
    std::vector<ir::Value*> inputs;
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = g.resolve(in);
      if (!v)
        return invalid_argument(where + " reads '" + in +
                                "', which no earlier node, graph input or initializer defines (nodes must be in topological order)");
      inputs.push_back(v);
    }
    std::vector<std::string> outputs(np.output().begin(), np.output().end());
    for (const std::string& out : outputs) {
      if (out.empty()) continue;
      ir::Value* existing = g.find_value(out);
      if (existing && (existing->producer() || existing->is_graph_input() || existing->is_initializer()))
        return invalid_argument(where + ": output '" + out + "' is already defined (graphs must be in SSA form)");
    }
    ir::Node* node = g.add_node(np.op_type(), np.domain(), name, inputs, outputs);
    auto it = opsets_.find(np.domain() == "ai.onnx" ? std::string() : np.domain());
    if (it == opsets_.end()) return invalid_argument(where + ": domain '" + np.domain() + "' is not imported by the model");
    node->set_opset(it->second);
    for (const auto& ap : np.attribute()) {
      SDX_ASSIGN_OR_RETURN(ir::Attribute a, import_attribute(ap, g), where + " attribute '" + ap.name() + "'");
      node->add_attribute(std::move(a));
    }
    return Status::ok();
  }

  Result<ir::Attribute> import_attribute(const sdx_onnx::AttributeProto& ap, ir::Graph& g) {
    ir::Attribute a;
    a.name = ap.name();
    if (!ap.ref_attr_name().empty()) return unimplemented("attribute references (functions) are not supported");
    switch (ap.type()) {
      case sdx_onnx::AttributeProto::FLOAT: a.type = ir::AttrType::kFloat; a.f = ap.f(); break;
      case sdx_onnx::AttributeProto::INT: a.type = ir::AttrType::kInt; a.i = ap.i(); break;
      case sdx_onnx::AttributeProto::STRING: a.type = ir::AttrType::kString; a.s = ap.s(); break;
      case sdx_onnx::AttributeProto::TENSOR: {
        a.type = ir::AttrType::kTensor;
        SDX_ASSIGN_OR_RETURN(a.t, tensor_from_proto(ap.t(), external_), "");
        note_external(ap.t());
        break;
      }
      case sdx_onnx::AttributeProto::GRAPH: {
        a.type = ir::AttrType::kGraph;
        SDX_ASSIGN_OR_RETURN(a.g, import_subgraph(ap.g(), g), "");
        break;
      }
      case sdx_onnx::AttributeProto::FLOATS: a.type = ir::AttrType::kFloats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
      case sdx_onnx::AttributeProto::INTS: a.type = ir::AttrType::kInts; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
      case sdx_onnx::AttributeProto::STRINGS: a.type = ir::AttrType::kStrings; a.strings.assign(ap.strings().begin(), ap.strings().end()); break;
      case sdx_onnx::AttributeProto::TENSORS:
        a.type = ir::AttrType::kTensors;
        for (const auto& tp : ap.tensors()) {
          SDX_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, external_), "");
          note_external(tp);
          a.tensors.push_back(std::move(t));
        }
        break;
      case sdx_onnx::AttributeProto::GRAPHS:
        a.type = ir::AttrType::kGraphs;
        for (const auto& gp : ap.graphs()) {
          SDX_ASSIGN_OR_RETURN(std::shared_ptr<ir::Graph> sg, import_subgraph(gp, g), "");
          a.graphs.push_back(std::move(sg));
        }
        break;
      case sdx_onnx::AttributeProto::TYPE_PROTO: {
        a.type = ir::AttrType::kTypeProto;
        SDX_ASSIGN_OR_RETURN(a.tp, type_from_proto(ap.tp()), "");
        break;
      }
      case sdx_onnx::AttributeProto::SPARSE_TENSOR:
        return unimplemented("sparse tensor attributes are not supported");
      default:
        return unimplemented("attribute type " + std::to_string(static_cast<int>(ap.type())) + " is not supported");
    }
    return a;
  }

  Result<std::shared_ptr<ir::Graph>> import_subgraph(const sdx_onnx::GraphProto& gp, ir::Graph& parent) {
    if (++depth_ > 64) return invalid_argument("subgraphs nested deeper than 64 levels");
    auto sg = std::make_shared<ir::Graph>(gp.name(), &parent);
    Status s = import_graph(gp, *sg);
    --depth_;
    if (!s.is_ok()) return s;
    return sg;
  }

 private:
  const ExternalData& external_;
  const std::map<std::string, Tensor>* replaced_;  // the main graph's replaced initializers, or null
  std::set<std::string> used_;
  bool read_files_ = false;
  const Tensor* replacement(const sdx_onnx::TensorProto& tp) {
    if (!replaced_ || depth_ != 0) return nullptr;
    auto it = replaced_->find(tp.name());
    if (it == replaced_->end()) return nullptr;
    used_.insert(tp.name());
    return &it->second;
  }
  static Status check_replacement(const sdx_onnx::TensorProto& tp, const Tensor& r) {
    auto dt = dtype_from_onnx(tp.data_type());
    std::vector<int64_t> dims(tp.dims().begin(), tp.dims().end());
    if (!dt || *dt != r.dtype() || dims != r.shape().dims())
      return invalid_argument("the value supplied for it is " + std::string(dtype_name(r.dtype())) + r.shape().to_string() +
                              " but the model declares " + (dt ? dtype_name(*dt) : std::string("an unknown type")) +
                              dims_to_string(dims));
    return Status::ok();
  }
  void note_external(const sdx_onnx::TensorProto& tp) {
    if (tp.data_location() != sdx_onnx::TensorProto::EXTERNAL) return;
    for (const auto& kv : tp.external_data())
      if (kv.key() == "location" && kv.value() != kBlobLocation) read_files_ = true;
  }
  const std::map<std::string, int>& opsets_;
  int depth_ = 0;
};

}  // namespace
}  // namespace sdx::onnx

namespace sdx::onnx {

Result<ir::Model> load_model_bytes(const std::string& bytes, const std::string& base_dir) {
  return load_model_bytes(std::string_view(bytes), ExternalData{base_dir, {}, nullptr});
}

Result<ir::Model> load_model_bytes(std::string_view bytes, const ExternalData& external, const ModelEdits* edits) {
  if (bytes.empty()) return invalid_argument("model is empty (0 bytes)");
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return invalid_argument("model is " + std::to_string(bytes.size()) +
                            " bytes; protobuf files are limited to 2 GiB, so larger weights must use external data");
  sdx_onnx::ModelProto mp;
  if (!mp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return data_loss("not a valid ONNX model: the protobuf could not be parsed (truncated or corrupt file?)");
  if (!mp.has_graph()) return invalid_argument("not a valid ONNX model: it has no graph");
  if (edits) SDX_RETURN_IF_ERROR(apply_free_dims(mp, edits->free_dims), "");
  const int64_t newest_ir = ir::onnx_limits().ir_version;
  if (mp.ir_version() < 1 || mp.ir_version() > newest_ir)
    return invalid_graph("unsupported ir_version " + std::to_string(mp.ir_version()) + ": sdx reads IR versions 1 to " +
                         std::to_string(newest_ir) + (mp.ir_version() == 0 ? " (the model does not set it)" : ""));
  ir::Model model;
  model.ir_version = mp.ir_version();
  model.producer = mp.producer_name();
  model.producer_version = mp.producer_version();
  model.domain = mp.domain();
  model.model_version = mp.model_version();
  model.doc_string = mp.doc_string();
  for (const auto& kv : mp.metadata_props()) model.metadata[kv.key()] = kv.value();
  for (const auto& os : mp.opset_import()) {
    const std::string domain = os.domain() == "ai.onnx" ? std::string() : os.domain();
    const std::string shown = domain.empty() ? "ai.onnx" : domain;
    if (os.version() < 1 || os.version() > INT32_MAX)
      return invalid_graph("opset_import of domain '" + shown + "' has version " + std::to_string(os.version()));
    if (!model.opsets.emplace(domain, static_cast<int>(os.version())).second)
      return invalid_graph("opset_import lists domain '" + shown + "' twice");
  }
  if (mp.opset_import_size() == 0) model.opsets[""] = 1;  // IR < 3 models have no opset import
  model.graph = std::make_shared<ir::Graph>(mp.graph().name());
  Importer importer(external, model.opsets, edits && !edits->initializers.empty() ? &edits->initializers : nullptr);
  SDX_RETURN_IF_ERROR(importer.import_graph(mp.graph(), *model.graph), "");
  if (std::vector<std::string> unused = importer.unused_replacements(); !unused.empty())
    return invalid_argument("an initializer was supplied for '" + unused.front() + "', but graph '" + mp.graph().name() +
                            "' has no initializer of that name");
  model.reads_external_files = importer.read_files();
  if (auto it = model.metadata.find(kNodeOpsetsKey); it != model.metadata.end()) {  // written by save_model
    std::vector<int> opsets;
    for (size_t pos = 0; pos < it->second.size();) {
      const size_t end = std::min(it->second.find(',', pos), it->second.size());
      SDX_ASSIGN_OR_RETURN(int64_t v, parse_external_data_number(it->second.substr(pos, end - pos)),
                           std::string("metadata '") + kNodeOpsetsKey + "'");
      opsets.push_back(static_cast<int>(std::min<int64_t>(v, INT32_MAX)));
      pos = end + 1;
    }
    model.metadata.erase(it);
    SDX_RETURN_IF_ERROR(apply_node_opsets(model, opsets), std::string("metadata '") + kNodeOpsetsKey + "'");
  }
  return model;
}

Result<ir::Model> load_model_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open model file '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.find_last_of('/'));
  if (dir.empty()) dir = "/";
  auto model = load_model_bytes(ss.str(), dir);
  if (!model.is_ok()) return model.status().with_context("model '" + path + "'");
  model->path = path;
  return model;
}

}  // namespace sdx::onnx
