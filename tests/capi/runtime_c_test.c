/*
 * The C ABI (sdx/sdx_runtime_c.h) driven from C99: the whole lifecycle, sized structs old and new, the
 * plan phases, variables, error paths and handle destruction in any order.
 *
 *   sdx_capi_test [MODEL_PATH]   writes the embedded model to MODEL_PATH (default: ./sdx_capi_test.onnx),
 *                                runs every check, prints a summary and exits non-zero on any failure.
 *
 * The model, y = Relu(x + c) with x: float[N, 4] and the initializer c = {0.5, -1, 2, -3}, is embedded
 * as bytes (no binary is committed). They were generated with onnx 1.23.2:
 *
 *   import onnx
 *   from onnx import helper, TensorProto
 *   x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
 *   y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
 *   c = helper.make_tensor("c", TensorProto.FLOAT, [4], [0.5, -1.0, 2.0, -3.0])
 *   g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["t"], name="add"),
 *                          helper.make_node("Relu", ["t"], ["y"], name="relu")], "addrelu", [x], [y], [c])
 *   m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8, producer_name="sdx")
 *   onnx.checker.check_model(m)
 *   b = m.SerializeToString()
 *   print(",\n".join(", ".join("0x%02x" % v for v in b[i:i+16]) for i in range(0, len(b), 16)))
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdx/sdx_runtime_c.h"

/* 16 bytes a line, as the snippet prints them. */
/* clang-format off */
static const unsigned char kModel[] = {
    0x08, 0x08, 0x12, 0x03, 0x73, 0x64, 0x78, 0x3a, 0x79, 0x0a, 0x13, 0x0a, 0x01, 0x78, 0x0a, 0x01,
    0x63, 0x12, 0x01, 0x74, 0x1a, 0x03, 0x61, 0x64, 0x64, 0x22, 0x03, 0x41, 0x64, 0x64, 0x0a, 0x12,
    0x0a, 0x01, 0x74, 0x12, 0x01, 0x79, 0x1a, 0x04, 0x72, 0x65, 0x6c, 0x75, 0x22, 0x04, 0x52, 0x65,
    0x6c, 0x75, 0x12, 0x07, 0x61, 0x64, 0x64, 0x72, 0x65, 0x6c, 0x75, 0x2a, 0x19, 0x08, 0x04, 0x10,
    0x01, 0x22, 0x10, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0xbf, 0x00, 0x00, 0x00, 0x40, 0x00,
    0x00, 0x40, 0xc0, 0x42, 0x01, 0x63, 0x5a, 0x14, 0x0a, 0x01, 0x78, 0x12, 0x0f, 0x0a, 0x0d, 0x08,
    0x01, 0x12, 0x09, 0x0a, 0x03, 0x12, 0x01, 0x4e, 0x0a, 0x02, 0x08, 0x04, 0x62, 0x14, 0x0a, 0x01,
    0x79, 0x12, 0x0f, 0x0a, 0x0d, 0x08, 0x01, 0x12, 0x09, 0x0a, 0x03, 0x12, 0x01, 0x4e, 0x0a, 0x02,
    0x08, 0x04, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x11};
/* clang-format on */
static const float kC[4] = {0.5f, -1.0f, 2.0f, -3.0f};

