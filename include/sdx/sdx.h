// sdx's public C++ API, in one include. Users compile against include/ only and link libsdx.
//
//   #include "sdx/sdx.h"
//   sdx::Result<sdx::Session> s = sdx::Session::load("model.onnx");
//
// The headers: status.h (Status, Result), element_type.h, tensor.h (TensorView, Value),
// session_options.h (SessionOptions, the option table), session.h (Session, RunContext, RunReport,
// compile_bundle). The C ABI is sdx_runtime_c.h.
#pragma once

#include "sdx/element_type.h"
#include "sdx/loop_report.h"
#include "sdx/session.h"
#include "sdx/session_options.h"
#include "sdx/status.h"
#include "sdx/tensor.h"
