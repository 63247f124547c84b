// _sdx: the nanobind extension behind the `sdx` Python package. Kept thin: the
// numpy-facing conversions live in python/sdx/_session.py; this file moves
// bytes, shapes and type names across the boundary and maps Status to exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "backend/kernel_registry.h"
#include "frontend/onnx/onnx_loader.h"
#include "ir/printer.h"
#include "runtime/introspection.h"
#include "runtime/session.h"
#include "testing/conformance.h"

namespace nb = nanobind;
using namespace sdx;

namespace {

PyObject* g_errors[10] = {};

struct StatusError {
  Status status;
};

[[noreturn]] void raise(const Status& s) { throw StatusError{s}; }

template <typename T>
T unwrap(Result<T> r) {
  if (!r.is_ok()) raise(r.status());
  return std::move(r).value();
}

nb::list shape_to_py(const ir::TypeInfo& t) {
  nb::list out;
  if (!t.shape) return out;
  for (const ir::Dim& d : *t.shape) {
    if (d.is_fixed()) out.append(d.value);
    else if (!d.param.empty()) out.append(d.param);
    else out.append(nb::none());
  }
  return out;
}

std::string type_to_py(const ir::TypeInfo& t) {
  if (t.kind == ir::TypeInfo::Kind::kSequence && t.inner) return "seq(" + type_to_py(*t.inner) + ")";
  if (t.kind == ir::TypeInfo::Kind::kOptional && t.inner) return "optional(" + type_to_py(*t.inner) + ")";
  return t.to_string();
}

nb::list describe_values(const std::vector<runtime::ValueInfo>& vals) {
  nb::list out;
  for (const auto& v : vals) out.append(nb::make_tuple(v.name, type_to_py(v.type), shape_to_py(v.type)));
  return out;
}

using ByteArray = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A tensor from Python: ("tensor", raw uint8 view, dtype name, shape) or ("strings", list, shape).
Tensor tensor_from_py(const std::string& name, nb::handle kind_h, nb::handle payload, nb::handle dtype_h, nb::handle shape_h) {
  std::string kind = nb::cast<std::string>(kind_h);
  std::vector<int64_t> dims = nb::cast<std::vector<int64_t>>(shape_h);
  Shape shape = unwrap(Shape::make(dims));
  if (kind == "strings") {
    nb::list items = nb::cast<nb::list>(payload);
    if (static_cast<int64_t>(items.size()) != shape.numel()) raise(invalid_argument("input '" + name + "': string count does not match shape"));
    Tensor t = unwrap(Tensor::allocate(DType::kString, shape));
    for (size_t i = 0; i < items.size(); ++i) t.data<std::string>()[i] = nb::cast<std::string>(items[i]);
    return t;
  }
  std::string dtype_str = nb::cast<std::string>(dtype_h);
  auto dt = dtype_from_name(dtype_str);
  if (!dt) raise(invalid_argument("input '" + name + "': unsupported element type '" + dtype_str + "'"));
  ByteArray raw = nb::cast<ByteArray>(payload);
  if (raw.shape(0) != dtype_storage_bytes(*dt, shape.numel()))
    raise(invalid_argument("input '" + name + "': buffer size does not match shape " + shape.to_string()));
  // Borrowed: the caller keeps the array alive for the duration of run(); outputs that alias it are copied.
  return Tensor::borrow(*dt, shape, raw.data());
}

nb::object tensor_to_py(const Tensor& t0) {
  Tensor t = t0;
  if (t.buffer() && t.buffer()->borrowed()) t = unwrap(t.clone());
  nb::list shape;
  for (int64_t d : t.shape().dims()) shape.append(d);
  if (t.dtype() == DType::kString) {
    nb::list items;
    for (int64_t i = 0; i < t.numel(); ++i) items.append(nb::str(t.data<std::string>()[i].data(), t.data<std::string>()[i].size()));
    return nb::make_tuple("strings", items, "string", shape);
  }
  auto* holder = new Tensor(t);
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  size_t n = t.nbytes();
  static uint8_t empty_byte = 0;
  void* data = n ? t.raw_data() : &empty_byte;
  nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> arr(data, {n}, owner);
  return nb::make_tuple("tensor", arr, dtype_name(t.dtype()), shape);
}

nb::object datum_to_py(const Datum& d) {
  if (d.is_tensor()) return tensor_to_py(d.as_tensor());
  if (d.is_sequence()) {
    nb::list items;
    for (const Tensor& t : d.as_sequence()) items.append(tensor_to_py(t));
    return nb::make_tuple("sequence", items, dtype_name(d.sequence_elem_type()), nb::none());
  }
  return nb::make_tuple("none", nb::none(), nb::none(), nb::none());
}

Datum datum_from_py(const std::string& name, nb::handle item) {
  nb::tuple tup = nb::cast<nb::tuple>(item);
  std::string kind = nb::cast<std::string>(tup[0]);
  if (kind == "none") return Datum::none();
  if (kind == "sequence") {
    std::vector<Tensor> items;
    DType elem = DType::kUndefined;
    if (auto dt = dtype_from_name(nb::cast<std::string>(tup[2]))) elem = *dt;
    for (nb::handle h : nb::cast<nb::list>(tup[1])) {
      nb::tuple e = nb::cast<nb::tuple>(h);
      items.push_back(tensor_from_py(name, e[0], e[1], e[2], e[3]));
      elem = items.back().dtype();
    }
    return Datum::sequence(std::move(items), elem);
  }
  return Datum::tensor(tensor_from_py(name, tup[0], tup[1], tup[2], tup[3]));
}

class PySession {
 public:
  PySession(nb::object model, nb::dict options) {
    runtime::SessionOptions opts;
    if (options.contains("intra_op_num_threads")) opts.intra_op_num_threads = nb::cast<int>(options["intra_op_num_threads"]);
    if (options.contains("log_level")) opts.log_level = nb::cast<int>(options["log_level"]);
    if (options.contains("warmup_runs")) opts.warmup_runs = std::max(1, nb::cast<int>(options["warmup_runs"]));
    if (options.contains("execution_mode")) {
      std::string mode = nb::cast<std::string>(options["execution_mode"]);
      if (mode == "SLOT_BY_SLOT") opts.execution_mode = runtime::ExecutionMode::kSlotBySlot;
      else if (mode == "AUTO") opts.execution_mode = runtime::ExecutionMode::kAuto;
      else raise(invalid_argument("execution_mode must be AUTO or SLOT_BY_SLOT, got '" + mode + "'"));
    }
    if (nb::isinstance<nb::bytes>(model)) {
      nb::bytes b = nb::cast<nb::bytes>(model);
      std::string bytes(static_cast<const char*>(b.data()), b.size());
      nb::gil_scoped_release release;
      session_ = unwrap(runtime::Session::load_bytes(bytes, opts));
    } else {
      std::string path = nb::cast<std::string>(nb::str(model));
      nb::gil_scoped_release release;
      session_ = unwrap(runtime::Session::load_file(path, opts));
    }
  }
  nb::list inputs() const { return describe_values(session_->inputs()); }
  nb::list outputs() const { return describe_values(session_->outputs()); }

