// The C ABI (include/sdx/sdx_runtime_c.h) over the public C++ API (include/sdx/session.h): sdx::Session
// and sdx::RunContext. Only the options mapping reaches past it, to the option table (runtime/session_option_table.h).
//
// Every exported function runs its body through guarded(): the thread's last error is cleared, C++
// exceptions are turned into status codes, and failures store their message for sdxGetLastError.
// Handles share ownership (runtime -> options, bundle and context -> Session), so they may be destroyed
// in any order; a Context is always destroyed before the Session it points into.
//
// The C layer adds no allocation to sdxRun's replay path: the per-input TensorArgs live in the context and
// are filled by sdxMarkInputPlaceholder; strings are built only on failure.
#include "sdx/sdx_runtime_c.h"

#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "api/public_access.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"
#include "runtime/execution_mode.h"
#include "runtime/plan_phase.h"
#include "runtime/session_option_table.h"
#include "sdx/session.h"

namespace {

using sdx::DType;
using sdx::Status;
using sdx::StatusCode;
using sdx::Session;
using sdx::SessionOptions;
using sdx::TensorView;
using sdx::runtime::ExecutionMode;
using sdx::runtime::PlanPhase;

// ---- The C enums mirror sdx's own; these keep them in step. ----

#define SDX_SAME_CODE(c, cc) static_assert(static_cast<int>(c) == static_cast<int>(cc), #c)
SDX_SAME_CODE(SDX_STATUS_OK, StatusCode::kOk);
SDX_SAME_CODE(SDX_STATUS_INVALID_ARGUMENT, StatusCode::kInvalidArgument);
SDX_SAME_CODE(SDX_STATUS_NOT_FOUND, StatusCode::kNotFound);
SDX_SAME_CODE(SDX_STATUS_UNIMPLEMENTED, StatusCode::kUnimplemented);
SDX_SAME_CODE(SDX_STATUS_OUT_OF_RANGE, StatusCode::kOutOfRange);
SDX_SAME_CODE(SDX_STATUS_FAILED_PRECONDITION, StatusCode::kFailedPrecondition);
SDX_SAME_CODE(SDX_STATUS_RESOURCE_EXHAUSTED, StatusCode::kResourceExhausted);
SDX_SAME_CODE(SDX_STATUS_DATA_LOSS, StatusCode::kDataLoss);
SDX_SAME_CODE(SDX_STATUS_IO_ERROR, StatusCode::kIoError);
SDX_SAME_CODE(SDX_STATUS_INTERNAL, StatusCode::kInternal);
SDX_SAME_CODE(SDX_STATUS_INVALID_GRAPH, StatusCode::kInvalidGraph);
SDX_SAME_CODE(SDX_STATUS_CANCELLED, StatusCode::kCancelled);
SDX_SAME_CODE(SDX_MODE_AUTO, ExecutionMode::kAuto);
SDX_SAME_CODE(SDX_MODE_SLOT_BY_SLOT, ExecutionMode::kSlotBySlot);
SDX_SAME_CODE(SDX_MODE_CUDA_GRAPHS, ExecutionMode::kCudaGraphs);
SDX_SAME_CODE(SDX_MODE_TRITON, ExecutionMode::kTriton);
SDX_SAME_CODE(SDX_MODE_NVRTC, ExecutionMode::kNvrtc);
SDX_SAME_CODE(SDX_MODE_PTX, ExecutionMode::kPtx);
SDX_SAME_CODE(SDX_MODE_ROCM, ExecutionMode::kRocm);
SDX_SAME_CODE(SDX_MODE_MLX, ExecutionMode::kMlx);
SDX_SAME_CODE(SDX_MODE_VULKAN, ExecutionMode::kVulkan);
SDX_SAME_CODE(SDX_MODE_LEVEL_ZERO, ExecutionMode::kLevelZero);
SDX_SAME_CODE(SDX_MODE_METAL, ExecutionMode::kMetal);
SDX_SAME_CODE(SDX_MODE_ONNX_RUNTIME, ExecutionMode::kOnnxRuntime);
SDX_SAME_CODE(SDX_MODE_OPENVINO, ExecutionMode::kOpenVino);
SDX_SAME_CODE(SDX_MODE_ACL, ExecutionMode::kAcl);
SDX_SAME_CODE(SDX_MODE_NNAPI, ExecutionMode::kNnapi);
SDX_SAME_CODE(SDX_MODE_ARM_HYBRID, ExecutionMode::kArmHybrid);
SDX_SAME_CODE(SDX_MODE_CPU_REPLAY, ExecutionMode::kCpuReplay);
SDX_SAME_CODE(SDX_PHASE_WARMUP, PlanPhase::kWarmup);
SDX_SAME_CODE(SDX_PHASE_SHAPES_FROZEN, PlanPhase::kShapesFrozen);
SDX_SAME_CODE(SDX_PHASE_CAPTURED, PlanPhase::kCaptured);
SDX_SAME_CODE(SDX_PHASE_REPLAYING, PlanPhase::kReplaying);
// sdx_dtype_t values are ONNX codes, and so are DType's (dtype_to_onnx is the identity on the enum order).
SDX_SAME_CODE(SDX_DTYPE_UNDEFINED, DType::kUndefined);
SDX_SAME_CODE(SDX_DTYPE_FLOAT32, DType::kFloat32);
SDX_SAME_CODE(SDX_DTYPE_UINT8, DType::kUint8);
SDX_SAME_CODE(SDX_DTYPE_INT8, DType::kInt8);
SDX_SAME_CODE(SDX_DTYPE_UINT16, DType::kUint16);
SDX_SAME_CODE(SDX_DTYPE_INT16, DType::kInt16);
SDX_SAME_CODE(SDX_DTYPE_INT32, DType::kInt32);
SDX_SAME_CODE(SDX_DTYPE_INT64, DType::kInt64);
SDX_SAME_CODE(SDX_DTYPE_STRING, DType::kString);
SDX_SAME_CODE(SDX_DTYPE_BOOL, DType::kBool);
SDX_SAME_CODE(SDX_DTYPE_FLOAT16, DType::kFloat16);
SDX_SAME_CODE(SDX_DTYPE_FLOAT64, DType::kFloat64);
SDX_SAME_CODE(SDX_DTYPE_UINT32, DType::kUint32);
SDX_SAME_CODE(SDX_DTYPE_UINT64, DType::kUint64);
SDX_SAME_CODE(SDX_DTYPE_COMPLEX64, DType::kComplex64);
SDX_SAME_CODE(SDX_DTYPE_COMPLEX128, DType::kComplex128);
SDX_SAME_CODE(SDX_DTYPE_BFLOAT16, DType::kBFloat16);
SDX_SAME_CODE(SDX_DTYPE_FLOAT8E4M3FN, DType::kFloat8E4M3FN);
SDX_SAME_CODE(SDX_DTYPE_FLOAT8E4M3FNUZ, DType::kFloat8E4M3FNUZ);
SDX_SAME_CODE(SDX_DTYPE_FLOAT8E5M2, DType::kFloat8E5M2);
SDX_SAME_CODE(SDX_DTYPE_FLOAT8E5M2FNUZ, DType::kFloat8E5M2FNUZ);
SDX_SAME_CODE(SDX_DTYPE_UINT4, DType::kUint4);
SDX_SAME_CODE(SDX_DTYPE_INT4, DType::kInt4);
SDX_SAME_CODE(SDX_DTYPE_FLOAT4E2M1, DType::kFloat4E2M1);
SDX_SAME_CODE(SDX_DTYPE_FLOAT8E8M0, DType::kFloat8E8M0);
SDX_SAME_CODE(SDX_DTYPE_UINT2, DType::kUint2);
SDX_SAME_CODE(SDX_DTYPE_INT2, DType::kInt2);
static_assert(SDX_DTYPE_INT2 + 1 == sdx::kNumDTypes, "a DType was added: append it to sdx_dtype_t");
#undef SDX_SAME_CODE

// ---- Shipped struct layouts (LP64). A failure here means an ABI break: append fields instead. ----
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
static_assert(sizeof(sdx_create_info_t) == 48 && offsetof(sdx_create_info_t, plan_cache_memory_fraction) == 24 &&
              offsetof(sdx_create_info_t, inter_op_num_threads) == 40);  // appended after the 40-byte first layout
static_assert(sizeof(sdx_tensor_t) == 40 && offsetof(sdx_tensor_t, dtype) == 28 && SDX_TENSOR_MIN_SIZE == 32);
static_assert(sizeof(sdx_run_info_t) == 8);
static_assert(offsetof(sdx_execution_report_t, slot_count) == 8 &&
              offsetof(sdx_execution_report_t, replay_count) == 16 &&
              offsetof(sdx_execution_report_t, avg_latency_us) == 24 &&
              offsetof(sdx_execution_report_t, peak_memory_bytes) == 32);  // the DSP document's fields
static_assert(offsetof(sdx_execution_report_t, phase) == 40 && offsetof(sdx_execution_report_t, call_count) == 48 &&
              offsetof(sdx_execution_report_t, fallback_reason) == 64);
static_assert(offsetof(sdx_execution_report_t, requested_mode) == 72 &&
              offsetof(sdx_execution_report_t, mode_fallback_reason) == 80 &&
              sizeof(sdx_execution_report_t) == 88);  // appended after the 72-byte layout of ABI version 1
#endif

// ---- Sized-struct access: a field is read or written only when it lies entirely within struct_size. ----

#define SDX_HAS_FIELD(ptr, field) \
  (offsetof(std::remove_cv_t<std::remove_pointer_t<decltype(ptr)>>, field) + sizeof((ptr)->field) <= (ptr)->struct_size)
// The caller's value, or zero (= default) when its struct predates the field.
#define SDX_IN(ptr, field) (SDX_HAS_FIELD(ptr, field) ? (ptr)->field : std::remove_cvref_t<decltype((ptr)->field)>{})
#define SDX_OUT(ptr, field, value)                         \
  do {                                                     \
    if (SDX_HAS_FIELD(ptr, field)) (ptr)->field = (value); \
  } while (0)

// ---- The thread's last error. ----

struct LastError {
  std::string message;
  const char* fallback = nullptr;  // used when storing the message itself ran out of memory
};
thread_local LastError t_last_error;

void clear_error() noexcept {
  t_last_error.message.clear();  // keeps its capacity: no allocation, no free
  t_last_error.fallback = nullptr;
}

// Stores "<function>: <message><detail>" and returns code. Views, so that calling it allocates nothing
// outside its try (it is called from catch blocks).
sdx_status_t fail(sdx_status_t code, const char* function, std::string_view message,
                  std::string_view detail = {}) noexcept {
  try {
    t_last_error.message.assign(function).append(": ").append(message).append(detail);
    t_last_error.fallback = nullptr;
  } catch (...) {
    t_last_error.message.clear();
    t_last_error.fallback = "out of memory while storing an error message";
  }
  return code;
}

sdx_status_t fail(const char* function, const Status& s) noexcept {
  return fail(static_cast<sdx_status_t>(s.code()), function, s.message());
}

// Runs body (returning sdx_status_t) with the last error cleared; no exception escapes.
template <typename Body>
sdx_status_t guarded(const char* function, Body&& body) noexcept {
  clear_error();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(SDX_STATUS_RESOURCE_EXHAUSTED, function, "out of memory");
  } catch (const std::exception& e) {
    return fail(SDX_STATUS_INTERNAL, function, "internal error: ", e.what());
  } catch (...) {
    return fail(SDX_STATUS_INTERNAL, function, "internal error: unknown exception");
  }
}

