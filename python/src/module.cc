// _sdx: the nanobind extension behind the `sdx` Python package. Kept thin: numpy arrays cross
// through numpy_fast.h on the fast path and the general conversions live in python/sdx/_session.py;
// this file moves bytes, shapes and type names across the boundary and maps Status to exceptions.
// Loading, options and running go through sdx's public C++ API (include/sdx/); the introspection it
// offers Python beyond that (debugger, replay checker, plan introspection, JIT statistics, the optimizer's
// report, the graph, the kernel registry, conformance cases, machine figures) has no public form yet and
// reaches the engine through api/public_access.h (docs/ARCHITECTURE.md lists each internal include).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>

#include "numpy_fast.h"
#include "py_status.h"
#include "sdx/sdx.h"
// Introspection with no public form yet (see above).
#include "api/load.h"           // inspect_model: a model's graph without a session
#include "api/optimized_model.h"  // SessionOptions.optimized_model_filepath
#include "api/public_access.h"  // the engine behind an sdx::Session
#include "backend/kernel_registry.h"
#include "ir/printer.h"
#include "plan/bucket_choice.h"
#include "backend/cpu/jit/jit_engine.h"
#include "runtime/debugger.h"
#include "runtime/introspection.h"
#include "runtime/replay_checker.h"
#include "runtime/run_control.h"
#include "testing/conformance.h"
#include "obs/machine_peak.h"

namespace nb = nanobind;
using namespace sdx;

namespace {

PyObject* g_errors[12] = {};  // by StatusCode

using py::raise;
using py::StatusError;
using py::unwrap;

nb::list shape_to_py(const ValueInfo& v) {
  nb::list out;
  for (const Dim& d : v.shape) {
    if (d.value >= 0) out.append(d.value);
    else if (!d.param.empty()) out.append(d.param);
    else out.append(nb::none());
  }
  return out;
}

nb::tuple describe_value(const ValueInfo& v) { return nb::make_tuple(v.name, v.type, shape_to_py(v)); }

// A graph value of the engine's (introspection: inspect_model, overridable initializers) as the API
// describes inputs and outputs.
nb::tuple describe_value(const ir::Value* v) {
  return describe_value(api::public_value_info(runtime::ValueInfo{v->name(), v->type()}));
}

nb::list describe_values(const std::vector<ValueInfo>& vals) {
  nb::list out;
  for (const auto& v : vals) out.append(describe_value(v));
  return out;
}

std::string dims_to_py_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

Status invalid_argument(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }

// Read-only arrays (np.frombuffer, mmap, onnx.numpy_helper) are read in place like writable ones.
using ByteArray = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A tensor from Python: ("tensor", raw uint8 view, dtype name, shape) or ("strings", list, shape).
Value tensor_from_py(const std::string& name, nb::handle kind_h, nb::handle payload, nb::handle dtype_h, nb::handle shape_h) {
  std::string kind = nb::cast<std::string>(kind_h);
  std::vector<int64_t> dims = nb::cast<std::vector<int64_t>>(shape_h);
  const int64_t numel = unwrap(element_count(dims));
  if (kind == "strings") {
    nb::list items = nb::cast<nb::list>(payload);
    if (static_cast<int64_t>(items.size()) != numel) raise(invalid_argument("input '" + name + "': string count does not match shape"));
    std::vector<std::string> strings;
    strings.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) strings.push_back(nb::cast<std::string>(items[i]));
    return unwrap(Value::strings(std::move(strings), dims));
  }
  std::string dtype_str = nb::cast<std::string>(dtype_h);
  ElementType dt;
  if (!parse_element_type(dtype_str, &dt)) raise(invalid_argument("input '" + name + "': unsupported element type '" + dtype_str + "'"));
  ByteArray raw = nb::cast<ByteArray>(payload);
  if (raw.shape(0) != element_storage_bytes(dt, numel))
    raise(invalid_argument("input '" + name + "': buffer size does not match shape " + dims_to_py_string(dims)));
  // Borrowed: the caller keeps the array alive for the duration of run(); outputs that alias it are copied.
  return unwrap(Value::borrow(TensorView{dt, dims.data(), static_cast<int>(dims.size()), raw.data()}));
}

nb::object tensor_to_py(const Value& t0) {
  const Value t = t0.borrows() ? unwrap(t0.owned()) : t0;
  nb::list shape;
  for (int64_t d : t.shape()) shape.append(d);
  if (t.element_type() == ElementType::kString) {
    nb::list items;
    for (int64_t i = 0; i < t.element_count(); ++i) items.append(nb::str(t.string_at(i).data(), t.string_at(i).size()));
    return nb::make_tuple("strings", items, "string", shape);
  }
  auto* holder = new Value(t);
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<Value*>(p); });
  size_t n = t.nbytes();
  static uint8_t empty_byte = 0;
  void* data = n ? const_cast<void*>(t.data()) : &empty_byte;
  nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> arr(data, {n}, owner);
  return nb::make_tuple("tensor", arr, element_type_name(t.element_type()), shape);
}

nb::object datum_to_py(const Value& d) {
  if (d.kind() == Value::Kind::kTensor) return tensor_to_py(d);
  if (d.kind() == Value::Kind::kSequence) {
    nb::list items;
    for (size_t i = 0; i < d.sequence_length(); ++i) items.append(tensor_to_py(d.sequence_item(i)));
    return nb::make_tuple("sequence", items, element_type_name(d.element_type()), nb::none());
  }
  return nb::make_tuple("none", nb::none(), nb::none(), nb::none());
}

Value datum_from_py(const std::string& name, nb::handle item) {
  nb::tuple tup = nb::cast<nb::tuple>(item);
  std::string kind = nb::cast<std::string>(tup[0]);
  if (kind == "none") return Value();
  if (kind == "sequence") {
    std::vector<Value> items;
    ElementType elem = ElementType::kUndefined;
    parse_element_type(nb::cast<std::string>(tup[2]), &elem);
    for (nb::handle h : nb::cast<nb::list>(tup[1])) {
      nb::tuple e = nb::cast<nb::tuple>(h);
      items.push_back(tensor_from_py(name, e[0], e[1], e[2], e[3]));
    }
    // The sequence's element type is its items' (the declared one only when it is empty).
    return unwrap(Value::sequence(items, items.empty() ? elem : ElementType::kUndefined));
  }
  return tensor_from_py(name, tup[0], tup[1], tup[2], tup[3]);
}