  static std::vector<std::pair<std::string, Datum>> to_feeds(nb::list feeds) {
    std::vector<std::pair<std::string, Datum>> cfeeds;
    for (nb::handle h : feeds) {
      nb::tuple kv = nb::cast<nb::tuple>(h);
      std::string name = nb::cast<std::string>(kv[0]);
      cfeeds.emplace_back(name, datum_from_py(name, kv[1]));
    }
    return cfeeds;
  }

  nb::list run(nb::list feeds, std::vector<std::string> output_names) {
    std::vector<std::pair<std::string, Datum>> cfeeds = to_feeds(feeds);
    Result<std::vector<Datum>> outs = invalid_argument("not run");
    {
      nb::gil_scoped_release release;
      outs = session_->run(cfeeds, output_names);
    }
    std::vector<Datum> values = unwrap(std::move(outs));
    nb::list result;
    for (const Datum& d : values) result.append(datum_to_py(d));
    return result;
  }

  std::string graph_text() const { return ir::print_graph(*session_->model().graph); }

  // Runs once on `feeds`, recording shapes, and returns the plan table, memory figures and per-slot rows.
  nb::dict introspect(nb::list feeds) {
    std::vector<std::pair<std::string, Datum>> cfeeds = to_feeds(feeds);
    Result<runtime::PlanIntrospection> info = invalid_argument("not run");
    {
      nb::gil_scoped_release release;
      info = runtime::introspect(*session_, cfeeds);
    }
    runtime::PlanIntrospection pi = unwrap(std::move(info));
    nb::dict d;
    d["text"] = runtime::format_introspection(pi);
    d["steps"] = pi.num_steps;
    d["gap_steps"] = pi.num_gap_steps;
    d["dead_nodes"] = pi.num_dead_nodes;
    d["naive_bytes"] = pi.memory.naive_bytes;
    d["coloring_bytes"] = pi.memory.coloring_bytes;
    d["arena_bytes"] = pi.memory.arena_bytes;
    d["planned_bytes"] = pi.memory.planned_bytes();
    d["peak_live_bytes"] = pi.memory.peak_live_bytes;
    d["colors"] = pi.memory.num_colors();
    d["strategy"] = plan::strategy_name(pi.memory.chosen);
    nb::list slots;
    for (const runtime::SlotReport& r : pi.slots) {
      nb::dict row;
      row["index"] = r.index;
      row["name"] = r.name;
      row["kind"] = r.kind;
      row["producer"] = r.producer;
      row["liveness"] = nb::make_tuple(r.first, r.last);
      row["type"] = r.type;
      row["bytes"] = r.bytes;
      row["color"] = r.color;
      row["offset"] = r.offset;
      row["output"] = r.requested_output;
      row["view"] = r.view;
      row["gap"] = r.gap;
      slots.append(row);
    }
    d["slots"] = slots;
    return d;
  }

