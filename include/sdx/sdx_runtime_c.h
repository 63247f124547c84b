/*
 * sdx_runtime_c.h: the stable C ABI of the sdx runtime (the DSP document's "DSP Runtime SDK",
 * dsp_runtime_c.h). Pure C (C99 or later, or C++); link with libsdx.
 *
 *   sdx_create_info_t info = {sizeof(sdx_create_info_t)};        // zero fields mean "default"
 *   sdx_runtime_t* rt = NULL;
 *   sdx_bundle_t* bundle = NULL;
 *   sdx_context_t* ctx = NULL;
 *   if (sdxCreateRuntime(&info, &rt) != SDX_STATUS_OK ||
 *       sdxLoadBundle(rt, "model.onnx", &bundle) != SDX_STATUS_OK ||
 *       sdxCreateContext(rt, bundle, &ctx) != SDX_STATUS_OK) {
 *     fprintf(stderr, "%s\n", sdxGetLastError());
 *   }
 *   int64_t dims[2] = {1, 768};
 *   sdx_tensor_t x = {sizeof(sdx_tensor_t), input_buffer, dims, 2, SDX_DTYPE_FLOAT32};
 *   sdxMarkInputPlaceholder(ctx, "input", &x);                   // the mark stays until replaced
 *   sdx_execution_report_t report = {sizeof(sdx_execution_report_t)};
 *   for (int i = 0; i < n; ++i) {
 *     fill(input_buffer, i);                                     // same buffer, new values
 *     if (sdxRun(ctx, NULL, &report) != SDX_STATUS_OK) fprintf(stderr, "%s\n", sdxGetLastError());
 *     sdx_tensor_t y = {sizeof(sdx_tensor_t)};
 *     sdxGetOutput(ctx, "output", &y);                           // valid until the next sdxRun
 *   }
 *   sdxDestroyContext(ctx);
 *   sdxUnloadBundle(bundle);
 *   sdxDestroyRuntime(rt);
 *
 * Objects
 *   sdx_runtime_t  the options every bundle it loads runs with (sdx_create_info_t).
 *   sdx_bundle_t   a loaded, verified model (for now an ONNX file or ONNX bytes). Immutable; any number
 *                  of contexts may run it at once, from any threads.
 *   sdx_context_t  the mutable state of one caller: the marked inputs, the plan lifecycle
 *                  (WARMUP -> SHAPES_FROZEN -> CAPTURED -> REPLAYING, per input-shape signature), the
 *                  outputs of the last run. One call at a time per context; one context per thread for
 *                  concurrent inference.
 *   Handles are reference counted internally, so they may be destroyed in any order: a context keeps its
 *   model alive after sdxUnloadBundle, and a bundle keeps its options after sdxDestroyRuntime. A handle
 *   must not be used after it is destroyed, and must not be destroyed while another thread uses it.
 *
 * Plan lifecycle (per context and input-shape signature; sdx_create_info_t.num_warmup_iterations = 1):
 *   sdxRun #1  slot by slot, recording shapes                              -> SDX_PHASE_WARMUP
 *   sdxRun #2  freezes the shapes (memory allocated once) and captures the
 *              bound kernel calls while it runs                             -> SDX_PHASE_CAPTURED
 *              (dims seen once never freeze: no memory is held for them)
 *   sdxRun #3+ replays the captured calls (no heap allocation)             -> SDX_PHASE_REPLAYING
 *   A call with new input dims starts its own plan at WARMUP; the first one's plan is kept for when the
 *   dims come back.
 *
 * Errors
 *   Every function that can fail returns an sdx_status_t. A failing call stores a message on the
 *   calling thread (naming the function, the input and what was expected) that sdxGetLastError returns;
 *   every status-returning call clears it first, so after SDX_STATUS_OK it is "". No C++ exception ever
 *   crosses this ABI (an unexpected one becomes SDX_STATUS_INTERNAL, out of memory
 *   SDX_STATUS_RESOURCE_EXHAUSTED). NULL handles, out-pointers and names are SDX_STATUS_INVALID_ARGUMENT
 *   unless a function says NULL is allowed. Destroy functions accept NULL.
 *
 * Versioning: sized structs
 *   The ABI is append-only. Every struct starts with `size_t struct_size`, which the caller sets to
 *   sizeof(the struct) as its header declared it. The runtime reads and writes only the fields that lie
 *   entirely within min(struct_size, the runtime's sizeof):
 *   - input structs (sdx_create_info_t, sdx_tensor_t as an input, sdx_run_info_t): fields beyond the
 *     caller's struct_size read as zero, and zero always means "default". Fields of a newer (larger)
 *     struct that this runtime does not know are ignored.
 *   - output structs (sdx_execution_report_t, sdx_tensor_t as an output): only the fields within the
 *     caller's struct_size are written; the bytes beyond it are never touched.
 *   A struct_size smaller than the struct's mandatory part (SDX_*_MIN_SIZE below) is
 *   SDX_STATUS_INVALID_ARGUMENT. Enumerated values in structs are int32_t so their size is fixed.
 */