sdx_status_t null_argument(const char* function, const char* what) {
  return fail(SDX_STATUS_INVALID_ARGUMENT, function, std::string(what) + " is NULL");
}

sdx_status_t check_struct_size(const char* function, const char* what, size_t size, size_t min_size) {
  if (size >= min_size) return SDX_STATUS_OK;
  return fail(SDX_STATUS_INVALID_ARGUMENT, function,
              std::string(what) + "->struct_size is " + std::to_string(size) + " but must be at least " +
                  std::to_string(min_size) + " (set it to sizeof the struct)");
}

// sdx_create_info_t's fields as option values (session_option_table.h); 0 is "the default" in each.
sdx::runtime::OptionValue c_value(int32_t v) { return int64_t{v}; }
sdx::runtime::OptionValue c_value(int64_t v) { return v; }
sdx::runtime::OptionValue c_value(double v) { return v; }
template <typename T>
bool is_zero(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) return v == 0;
  else return false;
}

// The checks every input tensor gets: struct_size, dtype (not string), ndim and dims, nbytes when given.
// `kind` and `name` ("input", "x") name it in messages, which are built only on failure.
sdx_status_t check_tensor(const char* function, const char* kind, const char* name, const sdx_tensor_t* t,
                          DType* dtype) {
  auto what = [&] { return std::string(kind) + " '" + name + "'"; };
  if (sdx_status_t s = check_struct_size(function, "tensor", t->struct_size, SDX_TENSOR_MIN_SIZE)) return s;
  const std::optional<DType> d = sdx::dtype_from_onnx(t->dtype);
  if (!d || *d == DType::kUndefined)
    return fail(SDX_STATUS_INVALID_ARGUMENT, function, what() + ": unknown dtype " + std::to_string(t->dtype));
  if (*d == DType::kString)
    return fail(SDX_STATUS_INVALID_ARGUMENT, function, what() + ": string tensors are not supported by the C ABI");
  *dtype = *d;
  if (t->ndim < 0 || (t->ndim > 0 && !t->dims))
    return fail(SDX_STATUS_INVALID_ARGUMENT, function,
                what() + ": invalid ndim " + std::to_string(t->ndim) + (t->dims ? "" : " with NULL dims"));
  const size_t nbytes = SDX_IN(t, nbytes);
  if (nbytes == 0) return SDX_STATUS_OK;
  auto shape_string = [&] { return sdx::dims_to_string(std::vector<int64_t>(t->dims, t->dims + t->ndim)); };
  int64_t numel = 1;
  for (int32_t i = 0; i < t->ndim; ++i) {
    auto m = sdx::checked_mul(numel, t->dims[i]);
    if (!m.is_ok()) return fail(SDX_STATUS_INVALID_ARGUMENT, function, what() + ": invalid dims " + shape_string());
    numel = m.value();
  }
  const size_t expected = sdx::dtype_storage_bytes(*dtype, numel);
  if (nbytes != expected)
    return fail(SDX_STATUS_INVALID_ARGUMENT, function,
                what() + ": nbytes is " + std::to_string(nbytes) + " but " + sdx::dtype_name(*dtype) + " " +
                    shape_string() + " takes " + std::to_string(expected));
  return SDX_STATUS_OK;
}