// numpy dtype (DLPack code, bits) <-> sdx element type, for the positional fast path.
bool dtype_from_dlpack(nb::dlpack::dtype d, ElementType* out) {
  using C = nb::dlpack::dtype_code;
  if (d.lanes != 1) return false;
  const auto code = static_cast<C>(d.code);
  struct Entry {
    C code;
    uint8_t bits;
    ElementType dt;
  };
  static const Entry kTable[] = {
      {C::Float, 32, ElementType::kFloat32}, {C::Float, 64, ElementType::kFloat64},
      {C::Float, 16, ElementType::kFloat16}, {C::Int, 8, ElementType::kInt8},
      {C::Int, 16, ElementType::kInt16},     {C::Int, 32, ElementType::kInt32},
      {C::Int, 64, ElementType::kInt64},     {C::UInt, 8, ElementType::kUint8},
      {C::UInt, 16, ElementType::kUint16},   {C::UInt, 32, ElementType::kUint32},
      {C::UInt, 64, ElementType::kUint64},   {C::Bool, 8, ElementType::kBool},
  };
  for (const Entry& e : kTable)
    if (e.code == code && e.bits == d.bits) {
      *out = e.dt;
      return true;
    }
  return false;
}

nb::dict report_to_py(const RunReport& r) {
  nb::dict d;
  d["slot_count"] = r.slot_count;
  d["execution_mode"] = r.execution_mode;
  d["mode_requested"] = r.mode_requested;
  d["mode_fallback_reason"] = r.mode_fallback_reason ? nb::object(nb::str(r.mode_fallback_reason)) : nb::none();
  d["phase"] = r.phase;
  d["replay_count"] = r.replay_count;
  d["call_count"] = r.call_count;
  d["avg_latency_us"] = r.avg_latency_us;
  d["peak_memory_bytes"] = r.peak_memory_bytes;
  d["captured_steps"] = r.captured_steps;
  d["gap_steps"] = r.gap_steps;
  d["slot_by_slot_steps"] = r.slot_by_slot_steps;
  d["fallback_reason"] = r.fallback_reason ? nb::object(nb::str(r.fallback_reason)) : nb::none();
  d["bucket_padding"] = r.bucket_padding;
  d["jit_segments"] = r.jit_segments;
  d["jit_fused_segments"] = r.jit_fused_segments;
  d["jit_fused_steps"] = r.jit_fused_steps;
  d["jit_pending_segments"] = r.jit_pending_segments;
  d["jit_failed_segments"] = r.jit_failed_segments;
  return d;
}

// A numpy array holding a copy of t (None for element types numpy cannot hold).
nb::object numpy_copy(const Value& t) {
  TensorView view;
  if (!t.view(&view)) return nb::none();
  const int type = py::numpy_typenum(view.dtype);
  if (type < 0) return nb::none();
  auto* buf = static_cast<uint8_t*>(::operator new(t.nbytes() ? t.nbytes() : 1));
  if (t.nbytes()) std::memcpy(buf, t.data(), t.nbytes());
  PyObject* arr = py::numpy_owning_array(view, type, buf);  // owns buf, also when it fails
  if (!arr) throw nb::python_error();
  return nb::steal(arr);
}

// ---- Session options: sdx.SessionOptions._to_dict() -> sdx::SessionOptions, one loop over the option
// table (SessionOptions::table(), from session_options.inc), keyed by each row's name.

const std::vector<OptionInfo>& option_table() {
  static const std::vector<OptionInfo> kTable = SessionOptions::table();
  return kTable;
}

[[noreturn]] void option_type_error(const OptionInfo& row, nb::handle v, const char* want) {
  std::string repr = nb::cast<std::string>(nb::repr(v));
  if (repr.size() > 60) repr = repr.substr(0, 60);
  throw nb::type_error(("sdx: SessionOptions." + row.name + " must be " + want + ", not " +
                        Py_TYPE(v.ptr())->tp_name + " " + repr)
                           .c_str());
}

// The value of `row` that `v` holds; TypeError naming the option when `v` is of the wrong Python type.
OptionValue option_from_py(const OptionInfo& row, nb::handle v) {
  PyObject* o = v.ptr();
  const bool is_bool = PyBool_Check(o);
  const std::string& type = row.type;
  if (type == "bool") {
    if (!is_bool) option_type_error(row, v, "bool");
    return o == Py_True;
  }
  if (type == "int" || type == "int64") {
    if (is_bool || !PyLong_Check(o)) option_type_error(row, v, "int");
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow)
      raise(invalid_argument("SessionOptions." + row.name + "=" + nb::cast<std::string>(nb::str(v)) +
                             " is out of range; expected " + row.accepts));
    return int64_t{x};
  }
  if (type == "double") {
    if (is_bool || !(PyFloat_Check(o) || PyLong_Check(o))) option_type_error(row, v, "float");
    if (PyFloat_Check(o)) return PyFloat_AsDouble(o);
    const double x = PyLong_AsDouble(o);
    if (x == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return x;
  }
  if (type == "string" || type == "execution mode") {
    if (!PyUnicode_Check(o)) option_type_error(row, v, "str");
    return nb::cast<std::string>(v);
  }
  if (type == "string list") {
    if (!PyList_Check(o) && !PyTuple_Check(o)) option_type_error(row, v, "a list of str");
    std::vector<std::string> items;
    for (nb::handle item : v) {
      if (!PyUnicode_Check(item.ptr())) option_type_error(row, v, "a list of str");
      items.push_back(nb::cast<std::string>(item));
    }
    return items;
  }
  raise(Status(StatusCode::kInternal, "unknown option type " + type));
}