#ifndef SDX_SDX_RUNTIME_C_H_
#define SDX_SDX_RUNTIME_C_H_

#include <stddef.h>
#include <stdint.h>

#define SDX_RUNTIME_ABI_VERSION 1

#if defined(_WIN32)
#if defined(SDX_C_API_BUILD)
#define SDX_C_API __declspec(dllexport)
#else
#define SDX_C_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define SDX_C_API __attribute__((visibility("default")))
#else
#define SDX_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------- */
/* Enumerations. Values are part of the ABI: never renumbered, only appended.                          */

/* Equal to sdx's internal StatusCode. */
typedef enum sdx_status_t {
  SDX_STATUS_OK = 0,
  SDX_STATUS_INVALID_ARGUMENT = 1,    /* a NULL pointer, bad struct_size, wrong dtype/rank/dims, ... */
  SDX_STATUS_NOT_FOUND = 2,           /* no input/output/initializer of that name; no such file */
  SDX_STATUS_UNIMPLEMENTED = 3,       /* an operator or feature sdx does not support */
  SDX_STATUS_OUT_OF_RANGE = 4,        /* an index past the end */
  SDX_STATUS_FAILED_PRECONDITION = 5, /* a call out of order: unmarked input, no run yet, ... */
  SDX_STATUS_RESOURCE_EXHAUSTED = 6,  /* out of memory */
  SDX_STATUS_DATA_LOSS = 7,           /* a corrupt or truncated model */
  SDX_STATUS_IO_ERROR = 8,            /* a file could not be read */
  SDX_STATUS_INTERNAL = 9,            /* a bug in sdx */
  SDX_STATUS_INVALID_GRAPH = 10,      /* the model breaks a structural rule of the ONNX IR spec */
  SDX_STATUS_CANCELLED = 11           /* a run stopped because its terminate flag was set */
} sdx_status_t;

/* Element types; the values are the ONNX TensorProto.DataType codes. */
typedef enum sdx_dtype_t {
  SDX_DTYPE_UNDEFINED = 0, /* rejected */
  SDX_DTYPE_FLOAT32 = 1,
  SDX_DTYPE_FLOAT = SDX_DTYPE_FLOAT32, /* ONNX spelling */
  SDX_DTYPE_UINT8 = 2,
  SDX_DTYPE_INT8 = 3,
  SDX_DTYPE_UINT16 = 4,
  SDX_DTYPE_INT16 = 5,
  SDX_DTYPE_INT32 = 6,
  SDX_DTYPE_INT64 = 7,
  SDX_DTYPE_STRING = 8, /* not supported by the C ABI: rejected with SDX_STATUS_INVALID_ARGUMENT */
  SDX_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  SDX_DTYPE_FLOAT16 = 10,
  SDX_DTYPE_FLOAT64 = 11,
  SDX_DTYPE_DOUBLE = SDX_DTYPE_FLOAT64, /* ONNX spelling */
  SDX_DTYPE_UINT32 = 12,
  SDX_DTYPE_UINT64 = 13,
  SDX_DTYPE_COMPLEX64 = 14,
  SDX_DTYPE_COMPLEX128 = 15,
  SDX_DTYPE_BFLOAT16 = 16,
  SDX_DTYPE_FLOAT8E4M3FN = 17,
  SDX_DTYPE_FLOAT8E4M3FNUZ = 18,
  SDX_DTYPE_FLOAT8E5M2 = 19,
  SDX_DTYPE_FLOAT8E5M2FNUZ = 20,
  SDX_DTYPE_UINT4 = 21, /* packed two per byte, as in ONNX */
  SDX_DTYPE_INT4 = 22,
  SDX_DTYPE_FLOAT4E2M1 = 23,
  SDX_DTYPE_FLOAT8E8M0 = 24,
  SDX_DTYPE_UINT2 = 25, /* packed four per byte */
  SDX_DTYPE_INT2 = 26
} sdx_dtype_t;