std::string quoted_names(const std::vector<sdx::ValueInfo>& infos) {
  std::string names;
  for (const auto& i : infos) names += (names.empty() ? "'" : ", '") + i.name + "'";
  return names.empty() ? "none" : names;
}

// Position of name in infos, or -1. Compares in place: no std::string is built on the hot path.
int find_name(const std::vector<sdx::ValueInfo>& infos, const char* name) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

// ---- Handles (global namespace: they complete the C declarations). ----

struct sdx_runtime_t {
  std::shared_ptr<const SessionOptions> options;
};

struct sdx_bundle_t {
  std::shared_ptr<const SessionOptions> options;  // identifies the runtime that loaded it
  std::shared_ptr<const Session> session;
};

struct sdx_context_t {
  std::shared_ptr<const Session> session;  // declared before ctx: destroyed after it
  std::unique_ptr<sdx::RunContext> ctx;
  // Per model input, parallel to session->inputs(): the marked tensor (dims point into dims[i]).
  std::vector<TensorView> args;
  std::vector<std::vector<int64_t>> dims;
  std::vector<bool> marked;
  bool has_outputs = false;  // the last sdxRun succeeded and nothing invalidated its outputs since
};

namespace {

constexpr char kNoOutputs[] =
    "no sdxRun has succeeded on this context since it was created, the last one failed, or sdxMarkInputVariable "
    "invalidated the outputs";

sdx_status_t fill_output(const char* function, sdx_context_t* c, size_t index, sdx_tensor_t* out) {
  const auto& outputs = c->session->outputs();
  if (!c->has_outputs || index >= c->ctx->num_outputs())
    return fail(SDX_STATUS_FAILED_PRECONDITION, function,
                "output '" + outputs[index].name + "' is not available: " + kNoOutputs);
  TensorView t;
  if (!c->ctx->output_view(index, &t)) {
    if (!c->ctx->output(index).is_tensor())
      return fail(SDX_STATUS_UNIMPLEMENTED, function,
                  "output '" + outputs[index].name + "' is a sequence or optional, which the C ABI cannot return");
    return fail(SDX_STATUS_UNIMPLEMENTED, function,
                "output '" + outputs[index].name + "' is a string tensor, which the C ABI cannot return");
  }
  int64_t numel = 1;
  for (int d = 0; d < t.rank; ++d) numel *= t.dims[d];
  SDX_OUT(out, data, t.data);
  SDX_OUT(out, dims, t.dims);
  SDX_OUT(out, ndim, static_cast<int32_t>(t.rank));
  SDX_OUT(out, dtype, static_cast<int32_t>(sdx::dtype_to_onnx(t.dtype)));
  SDX_OUT(out, nbytes, sdx::dtype_storage_bytes(t.dtype, numel));
  return SDX_STATUS_OK;
}

sdx_status_t load_bundle(const char* function, sdx_runtime_t* runtime, sdx::Result<Session> loaded,
                         sdx_bundle_t** out) {
  if (!loaded.is_ok()) return fail(function, loaded.status());
  auto b = std::make_unique<sdx_bundle_t>();
  b->options = runtime->options;
  b->session = std::make_shared<const Session>(std::move(loaded).value());
  *out = b.release();
  return SDX_STATUS_OK;
}

}  // namespace

