// Runs one case of the ONNX backend node test suite (a folder with model.onnx and
// test_data_set_N/{input,output}_M.pb) and compares outputs the way onnx's
// backend runner does: same shape and element type; floats within
// |out - ref| <= atol + rtol * |ref| (NaN matches NaN; bfloat16 uses rtol >= 2^-6);
// everything else exactly.
//
//   CaseResult r = run_conformance_case("/data/node/test_relu");
//   if (r.outcome == CaseResult::kFailed) puts(r.reason.c_str());
#pragma once

#include <string>

#include "core/datum.h"
#include "core/status.h"

namespace sdx::testing {

struct CaseResult {
  enum Outcome { kPassed, kFailed, kSkipped };
  Outcome outcome = kFailed;
  std::string reason;  // empty when passed
  double millis = 0;
  // Whether the data sets' later runs replayed a captured plan (CPU_REPLAY), and if not why.
  bool replayed = false;
  std::string replay_note;
};

const char* outcome_name(CaseResult::Outcome o);

CaseResult run_conformance_case(const std::string& case_dir, double rtol = 1e-3, double atol = 1e-7);

// Compares one output; returns a failure description or OK.
Status compare_datum(const Datum& out, const Datum& ref, double rtol, double atol);

}  // namespace sdx::testing