/* The DSP document's GraphExecutionMode (names and ids kept; src/runtime/execution_modes.inc is the table).
 * A mode whose backend this build or machine lacks falls back down its chain to CPU_REPLAY or
 * SLOT_BY_SLOT, and the report says so (requested_mode, mode_fallback_reason). */
typedef enum sdx_execution_mode_t {
  SDX_MODE_AUTO = 0,         /* the best mode available: CPU_REPLAY on the CPU */
  SDX_MODE_SLOT_BY_SLOT = 1, /* every run allocates each intermediate afresh; the plan stays at WARMUP */
  SDX_MODE_CUDA_GRAPHS = 2,  /* CUDA graph capture and replay */
  SDX_MODE_TRITON = 3,
  SDX_MODE_NVRTC = 4,
  SDX_MODE_PTX = 5,
  SDX_MODE_ROCM = 6,
  SDX_MODE_MLX = 7,
  SDX_MODE_VULKAN = 8,
  SDX_MODE_LEVEL_ZERO = 9,
  SDX_MODE_METAL = 10,
  SDX_MODE_ONNX_RUNTIME = 11,
  SDX_MODE_OPENVINO = 12,
  SDX_MODE_ACL = 13,
  SDX_MODE_NNAPI = 14,
  SDX_MODE_ARM_HYBRID = 15,
  SDX_MODE_CPU_REPLAY = 16, /* warm up, freeze shapes, capture the bound kernel calls, then replay them */
  SDX_MODE_MLIR_CPU = SDX_MODE_CPU_REPLAY /* the DSP document's name for id 16 */
} sdx_execution_mode_t;

typedef enum sdx_plan_phase_t {
  SDX_PHASE_INVALID = -1, /* sdxGetPlanPhase(NULL) */
  SDX_PHASE_WARMUP = 0,
  SDX_PHASE_SHAPES_FROZEN = 1,
  SDX_PHASE_CAPTURED = 2,
  SDX_PHASE_CUDA_GRAPH_CAPTURED = SDX_PHASE_CAPTURED, /* the DSP document's name */
  SDX_PHASE_REPLAYING = 3
} sdx_plan_phase_t;

/* ---------------------------------------------------------------------------------------------------- */
/* Opaque handles.                                                                                      */

typedef struct sdx_runtime_t sdx_runtime_t;
typedef struct sdx_bundle_t sdx_bundle_t;
typedef struct sdx_context_t sdx_context_t;

/* ---------------------------------------------------------------------------------------------------- */
/* Sized structs (see "Versioning" above). Zero-initialize them, then set struct_size.                  */

/* Options for sdxCreateRuntime, applied to every bundle it loads. Every field: 0 = default. SDX_*
 * environment variables (see the README) override these, as they do for every sdx session. The plan
 * cache limits apply per bundle, over all of its contexts: beyond them the least recently used plans
 * give their frozen memory back and are rebuilt on their next call. */
typedef struct sdx_create_info_t {
  size_t struct_size;
  int32_t execution_mode;                 /* an sdx_execution_mode_t; 0 = SDX_MODE_AUTO */
  int32_t num_warmup_iterations;          /* runs per input-shape signature before shapes freeze; 0 = 1 */
  int32_t plan_cache_max_count;           /* plans holding frozen memory; 0 = 32 */
  int32_t intra_op_num_threads;           /* threads for kernels that parallelize; 0 = physical cores */
  double plan_cache_memory_fraction;      /* (0, 1]: share of physical memory the plans may hold; 0 = 0.25 */
  int64_t plan_cache_memory_budget_bytes; /* a budget in bytes instead of the fraction; 0 = use the fraction */
  int32_t inter_op_num_threads;           /* > 1: independent steps run at the same time; 0 or 1 = off */
} sdx_create_info_t;
#define SDX_CREATE_INFO_MIN_SIZE sizeof(size_t)

/* A dense, row-major tensor.
 * As an input (sdxMarkInputPlaceholder, sdxMarkInputVariable) the caller owns data and dims.
 * As an output (sdxGetOutput) the runtime fills it with pointers to memory the context owns. */
typedef struct sdx_tensor_t {
  size_t struct_size;
  const void* data;    /* may be NULL when the tensor has no elements */
  const int64_t* dims; /* ndim entries; may be NULL when ndim == 0 (a scalar) */
  int32_t ndim;
  int32_t dtype; /* an sdx_dtype_t */
  /* Size of data in bytes. Input: 0 = not checked, otherwise it must equal the size the dtype and dims
   * imply. Output: filled in. */
  size_t nbytes;
} sdx_tensor_t;
/* The mandatory part: struct_size through dtype. */
#define SDX_TENSOR_MIN_SIZE (offsetof(sdx_tensor_t, dtype) + sizeof(int32_t))