static int g_checks = 0;
static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++g_checks;                                                                \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* expr must return `want`; on a mismatch prints both statuses and the last error. */
#define CHECK_STATUS(expr, want)                                                                           \
  do {                                                                                                     \
    const sdx_status_t got_ = (expr);                                                                      \
    ++g_checks;                                                                                            \
    if (got_ != (want)) {                                                                                  \
      ++g_failures;                                                                                        \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s; last error: '%s'\n", __FILE__, __LINE__, #expr, \
              sdxGetStatusName(got_), sdxGetStatusName(want), sdxGetLastError());                          \
    }                                                                                                      \
  } while (0)
#define CHECK_OK(expr) CHECK_STATUS(expr, SDX_STATUS_OK)

/* The last error must contain text. */
#define CHECK_ERROR_MENTIONS(text)                                                                             \
  do {                                                                                                         \
    ++g_checks;                                                                                                \
    if (!strstr(sdxGetLastError(), (text))) {                                                                  \
      ++g_failures;                                                                                            \
      fprintf(stderr, "%s:%d: last error '%s' does not mention '%s'\n", __FILE__, __LINE__, sdxGetLastError(), \
              (text));                                                                                         \
    }                                                                                                          \
  } while (0)

static float relu_add(float x, float c) {
  const float t = x + c;
  return t > 0.0f ? t : 0.0f;
}

/* Fills rows x 4 inputs with values that differ per seed, half of them negative after the add. */
static void fill_input(float* x, int rows, int seed) {
  int i;
  for (i = 0; i < rows * 4; ++i) x[i] = (float)((i * 7 + seed * 3) % 11) * 0.5f - 2.5f;
}

/* Checks output "y" of the last run on ctx: rows x 4 floats equal to Relu(x + c). */
static void check_y(sdx_context_t* ctx, const float* x, int rows, const float* c, int line) {
  sdx_tensor_t y;
  const float* v;
  int i, bad = 0;
  memset(&y, 0, sizeof y);
  y.struct_size = sizeof y;
  ++g_checks;
  if (sdxGetOutput(ctx, "y", &y) != SDX_STATUS_OK) {
    ++g_failures;
    fprintf(stderr, "line %d: sdxGetOutput(y) failed: %s\n", line, sdxGetLastError());
    return;
  }
  ++g_checks;
  if (y.dtype != SDX_DTYPE_FLOAT32 || y.ndim != 2 || !y.dims || y.dims[0] != rows || y.dims[1] != 4 ||
      y.nbytes != (size_t)rows * 4 * sizeof(float) || !y.data) {
    ++g_failures;
    fprintf(stderr, "line %d: output y has dtype %d, ndim %d, nbytes %lu\n", line, (int)y.dtype, (int)y.ndim,
            (unsigned long)y.nbytes);
    return;
  }
  v = (const float*)y.data;
  for (i = 0; i < rows * 4; ++i) {
    const float want = relu_add(x[i], c[i % 4]);
    const float diff = v[i] > want ? v[i] - want : want - v[i];
    if (diff > 1e-6f) bad = 1;
  }
  ++g_checks;
  if (bad) {
    ++g_failures;
    fprintf(stderr, "line %d: output y has wrong values (first: %g, expected %g)\n", line, v[0], relu_add(x[0], c[0]));
  }
}

static sdx_tensor_t float_tensor(const float* data, const int64_t* dims, int32_t ndim) {
  sdx_tensor_t t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.data = data;
  t.dims = dims;
  t.ndim = ndim;
  t.dtype = SDX_DTYPE_FLOAT32;
  return t;
}

static sdx_execution_report_t new_report(void) {
  sdx_execution_report_t r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  return r;
}

/* create -> load -> context -> mark -> run x6 through every phase, checking report, phase and values. */
static void test_lifecycle(sdx_bundle_t* bundle, sdx_runtime_t* rt) {
  sdx_context_t* ctx = NULL;
  sdx_execution_report_t rep = new_report();
  float x[4], x2[8];
  int i;
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;
  CHECK(sdxGetPlanPhase(ctx) == SDX_PHASE_WARMUP);

  CHECK_STATUS(sdxRun(ctx, NULL, &rep), SDX_STATUS_FAILED_PRECONDITION);  // nothing marked yet
  CHECK_ERROR_MENTIONS("'x'");
  {
    sdx_tensor_t y;
    memset(&y, 0, sizeof y);
    y.struct_size = sizeof y;
    CHECK_STATUS(sdxGetOutput(ctx, "y", &y), SDX_STATUS_FAILED_PRECONDITION);  // no run yet
  }
  {
    /* The dims array is temporary: the context must have copied it. */
    int64_t dims[2] = {1, 4};
    const sdx_tensor_t t = float_tensor(x, dims, 2);
    CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
    CHECK(strcmp(sdxGetLastError(), "") == 0);
    dims[0] = 99;
    dims[1] = 99;
  }
  {
    /* Warmup; the signature again: frozen and captured; then replays. */
    const sdx_plan_phase_t want[6] = {SDX_PHASE_WARMUP,    SDX_PHASE_CAPTURED,  SDX_PHASE_REPLAYING,
                                      SDX_PHASE_REPLAYING, SDX_PHASE_REPLAYING, SDX_PHASE_REPLAYING};
    for (i = 0; i < 6; ++i) {
      fill_input(x, 1, i);  // new values in the marked buffer, no new mark
      rep = new_report();
      CHECK_OK(sdxRun(ctx, NULL, &rep));
      CHECK(rep.phase == (int32_t)want[i]);
      CHECK(sdxGetPlanPhase(ctx) == want[i]);
      CHECK(rep.execution_mode == (want[i] == SDX_PHASE_REPLAYING ? SDX_MODE_CPU_REPLAY : SDX_MODE_SLOT_BY_SLOT));
      CHECK(rep.replay_count == (i >= 2 ? i - 1 : 0));
      CHECK(rep.call_count == i + 1);
      CHECK(rep.slot_count == 4);  // x, c, t, y
      CHECK(rep.avg_latency_us > 0.0f);
      CHECK((rep.peak_memory_bytes > 0) == (want[i] != SDX_PHASE_WARMUP));  // no frozen memory for one call
      CHECK((rep.fallback_reason == NULL) == (want[i] == SDX_PHASE_REPLAYING));
      if (want[i] == SDX_PHASE_REPLAYING) CHECK(rep.captured_steps == 2 && rep.gap_steps == 0);
      CHECK(rep.requested_mode == SDX_MODE_AUTO && rep.mode_fallback_reason == NULL);
      check_y(ctx, x, 1, kC, __LINE__);
    }
  }
  {
    /* A run_info and the output by index. */
    sdx_run_info_t info;
    sdx_tensor_t a, b;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(sdxRun(ctx, &info, NULL));
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.struct_size = b.struct_size = sizeof a;
    CHECK_OK(sdxGetOutput(ctx, "y", &a));
    CHECK_OK(sdxGetOutputByIndex(ctx, 0, &b));
    CHECK(a.data == b.data && a.dims == b.dims);
    CHECK_STATUS(sdxGetOutputByIndex(ctx, 1, &b), SDX_STATUS_OUT_OF_RANGE);
  }
  {
    /* An "old" caller: its report ends before peak_memory_bytes. Fields within it are filled, the bytes
     * beyond it are untouched. */
    union {
      sdx_execution_report_t r;
      unsigned char bytes[sizeof(sdx_execution_report_t)];
    } old;
    const size_t old_size = offsetof(sdx_execution_report_t, peak_memory_bytes);
    size_t k;
    int untouched = 1;
    memset(&old, 0xAB, sizeof old);
    old.r.struct_size = old_size;
    fill_input(x, 1, 40);
    CHECK_OK(sdxRun(ctx, NULL, &old.r));
    CHECK(old.r.struct_size == old_size);
    CHECK(old.r.slot_count == 4);
    CHECK(old.r.execution_mode == SDX_MODE_CPU_REPLAY);
    CHECK(old.r.replay_count == 6);  // 4 in the loop, 1 with run_info, this one
    CHECK(old.r.avg_latency_us > 0.0f);
    for (k = old_size; k < sizeof old; ++k) untouched &= old.bytes[k] == 0xAB;
    CHECK(untouched);
    check_y(ctx, x, 1, kC, __LINE__);
  }
  {
    /* A "newer" caller: its struct is larger than this runtime's; the bytes beyond ours are untouched. */
    struct {
      sdx_execution_report_t r;
      unsigned char future[16];
    } big;
    int k, untouched = 1;
    memset(&big, 0xCD, sizeof big);
    big.r.struct_size = sizeof big;
    CHECK_OK(sdxRun(ctx, NULL, &big.r));
    CHECK(big.r.replay_count == 7 && big.r.phase == SDX_PHASE_REPLAYING && big.r.fallback_reason == NULL);
    for (k = 0; k < 16; ++k) untouched &= big.future[k] == 0xCD;
    CHECK(untouched);
  }
  {
    /* Too small for the mandatory part. */
    sdx_execution_report_t tiny = new_report();
    tiny.struct_size = sizeof(size_t) - 1;
    CHECK_STATUS(sdxRun(ctx, NULL, &tiny), SDX_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("struct_size");
  }
  {
    /* New dims: their own plan, from WARMUP; then back to the first dims, which still replay. */
    const int64_t dims2[2] = {2, 4};
    const int64_t dims1[2] = {1, 4};
    const sdx_tensor_t t2 = float_tensor(x2, dims2, 2);
    const sdx_tensor_t t1 = float_tensor(x, dims1, 2);
    fill_input(x2, 2, 5);
    CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t2));
    rep = new_report();
    CHECK_OK(sdxRun(ctx, NULL, &rep));
    CHECK(rep.phase == SDX_PHASE_WARMUP && rep.call_count == 1);
    check_y(ctx, x2, 2, kC, __LINE__);
    CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t1));
    rep = new_report();
    CHECK_OK(sdxRun(ctx, NULL, &rep));
    CHECK(rep.phase == SDX_PHASE_REPLAYING && rep.replay_count == 8);
    check_y(ctx, x, 1, kC, __LINE__);
  }
  sdxDestroyContext(ctx);
}