SessionOptions options_from_py(nb::dict options) {
  SessionOptions opts;
  for (auto [key, value] : options) {
    if (!PyUnicode_Check(key.ptr())) throw nb::type_error("sdx: session option names must be str");
    const std::string name = nb::cast<std::string>(key);
    const OptionInfo* row = nullptr;
    for (const OptionInfo& r : option_table())
      if (r.name == name) row = &r;
    if (!row) {
      std::string names;
      for (const OptionInfo& r : option_table()) names += (names.empty() ? "" : ", ") + r.name;
      throw nb::value_error(("sdx: unknown session option '" + name + "'; the options are " + names).c_str());
    }
    if (Status s = opts.set(name, option_from_py(*row, value)); !s.is_ok()) raise(s);
  }
  return opts;
}

nb::object option_to_py(const OptionValue& v) {
  return std::visit([](const auto& x) -> nb::object { return nb::cast(x); }, v);
}

// The table for sdx.SessionOptions (its attributes and defaults) and the README check.
nb::list session_option_table() {
  nb::list out;
  for (const OptionInfo& r : option_table()) {
    nb::dict d;
    d["name"] = r.name;
    d["field"] = r.field;
    d["env"] = r.env;
    d["type"] = r.type;
    d["default"] = option_to_py(r.default_value);
    d["env_default"] = r.env_default;
    d["accepts"] = r.accepts;
    d["c_field"] = r.c_field.empty() ? nb::none() : nb::object(nb::str(r.c_field.c_str()));
    d["help"] = r.help;
    out.append(d);
  }
  return out;
}

nb::list session_option_switches() {
  nb::list out;
  for (const OptionSwitch& s : SessionOptions::switches()) {
    nb::dict d;
    d["env"] = s.env;
    d["field"] = s.field;
    d["help"] = s.help;
    out.append(d);
  }
  return out;
}

// sdx::ModelOverrides from SessionOptions._edits(); `dims` holds the initializers' shapes (the views point
// into it and into the arrays, which the caller's dict keeps alive through load()).
ModelOverrides overrides_from_py(nb::dict edits, std::vector<std::vector<int64_t>>& dims) {
  ModelOverrides o;
  nb::dict inits = nb::cast<nb::dict>(edits["initializers"]);
  dims.reserve(inits.size());
  for (auto [k, v] : inits) {
    const std::string name = nb::cast<std::string>(k);
    nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> arr;
    ElementType dt;
    if (!nb::try_cast(v, arr, false) || !dtype_from_dlpack(arr.dtype(), &dt))
      raise(invalid_argument("initializer '" + name + "': expected a C-contiguous numeric array"));
    dims.emplace_back();
    for (size_t d = 0; d < arr.ndim(); ++d) dims.back().push_back(static_cast<int64_t>(arr.shape(d)));
    o.initializers.emplace_back(name, TensorView{dt, dims.back().data(), static_cast<int>(arr.ndim()), arr.data()});
  }
  for (auto [k, v] : nb::cast<nb::dict>(edits["external_files"])) {
    nb::bytes b = nb::cast<nb::bytes>(v);
    o.external_files.emplace_back(nb::cast<std::string>(k), std::string_view(static_cast<const char*>(b.data()), b.size()));
  }
  for (nb::handle h : nb::cast<nb::list>(edits["free_dims"])) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    auto& list = nb::cast<std::string>(t[0]) == "denotation" ? o.free_dims_by_denotation : o.free_dims_by_name;
    list.emplace_back(nb::cast<std::string>(t[1]), nb::cast<int64_t>(t[2]));
  }
  return o;
}

class PySession {
 public:
  // `edits`: None, or {"initializers": {name: C-contiguous array}, "external_files": {location: bytes},
  // "free_dims": [("name" | "denotation", key, value)]} (sdx.SessionOptions._edits()).
  PySession(nb::object model, nb::dict options, nb::object edits) {
    SessionOptions opts = options_from_py(options);
    ModelOverrides overrides;
    std::vector<std::vector<int64_t>> dims;  // the initializers' shapes, alive through load()
    if (!edits.is_none()) overrides = overrides_from_py(nb::cast<nb::dict>(edits), dims);
    const bool edited = !edits.is_none();
    Result<Session> loaded = Status(StatusCode::kInternal, "not loaded");
    if (nb::isinstance<nb::bytes>(model)) {
      nb::bytes b = nb::cast<nb::bytes>(model);
      std::string_view bytes(static_cast<const char*>(b.data()), b.size());
      nb::gil_scoped_release release;
      loaded = edited ? Session::load_bytes(bytes, opts, overrides) : Session::load_bytes(bytes, opts);
    } else {
      std::string path = nb::cast<std::string>(nb::str(model));
      nb::gil_scoped_release release;
      loaded = edited ? Session::load(path, opts, overrides) : Session::load(path, opts);
    }
    session_ = std::make_unique<Session>(unwrap(std::move(loaded)));
    for (const auto& v : session_->inputs()) {
      PyObject* key = PyUnicode_FromStringAndSize(v.name.data(), static_cast<Py_ssize_t>(v.name.size()));
      if (!key) throw nb::python_error();
      PyUnicode_InternInPlace(&key);
      input_keys_.push_back(nb::steal(key));
      positional_ = positional_ && v.is_tensor;
    }
    int pos = 0;
    for (const auto& v : session_->outputs()) output_index_[nb::str(v.name.data(), v.name.size())] = pos++;
  }
  nb::list inputs() const { return describe_values(session_->inputs()); }

  // The fast path: one C-contiguous numpy array per input, in order; `outputs` are output
  // positions (empty = all). Returns the outputs as numpy arrays, or None when an argument
  // or an output needs the general path (other element types, non-contiguous arrays, sequences).
  nb::object run_arrays(nb::list arrays, std::vector<int> outputs, bool want_report, nb::handle terminate) {
    const size_t n = arrays.size();
    if (n > kMaxFastInputs) return nb::none();
    nb::handle items[kMaxFastInputs];
    for (size_t i = 0; i < n; ++i) items[i] = arrays[i];
    return run_handles(items, n, outputs, want_report, py::terminate_flag(terminate));
  }