/* Options for one sdxRun. No fields yet (output selection may come later); NULL means defaults. */
typedef struct sdx_run_info_t {
  size_t struct_size;
} sdx_run_info_t;
#define SDX_RUN_INFO_MIN_SIZE sizeof(size_t)

/* What one sdxRun did. The first fields are the DSP document's; sdx's own follow. */
typedef struct sdx_execution_report_t {
  size_t struct_size;
  int32_t slot_count;       /* slots (values) in the plan that ran */
  int32_t execution_mode;   /* an sdx_execution_mode_t: the mode actually used by this call:
                               SDX_MODE_CPU_REPLAY when the captured plan was replayed, otherwise
                               SDX_MODE_SLOT_BY_SLOT (warmup, capture, fallbacks) */
  int64_t replay_count;     /* replays of this plan so far, this call included */
  float avg_latency_us;     /* average latency of this plan's calls, in microseconds */
  size_t peak_memory_bytes; /* memory the plan holds: planned intermediates + static inputs/outputs */
  /* sdx extensions (ABI version 1). */
  int32_t phase;              /* an sdx_plan_phase_t: the plan's phase after this call */
  int32_t captured_steps;     /* steps replayed as bound calls or run into frozen memory */
  int64_t call_count;         /* calls of this plan so far, this call included */
  int32_t gap_steps;          /* data-dependent steps run eagerly between captured ones */
  int32_t slot_by_slot_steps; /* other steps run eagerly (they read a gap's output) */
  /* Why this call did not replay, or NULL when it did: a static string owned by libsdx. */
  const char* fallback_reason;
  /* The mode the runtime was created with (sdx_create_info_t.execution_mode or SDX_EXECUTION_MODE), and
   * why the bundle runs another mode, or NULL (owned by the bundle, valid until it is unloaded). */
  int32_t requested_mode;
  const char* mode_fallback_reason;
} sdx_execution_report_t;
#define SDX_EXECUTION_REPORT_MIN_SIZE sizeof(size_t)

/* ---------------------------------------------------------------------------------------------------- */
/* Functions.                                                                                           */

/* SDX_RUNTIME_ABI_VERSION of the loaded library; compare with the header's to detect a mismatch. */
SDX_C_API int32_t sdxGetAbiVersion(void);

/* The message of the last failing call on this thread, or "" when the last status-returning call
 * succeeded. Owned by the runtime; valid on this thread until its next sdx call, so call it after the
 * failing call returns, not as another argument of the same function call. Never NULL. */
SDX_C_API const char* sdxGetLastError(void);

/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for values this library does not know. Never NULL. */
SDX_C_API const char* sdxGetStatusName(sdx_status_t status);

/* Creates a runtime. info may be NULL (all defaults). *out is set only on success. */
SDX_C_API sdx_status_t sdxCreateRuntime(const sdx_create_info_t* info, sdx_runtime_t** out);
/* Bundles and contexts created from the runtime stay usable after it is destroyed. NULL is allowed. */
SDX_C_API void sdxDestroyRuntime(sdx_runtime_t* runtime);

/* Loads, verifies and prepares a model: an .onnx file for now (compiled .sdx bundles later).
 * Fails with NOT_FOUND/IO_ERROR (the file), DATA_LOSS (not a parseable ONNX model), INVALID_ARGUMENT
 * (a malformed graph), UNIMPLEMENTED (unsupported operators, all listed in the message). */
SDX_C_API sdx_status_t sdxLoadBundle(sdx_runtime_t* runtime, const char* path, sdx_bundle_t** out);
/* The same from the bytes of an .onnx file, which are not needed after the call. */
SDX_C_API sdx_status_t sdxLoadBundleFromMemory(sdx_runtime_t* runtime, const void* data, size_t size,
                                               sdx_bundle_t** out);
/* Releases the caller's handle. Contexts created from the bundle keep the model alive and stay usable.
 * NULL is allowed. */
SDX_C_API void sdxUnloadBundle(sdx_bundle_t* bundle);

/* The model's inputs (graph inputs that are not initializers) and outputs, in declaration order. Names
 * are owned by the model: valid while the bundle or any context created from it lives. */