extern "C" {

int32_t sdxGetAbiVersion(void) { return SDX_RUNTIME_ABI_VERSION; }

const char* sdxGetLastError(void) {
  return t_last_error.fallback ? t_last_error.fallback : t_last_error.message.c_str();
}

const char* sdxGetStatusName(sdx_status_t status) {
  switch (status) {
    case SDX_STATUS_OK: return "OK";
    case SDX_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case SDX_STATUS_NOT_FOUND: return "NOT_FOUND";
    case SDX_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case SDX_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case SDX_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case SDX_STATUS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case SDX_STATUS_DATA_LOSS: return "DATA_LOSS";
    case SDX_STATUS_IO_ERROR: return "IO_ERROR";
    case SDX_STATUS_INTERNAL: return "INTERNAL";
    case SDX_STATUS_INVALID_GRAPH: return "INVALID_GRAPH";
    case SDX_STATUS_CANCELLED: return "CANCELLED";
  }
  return "UNKNOWN";
}

sdx_status_t sdxCreateRuntime(const sdx_create_info_t* info, sdx_runtime_t** out) {
  static constexpr char kFn[] = "sdxCreateRuntime";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!out) return null_argument(kFn, "out");
    SessionOptions public_options;
    sdx::runtime::SessionOptions& o = sdx::api::engine_options(public_options);
    if (info) {
      if (sdx_status_t s = check_struct_size(kFn, "info", info->struct_size, SDX_CREATE_INFO_MIN_SIZE)) return s;
      // Each field's option, default and range come from its row of session_options.inc (the SDX_C
      // column). 0, or a field the caller's struct predates, keeps the default; anything else outside
      // the range is an error (the C ABI never clamps).
      struct CField {
        const char* name;
        sdx::runtime::OptionValue value;
      };
#define SDX_C(name) CField{#name, c_value(SDX_IN(info, name))},
#define SDX_NO_C
#define SDX_SESSION_OPTION(field, type, python, env, default_value, range, c_field, help) c_field
      const CField fields[] = {
#include "runtime/session_options.inc"
      };
#undef SDX_SESSION_OPTION
#undef SDX_NO_C
#undef SDX_C
      for (const CField& f : fields) {
        const bool zero = std::visit([](const auto& v) { return is_zero(v); }, f.value);
        if (zero) continue;
        const sdx::runtime::SessionOptionRow* row = sdx::runtime::find_session_option_by_c_field(f.name);
        const std::string source = std::string(f.name) + " " + sdx::runtime::format_session_option(*row, f.value);
        if (Status s = sdx::runtime::set_session_option(&o, *row, f.value, source, sdx::runtime::OptionClamp::kNever);
            !s.is_ok())
          return fail(kFn, Status(s.code(), s.message() + " (0 means the default)"));
      }
    }
    auto r = std::make_unique<sdx_runtime_t>();
    r->options = std::make_shared<const SessionOptions>(std::move(public_options));
    *out = r.release();
    return SDX_STATUS_OK;
  });
}