/* Invalid inputs, names, struct sizes and NULLs: the right status and a message naming the culprit. */
static void test_errors(sdx_bundle_t* bundle, sdx_runtime_t* rt, const char* model_path) {
  sdx_context_t* ctx = NULL;
  sdx_bundle_t* b = NULL;
  sdx_runtime_t* r = NULL;
  sdx_context_t* c = NULL;
  float x[8] = {0};
  const int64_t dims[2] = {1, 4};
  sdx_tensor_t t = float_tensor(x, dims, 2);
  sdx_tensor_t y;
  size_t n = 0;
  const char* name = NULL;
  memset(&y, 0, sizeof y);
  y.struct_size = sizeof y;
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;

  /* Names. */
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "no_such_input", &t), SDX_STATUS_NOT_FOUND);
  CHECK_ERROR_MENTIONS("no_such_input");
  CHECK_ERROR_MENTIONS("'x'");  // the inputs it does have
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  CHECK(strcmp(sdxGetLastError(), "") == 0);  // a success clears the last error
  CHECK_OK(sdxRun(ctx, NULL, NULL));
  CHECK_STATUS(sdxGetOutput(ctx, "no_such_output", &y), SDX_STATUS_NOT_FOUND);
  CHECK_ERROR_MENTIONS("no_such_output");

  /* Element types. */
  t.dtype = SDX_DTYPE_INT32;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("'x'");
  CHECK_ERROR_MENTIONS("int32");
  t.dtype = SDX_DTYPE_STRING;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("string");
  t.dtype = 999;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("999");
  t.dtype = SDX_DTYPE_FLOAT32;

  /* Struct sizes, ndim, nbytes. */
  t.struct_size = SDX_TENSOR_MIN_SIZE - 1;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  t.struct_size = SDX_TENSOR_MIN_SIZE;  // an old tensor without nbytes is fine
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  t.struct_size = sizeof t;
  t.ndim = -1;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  t.ndim = 2;
  t.dims = NULL;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  t.dims = dims;
  t.nbytes = 12;
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("16");
  t.nbytes = 16;
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));

  /* Rank and fixed dims are checked by sdxRun; a failed run leaves no outputs. */
  {
    const int64_t rank1[1] = {4};
    const int64_t wide[2] = {1, 5};
    const sdx_tensor_t bad_rank = float_tensor(x, rank1, 1);
    const sdx_tensor_t bad_dim = float_tensor(x, wide, 2);
    CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &bad_rank));
    CHECK_STATUS(sdxRun(ctx, NULL, NULL), SDX_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("'x'");
    CHECK_ERROR_MENTIONS("rank");
    CHECK_STATUS(sdxGetOutput(ctx, "y", &y), SDX_STATUS_FAILED_PRECONDITION);
    CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &bad_dim));
    CHECK_STATUS(sdxRun(ctx, NULL, NULL), SDX_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("dimension 1 must be 4");
    CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
    CHECK_OK(sdxRun(ctx, NULL, NULL));
    check_y(ctx, x, 1, kC, __LINE__);
  }
  {
    sdx_run_info_t info;
    memset(&info, 0, sizeof info);
    CHECK_STATUS(sdxRun(ctx, &info, NULL), SDX_STATUS_INVALID_ARGUMENT);  // struct_size not set
    y.struct_size = SDX_TENSOR_MIN_SIZE - 1;
    CHECK_STATUS(sdxGetOutput(ctx, "y", &y), SDX_STATUS_INVALID_ARGUMENT);
    y.struct_size = SDX_TENSOR_MIN_SIZE;  // an old tensor: nbytes is not written
    y.nbytes = 12345;
    CHECK_OK(sdxGetOutput(ctx, "y", &y));
    CHECK(y.nbytes == 12345 && y.ndim == 2 && y.dtype == SDX_DTYPE_FLOAT32);
    y.struct_size = sizeof y;
  }

  /* NULL arguments. */
  CHECK_STATUS(sdxCreateRuntime(NULL, NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("out");
  CHECK_STATUS(sdxLoadBundle(NULL, model_path, &b), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxLoadBundle(rt, NULL, &b), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("path");
  CHECK_STATUS(sdxLoadBundle(rt, model_path, NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxLoadBundleFromMemory(rt, NULL, 10, &b), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxCreateContext(rt, NULL, &c), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxCreateContext(NULL, bundle, &c), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxCreateContext(rt, bundle, NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxMarkInputPlaceholder(NULL, "x", &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, NULL, &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxMarkInputPlaceholder(ctx, "x", NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("tensor");
  CHECK_STATUS(sdxMarkInputVariable(NULL, "c", &t), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxMarkInputVariable(ctx, "c", NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxRun(NULL, NULL, NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxGetOutput(NULL, "y", &y), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxGetOutput(ctx, NULL, &y), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxGetOutput(ctx, "y", NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxFreezeShapes(NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxGetInputCount(NULL, &n), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(sdxGetInputName(bundle, 0, NULL), SDX_STATUS_INVALID_ARGUMENT);
  CHECK(sdxGetPlanPhase(NULL) == SDX_PHASE_INVALID);
  CHECK_ERROR_MENTIONS("ctx");
  sdxDestroyContext(NULL);
  sdxUnloadBundle(NULL);
  sdxDestroyRuntime(NULL);
  CHECK(b == NULL && c == NULL);  // outputs untouched on failure

  /* Introspection. */
  CHECK_OK(sdxGetInputCount(bundle, &n));
  CHECK(n == 1);
  CHECK_OK(sdxGetOutputCount(bundle, &n));
  CHECK(n == 1);
  CHECK_OK(sdxGetInputName(bundle, 0, &name));
  CHECK(name && strcmp(name, "x") == 0);
  CHECK_OK(sdxGetOutputName(bundle, 0, &name));
  CHECK(name && strcmp(name, "y") == 0);
  CHECK_STATUS(sdxGetInputName(bundle, 1, &name), SDX_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(sdxGetOutputName(bundle, 7, &name), SDX_STATUS_OUT_OF_RANGE);

  /* Bad files and bytes. */
  CHECK_STATUS(sdxLoadBundle(rt, "/nonexistent/sdx_capi_model.onnx", &b), SDX_STATUS_NOT_FOUND);
  CHECK_ERROR_MENTIONS("/nonexistent/sdx_capi_model.onnx");
  CHECK_STATUS(sdxLoadBundleFromMemory(rt, kModel, sizeof kModel / 2, &b), SDX_STATUS_DATA_LOSS);
  CHECK_ERROR_MENTIONS("protobuf");
  CHECK(b == NULL);

  /* A bundle of another runtime. */
  CHECK_OK(sdxCreateRuntime(NULL, &r));
  CHECK_STATUS(sdxCreateContext(r, bundle, &c), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("another runtime");
  sdxDestroyRuntime(r);

  /* Create infos out of range. */
  {
    sdx_create_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.execution_mode = 17;
    CHECK_STATUS(sdxCreateRuntime(&info, &r), SDX_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("execution_mode 17");
    info.execution_mode = -1;
    CHECK_STATUS(sdxCreateRuntime(&info, &r), SDX_STATUS_INVALID_ARGUMENT);
    info.execution_mode = SDX_MODE_AUTO;
    info.num_warmup_iterations = -1;
    CHECK_STATUS(sdxCreateRuntime(&info, &r), SDX_STATUS_INVALID_ARGUMENT);
    info.num_warmup_iterations = 0;
    info.plan_cache_memory_fraction = 1.5;
    CHECK_STATUS(sdxCreateRuntime(&info, &r), SDX_STATUS_INVALID_ARGUMENT);
    info.struct_size = 1;
    CHECK_STATUS(sdxCreateRuntime(&info, &r), SDX_STATUS_INVALID_ARGUMENT);
  }
  sdxDestroyContext(ctx);
}

/* An "old" create_info: only execution_mode fits in its struct_size, so the (invalid) values after it
 * are never read and the defaults apply. */
static void test_old_create_info(const char* model_path) {
  sdx_create_info_t info;
  sdx_runtime_t* rt = NULL;
  sdx_bundle_t* bundle = NULL;
  sdx_context_t* ctx = NULL;
  sdx_execution_report_t rep = new_report();
  float x[4];
  const int64_t dims[2] = {1, 4};
  const sdx_tensor_t t = float_tensor(x, dims, 2);
  int i;
  memset(&info, 0, sizeof info);
  info.execution_mode = SDX_MODE_SLOT_BY_SLOT;
  info.num_warmup_iterations = -5;  // would be INVALID_ARGUMENT if read
  info.plan_cache_memory_fraction = 7.0;
  info.struct_size = offsetof(sdx_create_info_t, num_warmup_iterations);
  CHECK_OK(sdxCreateRuntime(&info, &rt));
  CHECK_OK(sdxLoadBundle(rt, model_path, &bundle));
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  for (i = 0; i < 3; ++i) {  // SLOT_BY_SLOT was read: the plan never leaves WARMUP
    fill_input(x, 1, i);
    CHECK_OK(sdxRun(ctx, NULL, &rep));
    CHECK(rep.phase == SDX_PHASE_WARMUP && rep.execution_mode == SDX_MODE_SLOT_BY_SLOT);
    check_y(ctx, x, 1, kC, __LINE__);
  }
  sdxDestroyContext(ctx);
  sdxUnloadBundle(bundle);
  sdxDestroyRuntime(rt);

  /* Same, AUTO with num_warmup_iterations = 3 beyond struct_size: the default (1) applies. */
  rt = NULL;
  bundle = NULL;
  ctx = NULL;
  memset(&info, 0, sizeof info);
  info.execution_mode = SDX_MODE_AUTO;
  info.num_warmup_iterations = 3;
  info.struct_size = offsetof(sdx_create_info_t, num_warmup_iterations);
  CHECK_OK(sdxCreateRuntime(&info, &rt));
  CHECK_OK(sdxLoadBundleFromMemory(rt, kModel, sizeof kModel, &bundle));
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  fill_input(x, 1, 9);
  CHECK_OK(sdxRun(ctx, NULL, &rep));
  CHECK(rep.phase == SDX_PHASE_WARMUP);  /* its one warmup run; it freezes when the signature comes again */
  check_y(ctx, x, 1, kC, __LINE__);
  sdxDestroyContext(ctx);
  sdxUnloadBundle(bundle);
  sdxDestroyRuntime(rt);
}

/* sdxFreezeShapes: refused before any run; after one warmup run of three it freezes early. */
static void test_freeze_shapes(const char* model_path) {
  sdx_create_info_t info;
  sdx_runtime_t* rt = NULL;
  sdx_bundle_t* bundle = NULL;
  sdx_context_t* ctx = NULL;
  sdx_execution_report_t rep = new_report();
  float x[4];
  const int64_t dims[2] = {1, 4};
  const sdx_tensor_t t = float_tensor(x, dims, 2);
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.execution_mode = SDX_MODE_CPU_REPLAY;
  info.num_warmup_iterations = 3;
  info.plan_cache_max_count = 4;
  info.intra_op_num_threads = 1;
  info.plan_cache_memory_fraction = 0.5;
  CHECK_OK(sdxCreateRuntime(&info, &rt));
  CHECK_OK(sdxLoadBundle(rt, model_path, &bundle));
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;
  CHECK_STATUS(sdxFreezeShapes(ctx), SDX_STATUS_FAILED_PRECONDITION);  // no shapes seen yet
  CHECK(strlen(sdxGetLastError()) > 0);
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  fill_input(x, 1, 1);
  CHECK_OK(sdxRun(ctx, NULL, &rep));
  CHECK(rep.phase == SDX_PHASE_WARMUP && sdxGetPlanPhase(ctx) == SDX_PHASE_WARMUP);  // 1 of 3 warmup runs
  check_y(ctx, x, 1, kC, __LINE__);
  CHECK_OK(sdxFreezeShapes(ctx));
  CHECK(sdxGetPlanPhase(ctx) == SDX_PHASE_SHAPES_FROZEN);
  CHECK_OK(sdxFreezeShapes(ctx));  // already frozen: nothing to do
  fill_input(x, 1, 2);
  CHECK_OK(sdxRun(ctx, NULL, &rep));
  CHECK(rep.phase == SDX_PHASE_CAPTURED && sdxGetPlanPhase(ctx) == SDX_PHASE_CUDA_GRAPH_CAPTURED);
  check_y(ctx, x, 1, kC, __LINE__);
  fill_input(x, 1, 3);
  CHECK_OK(sdxRun(ctx, NULL, &rep));
  CHECK(rep.phase == SDX_PHASE_REPLAYING && rep.execution_mode == SDX_MODE_CPU_REPLAY && rep.replay_count == 1);
  check_y(ctx, x, 1, kC, __LINE__);
  sdxDestroyContext(ctx);
  sdxUnloadBundle(bundle);
  sdxDestroyRuntime(rt);
}

/* A GPU mode on a build without its backend: the runtime falls back to CPU_REPLAY and every report says so. */
static void test_mode_fallback(const char* model_path) {
  sdx_create_info_t info;
  sdx_runtime_t* rt = NULL;
  sdx_bundle_t* bundle = NULL;
  sdx_context_t* ctx = NULL;
  sdx_execution_report_t rep = new_report();
  float x[4];
  const int64_t dims[2] = {1, 4};
  const sdx_tensor_t t = float_tensor(x, dims, 2);
  int i;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.execution_mode = SDX_MODE_CUDA_GRAPHS;
  CHECK_OK(sdxCreateRuntime(&info, &rt));
  CHECK_OK(sdxLoadBundle(rt, model_path, &bundle));
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  for (i = 0; i < 3; ++i) {
    fill_input(x, 1, i);
    CHECK_OK(sdxRun(ctx, NULL, &rep));
    check_y(ctx, x, 1, kC, __LINE__);
  }
  CHECK(rep.requested_mode == SDX_MODE_CUDA_GRAPHS && rep.execution_mode == SDX_MODE_CPU_REPLAY);
  CHECK(rep.mode_fallback_reason != NULL && strstr(rep.mode_fallback_reason, "CUDA") != NULL);
  sdxDestroyContext(ctx);
  sdxUnloadBundle(bundle);
  sdxDestroyRuntime(rt);
}

/* sdxMarkInputVariable: per context, drops the plans, and a same-shape update keeps replaying. */
static void test_variables(sdx_bundle_t* bundle, sdx_runtime_t* rt) {
  sdx_context_t* a = NULL;
  sdx_context_t* b = NULL;
  sdx_execution_report_t rep = new_report();
  float x[4];
  const int64_t dims[2] = {1, 4};
  const int64_t cdims[1] = {4};
  const sdx_tensor_t t = float_tensor(x, dims, 2);
  float c1[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  const float c2[4] = {-4.0f, 3.0f, 0.25f, 10.0f};
  sdx_tensor_t ct = float_tensor(c1, cdims, 1);
  sdx_tensor_t y;
  int i;
  memset(&y, 0, sizeof y);
  y.struct_size = sizeof y;
  CHECK_OK(sdxCreateContext(rt, bundle, &a));
  CHECK_OK(sdxCreateContext(rt, bundle, &b));
  if (!a || !b) return;
  fill_input(x, 1, 0);
  CHECK_OK(sdxMarkInputPlaceholder(a, "x", &t));
  CHECK_OK(sdxMarkInputPlaceholder(b, "x", &t));
  for (i = 0; i < 3; ++i) CHECK_OK(sdxRun(a, NULL, &rep));
  CHECK(rep.phase == SDX_PHASE_REPLAYING);

  CHECK_OK(sdxMarkInputVariable(a, "c", &ct));
  c1[0] = 100.0f;                                 // copied: later changes to the caller's buffer do not matter
  CHECK(sdxGetPlanPhase(a) == SDX_PHASE_WARMUP);  // the plans were dropped
  CHECK_STATUS(sdxGetOutput(a, "y", &y), SDX_STATUS_FAILED_PRECONDITION);  // and the outputs with them
  c1[0] = 1.0f;
  for (i = 0; i < 4; ++i) {
    fill_input(x, 1, 20 + i);
    CHECK_OK(sdxRun(a, NULL, &rep));
    check_y(a, x, 1, c1, __LINE__);
  }
  CHECK(rep.phase == SDX_PHASE_REPLAYING);
  /* The same shape again: the captured plan keeps replaying, with the new values. */
  ct.data = c2;
  CHECK_OK(sdxMarkInputVariable(a, "c", &ct));
  fill_input(x, 1, 30);
  CHECK_OK(sdxRun(a, NULL, &rep));
  CHECK(rep.phase == SDX_PHASE_REPLAYING && rep.execution_mode == SDX_MODE_CPU_REPLAY);
  check_y(a, x, 1, c2, __LINE__);

  /* The other context still sees the model's c. */
  CHECK_OK(sdxRun(b, NULL, NULL));
  check_y(b, x, 1, kC, __LINE__);

  /* Errors. */
  CHECK_STATUS(sdxMarkInputVariable(a, "no_such_weight", &ct), SDX_STATUS_NOT_FOUND);
  CHECK_ERROR_MENTIONS("no_such_weight");
  CHECK_STATUS(sdxMarkInputVariable(a, "x", &ct), SDX_STATUS_INVALID_ARGUMENT);  // an input, not a weight
  CHECK_ERROR_MENTIONS("'x'");
  ct.dtype = SDX_DTYPE_FLOAT64;
  CHECK_STATUS(sdxMarkInputVariable(a, "c", &ct), SDX_STATUS_INVALID_ARGUMENT);
  CHECK_ERROR_MENTIONS("double");
  ct.dtype = SDX_DTYPE_FLOAT32;
  ct.data = NULL;
  CHECK_STATUS(sdxMarkInputVariable(a, "c", &ct), SDX_STATUS_INVALID_ARGUMENT);
  sdxDestroyContext(a);
  sdxDestroyContext(b);
}

/* Handles destroyed in the "wrong" order: the context keeps the model alive. */
static void test_destroy_order(const char* model_path) {
  sdx_runtime_t* rt = NULL;
  sdx_bundle_t* bundle = NULL;
  sdx_context_t* ctx = NULL;
  sdx_execution_report_t rep = new_report();
  float x[4];
  const int64_t dims[2] = {1, 4};
  const sdx_tensor_t t = float_tensor(x, dims, 2);
  int i;
  CHECK_OK(sdxCreateRuntime(NULL, &rt));
  CHECK_OK(sdxLoadBundle(rt, model_path, &bundle));
  CHECK_OK(sdxCreateContext(rt, bundle, &ctx));
  if (!ctx) return;
  sdxUnloadBundle(bundle);
  sdxDestroyRuntime(rt);
  CHECK_OK(sdxMarkInputPlaceholder(ctx, "x", &t));
  for (i = 0; i < 4; ++i) {
    fill_input(x, 1, 50 + i);
    CHECK_OK(sdxRun(ctx, NULL, &rep));
    check_y(ctx, x, 1, kC, __LINE__);
  }
  CHECK(rep.phase == SDX_PHASE_REPLAYING);
  sdxDestroyContext(ctx);
}

int main(int argc, char** argv) {
  const char* model_path = argc > 1 ? argv[1] : "sdx_capi_test.onnx";
  sdx_create_info_t info;
  sdx_runtime_t* rt = NULL;
  sdx_bundle_t* bundle = NULL;
  FILE* f;

  CHECK(sdxGetAbiVersion() == SDX_RUNTIME_ABI_VERSION);
  CHECK(strcmp(sdxGetLastError(), "") == 0);
  CHECK(strcmp(sdxGetStatusName(SDX_STATUS_NOT_FOUND), "NOT_FOUND") == 0);

  f = fopen(model_path, "wb");
  if (!f || fwrite(kModel, 1, sizeof kModel, f) != sizeof kModel || fclose(f) != 0) {
    fprintf(stderr, "cannot write the model to %s\n", model_path);
    return 2;
  }

  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.execution_mode = SDX_MODE_AUTO;
  info.num_warmup_iterations = 1;
  CHECK_OK(sdxCreateRuntime(&info, &rt));
  CHECK_OK(sdxLoadBundle(rt, model_path, &bundle));
  if (!rt || !bundle) {
    fprintf(stderr, "sdx_capi_test: cannot load %s: %s\n", model_path, sdxGetLastError());
    return 1;
  }
  test_lifecycle(bundle, rt);
  test_errors(bundle, rt, model_path);
  test_old_create_info(model_path);
  test_freeze_shapes(model_path);
  test_mode_fallback(model_path);
  test_variables(bundle, rt);
  test_destroy_order(model_path);
  sdxUnloadBundle(bundle);
  sdxDestroyRuntime(rt);
  remove(model_path);

  printf("sdx_capi_test: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