  // run() of InferenceSession in one call: `feed` a dict holding exactly the model's inputs (all plain
  // tensors), output_names None/empty or output names. None when the general path must take it.
  nb::object run_feed(nb::handle feed, nb::handle output_names, nb::handle terminate) {
    const size_t n = input_keys_.size();
    if (!positional_ || n > kMaxFastInputs || !PyDict_CheckExact(feed.ptr()) ||
        static_cast<size_t>(PyDict_Size(feed.ptr())) != n)
      return nb::none();
    nb::handle items[kMaxFastInputs];
    for (size_t i = 0; i < n; ++i) {
      PyObject* v = PyDict_GetItemWithError(feed.ptr(), input_keys_[i].ptr());  // borrowed
      if (!v) {
        PyErr_Clear();
        return nb::none();
      }
      items[i] = v;
    }
    std::vector<int> outputs;
    if (!output_names.is_none()) {
      for (nb::handle name : output_names) {
        PyObject* pos = PyDict_GetItemWithError(output_index_.ptr(), name.ptr());
        if (!pos) {
          PyErr_Clear();
          return nb::none();
        }
        outputs.push_back(static_cast<int>(PyLong_AsLong(pos)));
      }
    }
    return run_handles(items, n, outputs, false, py::terminate_flag(terminate));
  }

 private:
  static constexpr size_t kMaxFastInputs = 64;

  // run_handles on a session with shape buckets: the arrays borrowed as the engine's inputs, padded and
  // sliced back by it (runtime::Session::run_inputs), every output returned.
  nb::object run_bucketed(const TensorView* args, size_t n, bool want_report, const std::atomic<bool>* terminate) {
    std::vector<Datum> in;
    in.reserve(n);
    for (size_t i = 0; i < n; ++i)
      in.push_back(Datum::tensor(Tensor::borrow(args[i].dtype, Shape(std::vector<int64_t>(args[i].dims, args[i].dims + args[i].rank)),
                                                const_cast<void*>(args[i].data))));
    std::vector<const Datum*> ptrs;
    for (const Datum& d : in) ptrs.push_back(&d);
    runtime::ExecutionReport rep;
    Result<std::vector<Datum>> outs = invalid_argument("not run");
    {
      nb::gil_scoped_release release;
      runtime::TerminateScope stop(terminate);
      outs = engine().run_inputs(ptrs, want_report ? &rep : nullptr);
    }
    if (!outs.is_ok()) raise(outs.status());
    nb::list result;
    for (Datum& d : outs.value()) result.append(datum_to_py(api::value_of(std::move(d))));
    // Marked as the general path's: outputs that are not plain tensors are decoded by the Python side.
    if (!want_report) return nb::make_tuple(nb::str("general"), result);
    return nb::make_tuple(nb::str("general"), nb::make_tuple(result, report_to_py(api::public_report(rep))));
  }