void sdxDestroyRuntime(sdx_runtime_t* runtime) { delete runtime; }

sdx_status_t sdxLoadBundle(sdx_runtime_t* runtime, const char* path, sdx_bundle_t** out) {
  static constexpr char kFn[] = "sdxLoadBundle";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!runtime) return null_argument(kFn, "runtime");
    if (!path) return null_argument(kFn, "path");
    if (!out) return null_argument(kFn, "out");
    return load_bundle(kFn, runtime, Session::load(path, *runtime->options), out);
  });
}

sdx_status_t sdxLoadBundleFromMemory(sdx_runtime_t* runtime, const void* data, size_t size, sdx_bundle_t** out) {
  static constexpr char kFn[] = "sdxLoadBundleFromMemory";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!runtime) return null_argument(kFn, "runtime");
    if (!data) return null_argument(kFn, "data");
    if (!out) return null_argument(kFn, "out");
    return load_bundle(kFn, runtime, Session::load_bytes(std::string_view(static_cast<const char*>(data), size), *runtime->options), out);
  });
}

void sdxUnloadBundle(sdx_bundle_t* bundle) { delete bundle; }

sdx_status_t sdxGetInputCount(const sdx_bundle_t* bundle, size_t* count) {
  static constexpr char kFn[] = "sdxGetInputCount";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!bundle) return null_argument(kFn, "bundle");
    if (!count) return null_argument(kFn, "count");
    *count = bundle->session->inputs().size();
    return SDX_STATUS_OK;
  });
}