SDX_C_API sdx_status_t sdxGetInputCount(const sdx_bundle_t* bundle, size_t* count);
SDX_C_API sdx_status_t sdxGetInputName(const sdx_bundle_t* bundle, size_t index, const char** name);
SDX_C_API sdx_status_t sdxGetOutputCount(const sdx_bundle_t* bundle, size_t* count);
SDX_C_API sdx_status_t sdxGetOutputName(const sdx_bundle_t* bundle, size_t index, const char** name);

/* Creates an inference context for a bundle loaded by this runtime. */
SDX_C_API sdx_status_t sdxCreateContext(sdx_runtime_t* runtime, sdx_bundle_t* bundle, sdx_context_t** out);
/* Frees the context, its plans and its outputs. NULL is allowed. */
SDX_C_API void sdxDestroyContext(sdx_context_t* ctx);

/* Marks the tensor an input of the model reads in the following sdxRun calls on ctx. The dims are
 * copied; the data pointer is stored and read during each sdxRun, so the buffer must stay valid and
 * unchanged while sdxRun runs. The mark stays in effect until the input is marked again (a failed mark
 * keeps the previous one): to run on new values, write them into the same buffer and call sdxRun again
 * (the replay fast path), or mark another buffer. The element type is checked here; rank and dims
 * against the model's by sdxRun. Marking an input of rank <= 8 allocates no memory.
 * Unknown name: SDX_STATUS_NOT_FOUND (the message lists the model's inputs); another element type than
 * the model's: SDX_STATUS_INVALID_ARGUMENT. */
SDX_C_API sdx_status_t sdxMarkInputPlaceholder(sdx_context_t* ctx, const char* name, const sdx_tensor_t* tensor);

/* Overrides an initializer (a weight) of the model for the runs on ctx; the values are copied. The first
 * override of an initializer, or one with another shape, drops ctx's plans (the next sdxRun starts at
 * WARMUP again); overriding it again with the same shape keeps the captured plan. Either way the outputs
 * of the last run are no longer available (sdxGetOutput: SDX_STATUS_FAILED_PRECONDITION).
 * Unknown name: SDX_STATUS_NOT_FOUND; a name that is not an initializer, or another element type:
 * SDX_STATUS_INVALID_ARGUMENT. */
SDX_C_API sdx_status_t sdxMarkInputVariable(sdx_context_t* ctx, const char* name, const sdx_tensor_t* tensor);

/* Runs the model on the marked inputs, computing every output. run_info and report may be NULL; a report
 * is filled (up to its struct_size) only on success. Every input must have been marked
 * (SDX_STATUS_FAILED_PRECONDITION names the first one that was not); rank and dims are checked against
 * the model (SDX_STATUS_INVALID_ARGUMENT). On the replay path the C layer allocates nothing: a replaying
 * call is allocation-free when every step of the plan replays as a bound kernel call. */
SDX_C_API sdx_status_t sdxRun(sdx_context_t* ctx, const sdx_run_info_t* run_info, sdx_execution_report_t* report);

/* Fills *out (up to its struct_size, at least SDX_TENSOR_MIN_SIZE) with an output of the last
 * successful sdxRun. data and dims point to memory the context owns, valid until the next sdxRun,
 * sdxMarkInputVariable or sdxFreezeShapes on ctx, or sdxDestroyContext; copy what must live longer.
 * When the model passes an input straight through, data may point into that input's buffer.
 * Unknown name: SDX_STATUS_NOT_FOUND; no successful run: SDX_STATUS_FAILED_PRECONDITION. */
SDX_C_API sdx_status_t sdxGetOutput(sdx_context_t* ctx, const char* name, sdx_tensor_t* out);
/* The same by position in the bundle's outputs (sdxGetOutputName); past the end: SDX_STATUS_OUT_OF_RANGE. */
SDX_C_API sdx_status_t sdxGetOutputByIndex(sdx_context_t* ctx, size_t index, sdx_tensor_t* out);

/* Freezes the shapes of ctx's current plan now instead of when its dims come again after
 * num_warmup_iterations runs. It needs one
 * completed run to know the shapes: before that, SDX_STATUS_FAILED_PRECONDITION. A plan already past
 * WARMUP is left as it is (SDX_STATUS_OK). */
SDX_C_API sdx_status_t sdxFreezeShapes(sdx_context_t* ctx);

/* The phase of the plan the last sdxRun on ctx used (SDX_PHASE_WARMUP before the first run, and after
 * sdxMarkInputVariable dropped the plans); SDX_PHASE_INVALID, with sdxGetLastError set, for NULL. */
SDX_C_API sdx_plan_phase_t sdxGetPlanPhase(const sdx_context_t* ctx);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SDX_SDX_RUNTIME_C_H_ */
