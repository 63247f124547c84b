#include "testing/conformance.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/float16.h"
#include "api/load.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/session.h"
#include "runtime/execution_report.h"

namespace sdx::testing {
namespace fs = std::filesystem;

const char* outcome_name(CaseResult::Outcome o) {
  switch (o) {
    case CaseResult::kPassed: return "passed";
    case CaseResult::kFailed: return "failed";
    case CaseResult::kSkipped: return "skipped";
  }
  return "?";
}

namespace {

Result<std::string> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return not_found("cannot open " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<Datum> read_value(const fs::path& p, const ir::TypeInfo& type) {
  SDX_ASSIGN_OR_RETURN(std::string bytes, read_file(p), "");
  switch (type.kind) {
    case ir::TypeInfo::Kind::kSequence: return onnx::parse_sequence_proto(bytes);
    case ir::TypeInfo::Kind::kOptional: return onnx::parse_optional_proto(bytes);
    default: {
      SDX_ASSIGN_OR_RETURN(Tensor t, onnx::parse_tensor_proto(bytes), p.filename().string());
      return Datum::tensor(std::move(t));
    }
  }
}

bool as_double(const Tensor& t, int64_t i, double* out) {
  switch (t.dtype()) {
    case DType::kFloat32: *out = t.data<float>()[i]; return true;
    case DType::kFloat64: *out = t.data<double>()[i]; return true;
    case DType::kFloat16: *out = t.data<Float16>()[i].to_float(); return true;
    case DType::kBFloat16: *out = t.data<BFloat16>()[i].to_float(); return true;
    default: return false;
  }
}

Status compare_tensor(const Tensor& out, const Tensor& ref, double rtol, double atol) {
  if (out.dtype() != ref.dtype())
    return invalid_argument(std::string("element type ") + dtype_name(out.dtype()) + ", expected " + dtype_name(ref.dtype()));
  if (out.shape() != ref.shape())
    return invalid_argument("shape " + out.shape().to_string() + ", expected " + ref.shape().to_string());
  const int64_t n = ref.numel();
  if (ref.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (out.data<std::string>()[i] != ref.data<std::string>()[i])
        return invalid_argument("string at flat index " + std::to_string(i) + " is '" + out.data<std::string>()[i] +
                                "', expected '" + ref.data<std::string>()[i] + "'");
    return Status::ok();
  }
  double probe;
  if (as_double(ref, 0, &probe) || n == 0) {
    if (ref.dtype() == DType::kBFloat16) rtol = std::max(rtol, 1.0 / 64);
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      double a, b;
      as_double(out, i, &a);
      as_double(ref, i, &b);
      bool ok;
      if (std::isnan(b)) ok = std::isnan(a);
      else if (std::isinf(b)) ok = a == b;
      else ok = std::fabs(a - b) <= atol + rtol * std::fabs(b);
      if (!ok) {
        if (first < 0) first = i;
        ++bad;
        if (!std::isnan(a) && std::isfinite(b)) worst = std::max(worst, std::fabs(a - b));
      }
    }
    if (bad) {
      double a, b;
      as_double(out, first, &a);
      as_double(ref, first, &b);
      std::ostringstream ss;
      ss << bad << " of " << n << " values differ (rtol=" << rtol << ", atol=" << atol << "); first at flat index "
         << first << ": got " << a << ", expected " << b << "; max abs diff " << worst;
      return invalid_argument(ss.str());
    }
    return Status::ok();
  }
  // Integers, bool, float8/float4 and packed types: bit-exact.
  const size_t bytes = ref.nbytes();
  const auto* pa = static_cast<const unsigned char*>(out.raw_data());
  const auto* pb = static_cast<const unsigned char*>(ref.raw_data());
  for (size_t i = 0; i < bytes; ++i)
    if (pa[i] != pb[i])
      return invalid_argument("values differ at byte " + std::to_string(i) + " (" + dtype_name(ref.dtype()) +
                              " compared exactly): got 0x" + std::to_string(pa[i]) + ", expected 0x" + std::to_string(pb[i]));
  return Status::ok();
}

}  // namespace

Status compare_datum(const Datum& out, const Datum& ref, double rtol, double atol) {
  if (ref.is_none() || out.is_none()) {
    if (ref.is_none() != out.is_none()) return invalid_argument(ref.is_none() ? "expected an empty optional" : "got an empty optional");
    return Status::ok();
  }
  if (ref.is_sequence()) {
    if (!out.is_sequence()) return invalid_argument("expected a sequence");
    const auto& a = out.as_sequence();
    const auto& b = ref.as_sequence();
    if (a.size() != b.size())
      return invalid_argument("sequence length " + std::to_string(a.size()) + ", expected " + std::to_string(b.size()));
    for (size_t i = 0; i < a.size(); ++i) SDX_RETURN_IF_ERROR(compare_tensor(a[i], b[i], rtol, atol), "sequence item " + std::to_string(i));
    return Status::ok();
  }
  if (!out.is_tensor()) return invalid_argument("expected a tensor");
  return compare_tensor(out.as_tensor(), ref.as_tensor(), rtol, atol);
}

CaseResult run_conformance_case(const std::string& case_dir, double rtol, double atol) {
  CaseResult r;
  auto start = std::chrono::steady_clock::now();
  auto finish = [&](CaseResult::Outcome o, std::string reason) {
    r.outcome = o;
    r.reason = std::move(reason);
    r.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  auto session = api::load_session_file((fs::path(case_dir) / "model.onnx").string());
  if (!session.is_ok()) {
    const Status& s = session.status();
    return finish(s.code() == StatusCode::kUnimplemented ? CaseResult::kSkipped : CaseResult::kFailed, "load: " + s.to_string());
  }
  const auto& graph = *(*session)->model().graph;
  int sets = 0;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(case_dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& ds : dirs) {
    ++sets;
    std::vector<std::pair<std::string, Datum>> feeds;
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      fs::path p = ds / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) continue;
      const ir::Value* in = graph.inputs()[i];
      auto v = read_value(p, in->type());
      if (!v.is_ok()) return finish(CaseResult::kFailed, "reading " + p.string() + ": " + v.status().to_string());
      feeds.emplace_back(in->name(), std::move(v).value());
    }
    // Four runs per data set, through the whole plan lifecycle: the first warms up (slot by slot,
    // fresh memory) and freezes, the second captures, the third and fourth replay. All must match
    // the reference, and every later run must be bitwise identical to the first.
    std::vector<Datum> first;
    static const char* const kWhich[] = {"", " (capture run)", " (replay run)", " (second replay run)"};
    for (int pass = 0; pass < 4; ++pass) {
      const char* which = kWhich[pass];
      runtime::ExecutionReport rep;
      auto outs = (*session)->run(feeds, {}, nullptr, &rep);
      if (!outs.is_ok()) {
        const Status& s = outs.status();
        return finish(s.code() == StatusCode::kUnimplemented ? CaseResult::kSkipped : CaseResult::kFailed,
                      std::string("run") + which + ": " + s.to_string());
      }
      if (pass == 3) {
        r.replayed = rep.mode_used == runtime::ExecutionMode::kCpuReplay;
        r.replay_note = r.replayed ? std::to_string(rep.captured_steps) + " captured, " + std::to_string(rep.gap_steps) +
                                         " gap, " + std::to_string(rep.slot_by_slot_steps) + " slot-by-slot steps"
                                   : (rep.fallback_reason ? rep.fallback_reason : "not replayed");
      }
      for (size_t i = 0; i < graph.outputs().size(); ++i) {
        fs::path p = ds / ("output_" + std::to_string(i) + ".pb");
        auto ref = read_value(p, graph.outputs()[i]->type());
        if (!ref.is_ok()) return finish(CaseResult::kFailed, "reading " + p.string() + ": " + ref.status().to_string());
        Status s = compare_datum(outs.value()[i], ref.value(), rtol, atol);
        if (!s.is_ok()) return finish(CaseResult::kFailed, "output '" + graph.outputs()[i]->name() + "'" + which + ": " + s.message());
        if (pass > 0) {
          s = compare_datum(outs.value()[i], first[i], 0.0, 0.0);
          if (!s.is_ok())
            return finish(CaseResult::kFailed, "output '" + graph.outputs()[i]->name() + "' differs between the warmup run and the" +
                                                   which + ": " + s.message());
        }
      }
      if (pass == 0) first = std::move(outs).value();
    }
  }
  if (sets == 0) return finish(CaseResult::kFailed, "no test_data_set folders");
  return finish(CaseResult::kPassed, "");
}

}  // namespace sdx::testing