sdx_status_t sdxGetOutputCount(const sdx_bundle_t* bundle, size_t* count) {
  static constexpr char kFn[] = "sdxGetOutputCount";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!bundle) return null_argument(kFn, "bundle");
    if (!count) return null_argument(kFn, "count");
    *count = bundle->session->outputs().size();
    return SDX_STATUS_OK;
  });
}

namespace {

sdx_status_t get_name(const char* function, const char* kind, const sdx_bundle_t* bundle, size_t index,
                      const char** name, bool inputs) {
  if (!bundle) return null_argument(function, "bundle");
  if (!name) return null_argument(function, "name");
  const auto& infos = inputs ? bundle->session->inputs() : bundle->session->outputs();
  if (index >= infos.size())
    return fail(SDX_STATUS_OUT_OF_RANGE, function,
                std::string(kind) + " index " + std::to_string(index) + " is out of range: the model has " +
                    std::to_string(infos.size()) + " " + kind + "s");
  *name = infos[index].name.c_str();
  return SDX_STATUS_OK;
}

}  // namespace

sdx_status_t sdxGetInputName(const sdx_bundle_t* bundle, size_t index, const char** name) {
  static constexpr char kFn[] = "sdxGetInputName";
  return guarded(kFn, [&] { return get_name(kFn, "input", bundle, index, name, true); });
}

sdx_status_t sdxGetOutputName(const sdx_bundle_t* bundle, size_t index, const char** name) {
  static constexpr char kFn[] = "sdxGetOutputName";
  return guarded(kFn, [&] { return get_name(kFn, "output", bundle, index, name, false); });
}

sdx_status_t sdxCreateContext(sdx_runtime_t* runtime, sdx_bundle_t* bundle, sdx_context_t** out) {
  static constexpr char kFn[] = "sdxCreateContext";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!runtime) return null_argument(kFn, "runtime");
    if (!bundle) return null_argument(kFn, "bundle");
    if (!out) return null_argument(kFn, "out");
    if (bundle->options != runtime->options)
      return fail(SDX_STATUS_INVALID_ARGUMENT, kFn, "the bundle was loaded by another runtime");
    auto c = std::make_unique<sdx_context_t>();
    c->session = bundle->session;
    c->ctx = c->session->create_context();
    const size_t n = c->session->inputs().size();
    c->args.resize(n);
    c->dims.resize(n);
    for (auto& d : c->dims) d.reserve(8);  // marking inputs of rank <= 8 never allocates
    c->marked.assign(n, false);
    *out = c.release();
    return SDX_STATUS_OK;
  });
}