  nb::object run_handles(const nb::handle* items, size_t n, const std::vector<int>& outputs, bool want_report,
                         const std::atomic<bool>* terminate) {
    // Shape buckets pad on the engine's Datum path (runtime/shape_buckets.h): run_bucketed below for all
    // outputs, the general path for a subset.
    if (engine().shape_buckets() && !outputs.empty()) return nb::none();
    // Storage for n arguments only: constructing kMaxFastInputs of each on every call cost more than
    // a small model's whole run.
    alignas(TensorView) unsigned char arg_storage[kMaxFastInputs * sizeof(TensorView)];
    auto* args = reinterpret_cast<TensorView*>(arg_storage);
    int64_t dims[kMaxFastInputs][py::kMaxNumpyRank];
    // Inputs that are not plain numpy arrays (DLPack producers such as torch tensors) are read through
    // nanobind; the views keep what they borrow alive for the call.
    std::vector<nb::ndarray<nb::ro, nb::device::cpu>> views;
    // The arrays stay referenced while the GIL is released: another thread may drop them from the feed.
    struct KeepAlive {
      PyObject* objs[kMaxFastInputs];
      size_t n = 0;
      ~KeepAlive() {
        for (size_t i = 0; i < n; ++i) Py_DECREF(objs[i]);
      }
    } keep;
    for (size_t i = 0; i < n; ++i) {
      TensorView* arg = new (&args[i]) TensorView();
      if (py::numpy_input(items[i].ptr(), arg, dims[i])) {
        Py_INCREF(items[i].ptr());
        keep.objs[keep.n++] = items[i].ptr();
        continue;
      }
      if (views.empty()) views.reserve(n);
      nb::ndarray<nb::ro, nb::device::cpu> view;
      if (!nb::try_cast(items[i], view, /*convert=*/false)) return nb::none();
      if (view.ndim() > static_cast<size_t>(py::kMaxNumpyRank) || !dtype_from_dlpack(view.dtype(), &arg->dtype))
        return nb::none();
      int64_t expect = 1;
      for (size_t d = view.ndim(); d-- > 0;) {
        dims[i][d] = static_cast<int64_t>(view.shape(d));
        if (view.shape(d) != 1 && view.stride(d) != expect) return nb::none();  // not C-contiguous
        expect *= static_cast<int64_t>(view.shape(d));
      }
      arg->dims = dims[i];
      arg->rank = static_cast<int>(view.ndim());
      arg->data = view.data();
      views.push_back(std::move(view));
    }
    if (engine().shape_buckets()) return run_bucketed(args, n, want_report, terminate);
    std::unique_ptr<RunContext> ctx = session_->acquire_context();
    ctx->set_terminate_flag(terminate);
    RunReport report;
    Status st;
    // One GIL release for the run and the copies of the tensor outputs out of the engine's memory
    // (reused by the next run), made by the session's threads: a decode step returns its whole KV cache.
    constexpr size_t kInline = 16;
    void* copies_inline[kInline];
    int types_inline[kInline];
    std::vector<void*> copies_heap;
    std::vector<int> types_heap;
    void** copies = copies_inline;
    int* types = types_inline;
    size_t num_out = 0;
    {
      nb::gil_scoped_release release;
      st = session_->run(*ctx, args, n, outputs, want_report ? &report : nullptr);
      if (st.is_ok()) {
        num_out = ctx->num_outputs();
        if (num_out > kInline) {
          copies_heap.resize(num_out);
          types_heap.resize(num_out);
          copies = copies_heap.data();
          types = types_heap.data();
        }
        for (size_t i = 0; i < num_out; ++i) {
          copies[i] = nullptr;
          TensorView v;
          if (!ctx->output_view(i, &v) || (types[i] = py::numpy_typenum(v.dtype)) < 0) continue;
          const size_t bytes = element_storage_bytes(v.dtype, view_numel(v));
          copies[i] = ::operator new(bytes ? bytes : 1);
        }
        session_->copy_outputs(*ctx, copies);
      }
    }
    if (!st.is_ok()) {
      session_->release_context(std::move(ctx));
      raise(st);
    }
    // Frees the copies not yet handed to an array when this returns by an exception.
    struct FreeCopies {
      void** copies;
      size_t n;
      ~FreeCopies() {
        for (size_t i = 0; i < n; ++i) ::operator delete(copies[i]);
      }
    } free_copies{copies, num_out};
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(num_out));
    if (!list) throw nb::python_error();
    nb::list result = nb::steal<nb::list>(list);
    bool general = false;
    for (size_t i = 0; i < num_out; ++i) {
      PyObject* o = nullptr;
      if (copies[i]) {
        void* buf = copies[i];
        copies[i] = nullptr;
        TensorView v;
        ctx->output_view(i, &v);
        o = py::numpy_owning_array(v, types[i], buf);  // owns buf, also when it fails
        if (!o) throw nb::python_error();
      } else {
        general = true;
        o = datum_to_py(ctx->output(i)).release().ptr();  // decoded by the Python side
      }
      PyList_SET_ITEM(result.ptr(), static_cast<Py_ssize_t>(i), o);  // steals o
    }
    session_->release_context(std::move(ctx));
    nb::object out = want_report ? nb::object(nb::make_tuple(result, report_to_py(report))) : nb::object(result);
    return general ? nb::object(nb::make_tuple("general", out)) : out;
  }

 public:
  static int64_t view_numel(const TensorView& v) {
    int64_t n = 1;
    for (int d = 0; d < v.rank; ++d) n *= v.dims[d];
    return n;
  }

  // The engine behind the session, for the introspection below (no public form yet).
  runtime::Session& engine() const { return api::engine(*session_); }

  nb::dict optimization_report() const {
    const opt::OptimizationReport& r = engine().optimization();
    nb::dict d;
    d["enabled"] = r.enabled;
    d["iterations"] = r.iterations;
    nb::dict per_pass;
    for (const auto& [pass, n] : r.rewrites_per_pass) per_pass[nb::str(pass.c_str())] = n;
    d["rewrites_per_pass"] = per_pass;
    nb::list skipped;
    for (const auto& s : r.skipped) skipped.append(s);
    d["skipped"] = skipped;
    nb::dict before, after;
    for (const auto& [op, n] : r.ops_before) before[nb::str(op.c_str())] = n;
    for (const auto& [op, n] : r.ops_after) after[nb::str(op.c_str())] = n;
    d["ops_before"] = before;
    d["ops_after"] = after;
    nb::list log;
    for (const auto& w : r.log) log.append(nb::make_tuple(w.pass, w.what, w.node));
    d["log"] = log;
    d["nodes_before"] = r.nodes_before;
    d["nodes_after"] = r.nodes_after;
    d["millis"] = r.millis;
    d["text"] = opt::format_report(r);
    return d;
  }

  nb::dict cache_stats() const {
    runtime::PlanCacheStats st = engine().cache_stats();
    nb::dict d;
    d["entries"] = st.entries;
    d["frozen_bytes"] = st.frozen_bytes;
    d["evictions"] = st.evictions;
    d["passivations"] = st.passivations;
    d["pool_hits"] = st.pool.hits;
    d["pool_misses"] = st.pool.misses;
    d["pool_idle_bytes"] = st.pool.idle_bytes;
    return d;
  }
  nb::list outputs() const { return describe_values(session_->outputs()); }

  static Session::Feeds to_feeds(nb::list feeds) {
    Session::Feeds cfeeds;
    for (nb::handle h : feeds) {
      nb::tuple kv = nb::cast<nb::tuple>(h);
      std::string name = nb::cast<std::string>(kv[0]);
      cfeeds.emplace_back(name, datum_from_py(name, kv[1]));
    }
    return cfeeds;
  }

  // The feeds as the engine's introspection takes them.
  static std::vector<std::pair<std::string, Datum>> to_engine_feeds(nb::list feeds) {
    std::vector<std::pair<std::string, Datum>> out;
    for (auto& [name, v] : to_feeds(feeds)) out.emplace_back(name, api::datum_of(v));
    return out;
  }

  // The general path (any feeds, shape buckets): the outputs, or (outputs, report) with want_report.
  nb::object run(nb::list feeds, std::vector<std::string> output_names, nb::handle terminate, bool want_report) {
    Session::Feeds cfeeds = to_feeds(feeds);
    const std::atomic<bool>* stop = py::terminate_flag(terminate);
    Result<std::vector<Value>> outs = invalid_argument("not run");
    RunReport report;
    {
      nb::gil_scoped_release release;
      outs = session_->run(cfeeds, output_names, want_report ? &report : nullptr, stop);
    }
    std::vector<Value> values = unwrap(std::move(outs));
    nb::list result;
    for (const Value& d : values) result.append(datum_to_py(d));
    if (!want_report) return result;
    return nb::make_tuple(result, report_to_py(report));
  }

  std::string graph_text() const { return ir::print_graph(*engine().model().graph); }

  // Runs once on `feeds`, recording shapes, and returns the plan table, memory figures and per-slot rows.
  // Runs slot by slot with breakpoints (plan slot indices or value names); callback(slot, name, op,
  // node, value) is called with the GIL at each, the value as numpy (or decoded). Returns the outputs.
  nb::list debug(nb::list feeds, nb::list breakpoints, nb::object callback) {
    std::vector<std::pair<std::string, Datum>> cfeeds = to_engine_feeds(feeds);
    runtime::Debugger dbg(engine());
    for (nb::handle b : breakpoints) {
      Status st = nb::isinstance<nb::int_>(b) ? dbg.break_at_slot(nb::cast<int>(b))
                                              : dbg.break_at_value(nb::cast<std::string>(b));
      if (!st.is_ok()) raise(st);
    }
    std::vector<Datum> outs;
    {
      // The callback runs on this thread; the GIL is released around the run and taken at each breakpoint.
      nb::gil_scoped_release release;
      Result<std::vector<Datum>> r = dbg.run(cfeeds, [&](const runtime::BreakpointHit& h) {
        nb::gil_scoped_acquire gil;
        const Value v = api::value_of(*h.value);
        nb::object value = v.is_tensor() ? numpy_copy(v) : nb::none();
        if (value.is_none()) value = datum_to_py(v);
        callback(h.slot, *h.name, *h.op, *h.node, value);
      });
      if (!r.is_ok()) {
        nb::gil_scoped_acquire gil;
        raise(r.status());
      }
      outs = std::move(r).value();
    }
    nb::list result;
    for (const Datum& d : outs) result.append(datum_to_py(api::value_of(d)));
    return result;
  }

  nb::dict check_replay(nb::list feeds, double atol) {
    std::vector<std::pair<std::string, Datum>> cfeeds = to_engine_feeds(feeds);
    Result<runtime::ReplayCheck> r = invalid_argument("not run");
    {
      nb::gil_scoped_release release;
      r = runtime::check_replay(engine(), cfeeds, atol);
    }
    runtime::ReplayCheck c = unwrap(std::move(r));
    auto loc = [](const runtime::SlotLocation& l) -> nb::object {
      if (l.slot < 0) return nb::none();
      nb::dict d;
      d["slot"] = l.slot;
      d["step"] = l.step;
      d["value"] = l.value;
      d["op"] = l.op;
      d["node"] = l.node;
      return d;
    };
    nb::dict d;
    d["replayed"] = c.replayed;
    d["not_replayed_why"] = c.not_replayed_why;
    d["compared"] = c.compared;
    d["skipped"] = c.skipped;
    d["diverged"] = c.diverged;
    d["first_divergence"] = loc(c.first_divergence);
    d["max_abs_diff"] = c.max_abs_diff;
    d["first_index"] = c.first_index;
    d["nonfinite"] = c.nonfinite;
    d["first_nonfinite"] = loc(c.first_nonfinite);
    d["reference_nonfinite"] = c.reference_nonfinite;
    d["summary"] = c.summary();
    return d;
  }

  nb::dict introspect(nb::list feeds) {
    std::vector<std::pair<std::string, Datum>> cfeeds = to_engine_feeds(feeds);
    Result<runtime::PlanIntrospection> info = invalid_argument("not run");
    {
      nb::gil_scoped_release release;
      info = runtime::introspect(engine(), cfeeds);
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
    d["phase"] = pi.phase;
    d["fallback_reason"] = pi.fallback;
    d["captured_steps"] = pi.captured_steps;
    d["bound_steps"] = pi.bound_steps;
    d["elided_steps"] = pi.elided_steps;
    d["placed_inputs"] = pi.placed_inputs;
    d["waves"] = pi.num_waves;
    d["concurrent_groups"] = pi.concurrent_groups;
    d["concurrent_steps"] = pi.concurrent_steps;
    d["slot_by_slot_steps"] = pi.slot_by_slot_steps;
    d["intermediate_bytes"] = pi.intermediate_bytes;
    d["frozen_bytes"] = pi.frozen_bytes;
    nb::list slots;
    for (const runtime::SlotReport& r : pi.slots) {
      nb::dict row;
      row["index"] = r.index;
      row["name"] = r.name;
      row["kind"] = r.kind;
      row["producer"] = r.producer;
      row["liveness"] = nb::make_tuple(r.first, r.last);
      row["state"] = r.state;
      row["node_phase"] = r.node_phase;
      nb::list wiring;
      for (int w : r.wiring) wiring.append(w);
      row["wiring"] = wiring;
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
    d["jit"] = pi.jit;
    d["jit_threshold"] = pi.jit_threshold;
    d["jit_text"] = runtime::format_jit(pi);
    nb::list segs;
    for (const runtime::JitSegmentReport& s : pi.jit_segments) {
      nb::dict row;
      row["steps"] = nb::make_tuple(s.first_step, s.last_step);
      row["description"] = s.description;
      row["score"] = s.score;
      row["state"] = s.state;
      row["status"] = s.status;
      row["fused_us"] = s.fused_us;
      row["unfused_us"] = s.unfused_us;
      segs.append(row);
    }
    d["jit_segments"] = segs;
    return d;
  }

  // The kernel JIT's counters for this session (all zero when it is off).
  nb::dict jit_stats() const {
    nb::dict d;
    jit::JitStats st;
    jit::JitEngine* jit = engine().jit();
    if (jit) st = jit->stats();
    d["enabled"] = jit != nullptr;
    d["cache_dir"] = jit ? jit->cache().dir() : std::string();
    d["requests"] = st.requests;
    d["disk_cache_hits"] = st.disk_cache_hits;
    d["compiled"] = st.compiled;
    d["failed"] = st.failed;
    d["compiler_runs"] = st.compiler_runs;
    return d;
  }
  // The loop analysis's reports (sdx::Session::loop_reports): one JSON object each, oldest first.
  std::vector<std::string> loop_reports() const {
    std::vector<std::string> out;
    for (const LoopReport& r : session_->loop_reports()) out.push_back(r.json);
    return out;
  }
  void clear_loop_reports() const { session_->clear_loop_reports(); }
  bool wait_for_jit(double timeout_s) {
    nb::gil_scoped_release release;
    return engine().wait_for_jit(timeout_s);
  }

  // Every subgraph body (If branch, Loop/Scan body) as it stands: a list of dicts, nested bodies in "nested".
  nb::list subgraph_reports() const { return body_report_list(engine().body_reports()); }

  // The shape buckets: {"buckets": what the option declares, "status": "unchecked" | "checked: ..." |
  // "disabled: ..."}, or None without them.
  // The resolved kv_streams option (environment included), for the Python InferenceSession.
  bool kv_streams() const { return engine().options().kv_streams; }

  nb::object shape_buckets() const {
    const runtime::ShapeBuckets* b = engine().shape_buckets();
    if (!b) return nb::none();
    nb::dict d;
    d["buckets"] = b->describe();
    d["status"] = b->status();
    return d;
  }

  // Per symbolic input dim: "" when padding it is proven exact (independent rows), else why not.
  nb::dict row_dims() const {
    nb::dict d;
    for (const auto& [name, why] : engine().row_dims()) d[nb::str(name.c_str())] = why;
    return d;
  }

  static nb::list body_report_list(const std::vector<runtime::BodyReport>& reports) {
    nb::list out;
    for (const runtime::BodyReport& r : reports) {
      nb::dict d;
      d["body"] = r.body;
      d["attribute"] = r.attribute;
      d["owner"] = r.owner;
      d["owner_op"] = r.owner_op;
      d["plan"] = r.plan;
      d["why"] = r.why;
      d["calls"] = r.calls;
      d["replays"] = r.replays;
      d["new_plans"] = r.new_plans;
      d["captured_steps"] = r.captured_steps;
      d["gap_steps"] = r.gap_steps;
      d["last_fallback"] = r.last_fallback;
      nb::dict rewrites;
      for (const auto& [pass, n] : r.rewrites) rewrites[nb::str(pass.c_str())] = n;
      d["rewrites"] = rewrites;
      d["nested"] = body_report_list(r.nested);
      out.append(d);
    }
    return out;
  }

  nb::dict metadata() const {
    const ir::Model& m = engine().model();
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

  // The optimized graph as an ONNX file (SessionOptions.optimized_model_filepath); `external_file` ("" none)
  // takes the initializers of at least min_bytes, beside it.
  void save_optimized_model(const std::string& path, const std::string& external_file, int64_t min_bytes) {
    if (min_bytes < 0) raise(invalid_argument("optimized model: the external initializer size threshold is negative"));
    Status st;
    {
      nb::gil_scoped_release release;
      st = api::save_optimized_model(engine(), path, {external_file, static_cast<size_t>(min_bytes)});
    }
    if (!st.is_ok()) raise(st);
  }

  // The nodes the session runs, all on the CPU: (domain, op_type, name) in plan order of the main graph.
  nb::list nodes() const {
    nb::list out;
    for (const auto& n : engine().model().graph->nodes())
      if (!n->removed()) out.append(nb::make_tuple(n->domain(), n->op_type(), n->name()));
    return out;
  }

  // Initializers that are also graph inputs: callers may feed them to override the stored value.
  nb::list overridable_initializers() const {
    nb::list out;
    const ir::Graph& g = *engine().model().graph;
    for (const ir::Value* v : g.inputs())
      if (v->is_initializer()) out.append(describe_value(v));
    return out;
  }

 private:
  // The fast path's contexts come from the session's own pool (acquire_context / release_context).
  std::unique_ptr<Session> session_;
  // run_feed's lookups: the input names in order (interned str), output name -> position, and whether
  // every input is a plain tensor (else the general path encodes the feeds).
  std::vector<nb::object> input_keys_;
  nb::dict output_index_;
  bool positional_ = true;
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
  ir::Model m = unwrap(api::load_model_file(path));
  nb::dict out;
  nb::dict opsets;
  for (const auto& [d, v] : m.opsets) opsets[nb::str(d.empty() ? "ai.onnx" : d.c_str())] = v;
  out["opsets"] = opsets;
  out["ir_version"] = m.ir_version;
  out["producer"] = m.producer;
  nb::list ins, outs;
  for (const ir::Value* v : m.graph->inputs())
    if (!v->is_initializer()) ins.append(describe_value(v));
  for (const ir::Value* v : m.graph->outputs()) outs.append(describe_value(v));
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
  if (!py::numpy_api_init()) throw nb::python_error();
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
      {StatusCode::kInvalidGraph, "InvalidGraph", PyExc_ValueError},
  };
  for (const Sub& s : subs) {
    PyObject* bases = s.extra ? PyTuple_Pack(2, base, s.extra) : PyTuple_Pack(1, base);
    std::string qual = std::string("sdx.") + s.name;
    PyObject* t = PyErr_NewException(qual.c_str(), bases, nullptr);
    Py_DECREF(bases);
    g_errors[static_cast<int>(s.code)] = t;
    m.attr(s.name) = nb::handle(t);
  }
  // A run stopped by RunOptions.terminate: a Fail, as onnxruntime raises it, of its own class.
  PyObject* cancelled_bases = PyTuple_Pack(1, g_errors[static_cast<int>(StatusCode::kInternal)]);
  g_errors[static_cast<int>(StatusCode::kCancelled)] = PyErr_NewException("sdx.Cancelled", cancelled_bases, nullptr);
  Py_DECREF(cancelled_bases);
  m.attr("Cancelled") = nb::handle(g_errors[static_cast<int>(StatusCode::kCancelled)]);
  g_errors[0] = base;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const int code = static_cast<int>(e.status.code());
      PyObject* t = code >= 0 && code < static_cast<int>(std::size(g_errors)) ? g_errors[code] : nullptr;
      PyErr_SetString(t ? t : g_errors[0], e.status.message().c_str());
    }
  });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<nb::object, nb::dict, nb::object>(), nb::arg("model"), nb::arg("options"),
           nb::arg("edits").none() = nb::none())
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("run", &PySession::run, nb::arg("feeds"), nb::arg("output_names"), nb::arg("terminate").none() = nb::none(),
           nb::arg("want_report") = false)
      .def("row_dims", &PySession::row_dims)
      .def("run_arrays", &PySession::run_arrays, nb::arg("arrays"), nb::arg("outputs"), nb::arg("want_report"),
           nb::arg("terminate").none() = nb::none())
      .def("run_feed", &PySession::run_feed, nb::arg("feed").none(), nb::arg("output_names").none(),
           nb::arg("terminate").none() = nb::none())
      .def("save_optimized_model", &PySession::save_optimized_model, nb::arg("path"), nb::arg("external_file"),
           nb::arg("min_bytes"))
      .def("nodes", &PySession::nodes)
      .def("cache_stats", &PySession::cache_stats)
      .def("optimization_report", &PySession::optimization_report)
      .def("graph_text", &PySession::graph_text)
      .def("metadata", &PySession::metadata)
      .def("subgraph_reports", &PySession::subgraph_reports)
      .def("shape_buckets", &PySession::shape_buckets)
      .def("kv_streams", &PySession::kv_streams)
      .def("introspect", &PySession::introspect, nb::arg("feeds"))
      .def("debug", &PySession::debug, nb::arg("feeds"), nb::arg("breakpoints"), nb::arg("callback"))
      .def("check_replay", &PySession::check_replay, nb::arg("feeds"), nb::arg("atol"))
      .def("jit_stats", &PySession::jit_stats)
      .def("wait_for_jit", &PySession::wait_for_jit, nb::arg("timeout_s"))
      .def("loop_reports", &PySession::loop_reports)
      .def("clear_loop_reports", &PySession::clear_loop_reports)
      .def("overridable_initializers", &PySession::overridable_initializers);

  py::bind_obs(m);
  py::bind_ort(m);
  m.def("inspect_model", &inspect_model, nb::arg("path"));
  m.def("optimizer_passes", [] {
    nb::list out;
    for (const opt::PassInfo& p : opt::registered_passes())
      out.append(nb::make_tuple(p.order, p.name, opt::pass_category_name(p.category)));
    return out;
  });
  // sdx compile: the model's bytes, sdx.SessionOptions._to_dict(), and per input set a dict of input name ->
  // C-contiguous numpy array -> the bundle's bytes.
  m.def("compile_bundle", [](nb::bytes model, nb::dict options, nb::list input_sets) {
    SessionOptions opts = options_from_py(options);
    std::vector<NamedViews> calls;
    std::vector<std::vector<std::array<int64_t, py::kMaxNumpyRank>>> dims;
    for (nb::handle set : input_sets) {
      nb::dict feeds = nb::cast<nb::dict>(set);
      calls.emplace_back();
      dims.emplace_back(feeds.size());
      size_t i = 0;
      for (auto [name, array] : feeds) {
        TensorView arg;
        if (!py::numpy_input(array.ptr(), &arg, dims.back()[i++].data()))
          throw nb::type_error("sdx: compile inputs must be C-contiguous numpy arrays of a supported type");
        calls.back().emplace_back(nb::cast<std::string>(name), arg);
      }
    }
    std::string bytes = unwrap(compile_bundle(std::string(model.c_str(), model.size()), opts, calls));
    return nb::bytes(bytes.data(), bytes.size());
  }, nb::arg("model"), nb::arg("options"), nb::arg("input_sets"));
  m.def("session_option_table", &session_option_table);
  // plan/bucket_choice.h: sizes and counts (parallel lists) -> {"sizes", "padding", "cost"}.
  m.def("choose_buckets", [](std::vector<int64_t> sizes, std::vector<double> counts, int max_buckets, double plan_cost,
                             bool power_of_two) {
    std::vector<plan::SizeCount> trace;
    for (size_t i = 0; i < sizes.size() && i < counts.size(); ++i) trace.push_back({sizes[i], counts[i]});
    const plan::BucketChoice c = power_of_two ? plan::choose_power_of_two_buckets(trace, max_buckets, plan_cost)
                                              : plan::choose_buckets(trace, max_buckets, plan_cost);
    nb::dict d;
    d["sizes"] = c.sizes;
    d["padding"] = c.padding;
    d["cost"] = c.cost;
    return d;
  });
  // Two dims: first sizes, second sizes, counts (parallel lists) -> {"first", "second", "padding"}.
  m.def("choose_buckets_2d", [](std::vector<int64_t> first, std::vector<int64_t> second, std::vector<double> counts,
                                int max_first, int max_second, bool power_of_two) {
    std::vector<plan::SizePair> trace;
    for (size_t i = 0; i < first.size() && i < second.size() && i < counts.size(); ++i)
      trace.push_back({first[i], second[i], counts[i]});
    const plan::BucketChoice2d c = plan::choose_buckets_2d(trace, max_first, max_second, power_of_two);
    nb::dict d;
    d["first"] = c.first;
    d["second"] = c.second;
    d["padding"] = c.padding;
    return d;
  });
  m.def("session_option_switches", &session_option_switches);
  m.def("supported_ops", [] { return backend::KernelRegistry::cpu().op_names(); });
  m.def("run_conformance_case", [](const std::string& dir, double rtol, double atol) {
    testing::CaseResult r;
    {
      nb::gil_scoped_release release;
      r = testing::run_conformance_case(dir, rtol, atol);
    }
    return nb::make_tuple(testing::outcome_name(r.outcome), r.reason, r.millis, r.replayed, r.replay_note);
  }, nb::arg("case_dir"), nb::arg("rtol") = 1e-3, nb::arg("atol") = 1e-7);
  // Machine figures for the benchmarks (bench/suite.py): measured fp32 FMA peak and memory read bandwidth.
  m.def("fma_isa_name", [] { return std::string(obs::fma_isa_name()); });
  m.def("measure_fma_peak", [](int threads, double seconds, int repeats) {
    nb::gil_scoped_release release;
    return obs::measure_fma_peak(threads, seconds, repeats);
  }, nb::arg("threads") = 1, nb::arg("seconds") = 0.1, nb::arg("repeats") = 3);
  m.def("measure_memory_bandwidth", [](int threads, size_t bytes, int repeats) {
    nb::gil_scoped_release release;
    return obs::measure_memory_bandwidth(threads, bytes, repeats);
  }, nb::arg("threads") = 1, nb::arg("bytes") = 0, nb::arg("repeats") = 5);
}