  nb::dict metadata() const {
    const ir::Model& m = session_->model();
    nb::dict d;
    d["producer_name"] = m.producer;
    d["producer_version"] = m.producer_version;
    d["graph_name"] = m.graph->name();
    d["domain"] = m.domain;
    d["description"] = m.doc_string;
    d["version"] = m.model_version;
    nb::dict custom;
    for (const auto& [k, v] : m.metadata) custom[nb::str(k.c_str())] = v;
    d["custom_metadata_map"] = custom;
    return d;
  }

  // Initializers that are also graph inputs: callers may feed them to override the stored value.
  nb::list overridable_initializers() const {
    nb::list out;
    const ir::Graph& g = *session_->model().graph;
    for (const ir::Value* v : g.inputs())
      if (v->is_initializer()) out.append(nb::make_tuple(v->name(), type_to_py(v->type()), shape_to_py(v->type())));
    return out;
  }

 private:
  std::unique_ptr<runtime::Session> session_;
};

void count_ops(const ir::Graph& g, std::map<std::string, int>& hist, std::map<std::string, std::vector<std::string>>& unsupported) {
  for (const auto& n : g.nodes()) {
    std::string op = (n->domain().empty() ? "" : n->domain() + ".") + n->op_type();
    ++hist[op];
    if (!backend::KernelRegistry::cpu().find(*n)) unsupported[op + " (opset " + std::to_string(n->opset()) + ")"].push_back(n->name());
    for (const ir::Graph* sg : n->subgraphs()) count_ops(*sg, hist, unsupported);
  }
}

// Model summary for `sdx inspect`; loads the graph without requiring kernels for every op.
nb::dict inspect_model(const std::string& path) {
  ir::Model m = unwrap(onnx::load_model_file(path));
  nb::dict out;
  nb::dict opsets;
  for (const auto& [d, v] : m.opsets) opsets[nb::str(d.empty() ? "ai.onnx" : d.c_str())] = v;
  out["opsets"] = opsets;
  out["ir_version"] = m.ir_version;
  out["producer"] = m.producer;
  nb::list ins, outs;
  for (const ir::Value* v : m.graph->inputs())
    if (!v->is_initializer()) ins.append(nb::make_tuple(v->name(), type_to_py(v->type()), shape_to_py(v->type())));
  for (const ir::Value* v : m.graph->outputs()) outs.append(nb::make_tuple(v->name(), type_to_py(v->type()), shape_to_py(v->type())));
  out["inputs"] = ins;
  out["outputs"] = outs;
  std::map<std::string, int> hist;
  std::map<std::string, std::vector<std::string>> unsupported;
  count_ops(*m.graph, hist, unsupported);
  nb::dict h;
  for (const auto& [k, v] : hist) h[nb::str(k.c_str())] = v;
  out["op_histogram"] = h;
  nb::dict u;
  for (const auto& [k, v] : unsupported) {
    nb::list names;
    for (const auto& s : v) names.append(s);
    u[nb::str(k.c_str())] = names;
  }
  out["unsupported"] = u;
  int64_t init_bytes = 0, init_count = 0;
  for (const ir::Value* v : m.graph->initializers()) {
    init_bytes += static_cast<int64_t>(v->initializer().nbytes());
    ++init_count;
  }
  out["initializer_count"] = init_count;
  out["initializer_bytes"] = init_bytes;
  return out;
}

}  // namespace