void sdxDestroyContext(sdx_context_t* ctx) { delete ctx; }

sdx_status_t sdxMarkInputPlaceholder(sdx_context_t* ctx, const char* name, const sdx_tensor_t* tensor) {
  static constexpr char kFn[] = "sdxMarkInputPlaceholder";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!ctx) return null_argument(kFn, "ctx");
    if (!name) return null_argument(kFn, "name");
    if (!tensor) return null_argument(kFn, "tensor");
    const auto& inputs = ctx->session->inputs();
    const int i = find_name(inputs, name);
    if (i < 0)
      return fail(SDX_STATUS_NOT_FOUND, kFn,
                  std::string("the model has no input '") + name + "'; its inputs are: " + quoted_names(inputs));
    const auto& info = inputs[static_cast<size_t>(i)];
    DType dtype;
    if (sdx_status_t s = check_tensor(kFn, "input", name, tensor, &dtype)) return s;
    if (info.element_type != DType::kUndefined && dtype != info.element_type)
      return fail(SDX_STATUS_INVALID_ARGUMENT, kFn,
                  "input '" + info.name + "': expected element type " + sdx::dtype_name(info.element_type) + " but got " +
                      sdx::dtype_name(dtype));
    std::vector<int64_t>& dims = ctx->dims[static_cast<size_t>(i)];
    dims.assign(tensor->dims, tensor->dims + tensor->ndim);  // no allocation while capacity suffices
    ctx->args[static_cast<size_t>(i)] = TensorView{dtype, dims.data(), tensor->ndim, tensor->data};
    ctx->marked[static_cast<size_t>(i)] = true;
    return SDX_STATUS_OK;
  });
}

sdx_status_t sdxMarkInputVariable(sdx_context_t* ctx, const char* name, const sdx_tensor_t* tensor) {
  static constexpr char kFn[] = "sdxMarkInputVariable";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!ctx) return null_argument(kFn, "ctx");
    if (!name) return null_argument(kFn, "name");
    if (!tensor) return null_argument(kFn, "tensor");
    const std::string what = std::string("variable '") + name + "'";
    if (!ctx->session->has_value(name))
      return fail(SDX_STATUS_NOT_FOUND, kFn, std::string("the model has no initializer '") + name + "'");
    DType dtype;
    if (sdx_status_t s = check_tensor(kFn, "variable", name, tensor, &dtype)) return s;
    auto shape = sdx::Shape::make(std::vector<int64_t>(tensor->dims, tensor->dims + tensor->ndim));
    if (!shape.is_ok()) return fail(kFn, shape.status().with_context(what));
    if (shape.value().numel() > 0 && !tensor->data)
      return fail(SDX_STATUS_INVALID_ARGUMENT, kFn, what + ": data is NULL");
    ctx->has_outputs = false;  // the session may drop the plans that own them
    // Read for the call only: set_variable copies the values.
    const Status s = ctx->session->set_variable(*ctx->ctx, name, TensorView{dtype, tensor->dims, tensor->ndim, tensor->data});
    if (!s.is_ok()) return fail(kFn, s);
    return SDX_STATUS_OK;
  });
}

sdx_status_t sdxRun(sdx_context_t* ctx, const sdx_run_info_t* run_info, sdx_execution_report_t* report) {
  static constexpr char kFn[] = "sdxRun";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!ctx) return null_argument(kFn, "ctx");
    if (run_info)
      if (sdx_status_t s = check_struct_size(kFn, "run_info", run_info->struct_size, SDX_RUN_INFO_MIN_SIZE)) return s;
    if (report)
      if (sdx_status_t s = check_struct_size(kFn, "report", report->struct_size, SDX_EXECUTION_REPORT_MIN_SIZE))
        return s;
    for (size_t i = 0; i < ctx->marked.size(); ++i)
      if (!ctx->marked[i])
        return fail(SDX_STATUS_FAILED_PRECONDITION, kFn,
                    "input '" + ctx->session->inputs()[i].name +
                        "' has not been marked: call sdxMarkInputPlaceholder for every input before sdxRun");
    ctx->has_outputs = false;
    sdx::RunReport rep;
    const Status s = ctx->session->run(*ctx->ctx, ctx->args.data(), ctx->args.size(), {}, report ? &rep : nullptr);
    if (!s.is_ok()) return fail(kFn, s);
    ctx->has_outputs = true;
    if (report) {
      SDX_OUT(report, slot_count, rep.slot_count);
      SDX_OUT(report, execution_mode, rep.execution_mode_id);
      SDX_OUT(report, replay_count, rep.replay_count);
      SDX_OUT(report, avg_latency_us, static_cast<float>(rep.avg_latency_us));
      SDX_OUT(report, peak_memory_bytes, static_cast<size_t>(rep.peak_memory_bytes));
      SDX_OUT(report, phase, rep.phase_id);
      SDX_OUT(report, captured_steps, rep.captured_steps);
      SDX_OUT(report, call_count, rep.call_count);
      SDX_OUT(report, gap_steps, rep.gap_steps);
      SDX_OUT(report, slot_by_slot_steps, rep.slot_by_slot_steps);
      SDX_OUT(report, fallback_reason, rep.fallback_reason);
      SDX_OUT(report, requested_mode, rep.mode_requested_id);
      SDX_OUT(report, mode_fallback_reason, rep.mode_fallback_reason);
    }
    return SDX_STATUS_OK;
  });
}

sdx_status_t sdxGetOutput(sdx_context_t* ctx, const char* name, sdx_tensor_t* out) {
  static constexpr char kFn[] = "sdxGetOutput";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!ctx) return null_argument(kFn, "ctx");
    if (!name) return null_argument(kFn, "name");
    if (!out) return null_argument(kFn, "out");
    if (sdx_status_t s = check_struct_size(kFn, "out", out->struct_size, SDX_TENSOR_MIN_SIZE)) return s;
    const auto& outputs = ctx->session->outputs();
    const int i = find_name(outputs, name);
    if (i < 0)
      return fail(SDX_STATUS_NOT_FOUND, kFn,
                  std::string("the model has no output '") + name + "'; its outputs are: " + quoted_names(outputs));
    return fill_output(kFn, ctx, static_cast<size_t>(i), out);
  });
}

sdx_status_t sdxGetOutputByIndex(sdx_context_t* ctx, size_t index, sdx_tensor_t* out) {
  static constexpr char kFn[] = "sdxGetOutputByIndex";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!ctx) return null_argument(kFn, "ctx");
    if (!out) return null_argument(kFn, "out");
    if (sdx_status_t s = check_struct_size(kFn, "out", out->struct_size, SDX_TENSOR_MIN_SIZE)) return s;
    const size_t n = ctx->session->outputs().size();
    if (index >= n)
      return fail(SDX_STATUS_OUT_OF_RANGE, kFn,
                  "output index " + std::to_string(index) + " is out of range: the model has " + std::to_string(n) +
                      " outputs");
    return fill_output(kFn, ctx, index, out);
  });
}

sdx_status_t sdxFreezeShapes(sdx_context_t* ctx) {
  static constexpr char kFn[] = "sdxFreezeShapes";
  return guarded(kFn, [&]() -> sdx_status_t {
    if (!ctx) return null_argument(kFn, "ctx");
    const Status s = ctx->session->freeze_shapes(*ctx->ctx);
    if (!s.is_ok()) return fail(kFn, s);
    return SDX_STATUS_OK;
  });
}

sdx_plan_phase_t sdxGetPlanPhase(const sdx_context_t* ctx) {
  static constexpr char kFn[] = "sdxGetPlanPhase";
  if (!ctx) {
    guarded(kFn, [] { return null_argument(kFn, "ctx"); });
    return SDX_PHASE_INVALID;
  }
  return static_cast<sdx_plan_phase_t>(ctx->ctx->plan_phase_id());
}

}  // extern "C"