NB_MODULE(_sdx, m) {
  m.doc() = "sdx native module (use the `sdx` package instead)";
  PyObject* base = PyErr_NewException("sdx.SdxError", PyExc_RuntimeError, nullptr);
  m.attr("SdxError") = nb::handle(base);
  struct Sub {
    StatusCode code;
    const char* name;
    PyObject* extra;
  } subs[] = {
      {StatusCode::kInvalidArgument, "InvalidArgument", PyExc_ValueError},
      {StatusCode::kNotFound, "NoSuchFile", PyExc_FileNotFoundError},
      {StatusCode::kUnimplemented, "NotImplemented", PyExc_NotImplementedError},
      {StatusCode::kOutOfRange, "OutOfRange", PyExc_ValueError},
      {StatusCode::kFailedPrecondition, "FailedPrecondition", nullptr},
      {StatusCode::kResourceExhausted, "ResourceExhausted", PyExc_MemoryError},
      {StatusCode::kDataLoss, "InvalidProtobuf", PyExc_ValueError},
      {StatusCode::kIoError, "IoError", PyExc_OSError},
      {StatusCode::kInternal, "Fail", nullptr},
  };
  for (const Sub& s : subs) {
    PyObject* bases = s.extra ? PyTuple_Pack(2, base, s.extra) : PyTuple_Pack(1, base);
    std::string qual = std::string("sdx.") + s.name;
    PyObject* t = PyErr_NewException(qual.c_str(), bases, nullptr);
    Py_DECREF(bases);
    g_errors[static_cast<int>(s.code)] = t;
    m.attr(s.name) = nb::handle(t);
  }
  g_errors[0] = base;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyObject* t = g_errors[static_cast<int>(e.status.code())];
      PyErr_SetString(t ? t : g_errors[0], e.status.message().c_str());
    }
  });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<nb::object, nb::dict>(), nb::arg("model"), nb::arg("options"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("run", &PySession::run, nb::arg("feeds"), nb::arg("output_names"))
      .def("graph_text", &PySession::graph_text)
      .def("metadata", &PySession::metadata)
      .def("introspect", &PySession::introspect, nb::arg("feeds"))
      .def("overridable_initializers", &PySession::overridable_initializers);

  m.def("inspect_model", &inspect_model, nb::arg("path"));
  m.def("supported_ops", [] { return backend::KernelRegistry::cpu().op_names(); });
  m.def("run_conformance_case", [](const std::string& dir, double rtol, double atol) {
    testing::CaseResult r;
    {
      nb::gil_scoped_release release;
      r = testing::run_conformance_case(dir, rtol, atol);
    }
    return nb::make_tuple(testing::outcome_name(r.outcome), r.reason, r.millis);
  }, nb::arg("case_dir"), nb::arg("rtol") = 1e-3, nb::arg("atol") = 1e-7);
}
