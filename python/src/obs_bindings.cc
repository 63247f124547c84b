// Python bindings of the observability layer: the global op timing tracker (sdx.profiling wraps them).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "obs/diagnostics.h"
#include "obs/events.h"
#include "obs/op_timing_tracker.h"
#include "obs/test_slowdown.h"
#include "obs/timing_report.h"
#include "py_status.h"

namespace nb = nanobind;

namespace sdx::py {
namespace {

obs::OpTimingTracker& tracker() { return obs::OpTimingTracker::global(); }

const obs::OpStats* find_op(const std::vector<obs::OpStats>& stats, const std::string& op) {
  for (const obs::OpStats& s : stats)
    if (s.op == op) return &s;
  return nullptr;
}

nb::dict stats_to_py(const obs::OpStats& s) {
  nb::dict d;
  d["op"] = s.op;
  d["calls"] = s.calls;
  d["total_ms"] = s.total_ns / 1e6;
  d["avg_us"] = s.mean_ns / 1e3;
  d["stddev_us"] = s.stddev_ns / 1e3;
  d["min_us"] = s.min_ns / 1e3;
  d["max_us"] = s.max_ns / 1e3;
  d["p50_us"] = s.p50_ns / 1e3;
  d["p90_us"] = s.p90_ns / 1e3;
  d["p99_us"] = s.p99_ns / 1e3;
  nb::dict phases;
  for (int p = 0; p < obs::kNumTimingPhases; ++p)
    phases[obs::timing_phase_name(static_cast<obs::TimingPhase>(p))] = s.phase_total_ns[p] / 1e6;
  d["phase_total_ms"] = phases;
  nb::list hist;
  for (int b = 0; b < obs::TimingHistogram::kBuckets; ++b) hist.append(s.histogram.count(b));
  d["histogram"] = hist;
  return d;
}

// A Python callable held by a C++ subscription: released with the GIL, from whichever thread drops
// the last reference; called with the GIL, from whichever thread emits.
struct PyCallback {
  nb::object fn;
  explicit PyCallback(nb::object f) : fn(std::move(f)) {}
  ~PyCallback() {
    if (!Py_IsInitialized()) {
      (void)fn.release();  // the interpreter is gone: nothing left to free it into
      return;
    }
    nb::gil_scoped_acquire gil;
    fn.reset();
  }
  void operator()(nb::dict (*convert)(const void*), const void* event) const {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    try {
      fn(convert(event));
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("sdx event callback");
    }
  }
};

nb::dict kernel_event_to_py(const void* p) {
  const auto& e = *static_cast<const obs::KernelEvent*>(p);
  nb::dict d;
  d["type"] = "kernel";
  d["op"] = e.op;
  d["node"] = e.node;
  d["shapes"] = e.shapes;
  d["backend"] = e.backend;
  d["device"] = e.device;
  d["thread"] = e.thread;
  d["start_ns"] = e.start_ns;
  d["time_us"] = e.time_us;
  d["flops"] = e.flops;
  d["gflops"] = e.gflops;
  d["bytes"] = e.bytes;
  d["gbps"] = e.gbps;
  return d;
}

nb::dict memory_event_to_py(const void* p) {
  const auto& e = *static_cast<const obs::MemoryEvent*>(p);
  nb::dict d;
  d["type"] = "memory";
  d["direction"] = obs::copy_direction_name(e.direction);
  d["what"] = e.what;
  d["bytes"] = e.bytes;
  d["start_ns"] = e.start_ns;
  d["time_us"] = e.time_us;
  d["gbps"] = e.gbps;
  return d;
}

nb::dict compile_event_to_py(const void* p) {
  const auto& e = *static_cast<const obs::CompileEvent*>(p);
  nb::dict d;
  d["type"] = "compile";
  d["kernel"] = e.kernel;
  d["backend"] = e.backend;
  d["start_ns"] = e.start_ns;
  d["compile_us"] = e.compile_us;
  d["cache_hit"] = e.cache_hit;
  d["ok"] = e.ok;
  return d;
}

}  // namespace

void bind_obs(nb::module_& m) {
  m.def(
      "events_subscribe",
      [](nb::object callback, double min_us, std::vector<std::string> kinds) {
        if (!PyCallable_Check(callback.ptr())) raise(invalid_argument("the event callback must be callable"));
        auto cb = std::make_shared<PyCallback>(std::move(callback));
        obs::EventCallbacks c;
        for (const std::string& k : kinds) {
          if (k == "kernel")
            c.kernel = [cb](const obs::KernelEvent& e) { (*cb)(kernel_event_to_py, &e); };
          else if (k == "memory")
            c.memory = [cb](const obs::MemoryEvent& e) { (*cb)(memory_event_to_py, &e); };
          else if (k == "compile")
            c.compile = [cb](const obs::CompileEvent& e) { (*cb)(compile_event_to_py, &e); };
          else
            raise(invalid_argument("event kind must be kernel, memory or compile, got '" + k + "'"));
        }
        return obs::EventBus::global().subscribe(std::move(c), min_us);
      },
      nb::arg("callback"), nb::arg("min_duration_us"), nb::arg("kinds"));
  m.def("events_unsubscribe", [](int id) {
    nb::gil_scoped_release release;  // the last reference to a Python callback is dropped with the GIL
    return obs::EventBus::global().unsubscribe(id);
  });
  m.def("events_record", [](const std::string& path, double min_us) {
    return unwrap(obs::EventBus::global().record_to_file(path, min_us));
  });
  m.def("op_timing_set_mode", [](const std::string& mode) {
    obs::TimingMode mo;
    if (!obs::parse_timing_mode(mode, &mo))
      raise(invalid_argument("op timing mode must be disabled, simple, detailed or trace, got '" + mode + "'"));
    tracker().set_mode(mo);
  });
  m.def("op_timing_mode", [] { return std::string(obs::timing_mode_name(tracker().mode())); });
  m.def("op_timing_flush", [] {
    nb::gil_scoped_release release;
    tracker().flush();
  });
  m.def("op_timing_reset", [] { tracker().reset(); });
  m.def("op_timing_stats", [] {
    nb::list out;
    for (const obs::OpStats& s : tracker().op_stats()) out.append(stats_to_py(s));
    return out;
  });
  m.def("op_timing_thread_stats", [] {
    nb::list out;
    for (const obs::ThreadStats& t : tracker().thread_stats()) {
      nb::dict d;
      d["thread"] = t.thread;
      d["calls"] = t.calls;
      d["total_ms"] = t.total_ns / 1e6;
      d["overwritten"] = t.overwritten;
      out.append(d);
    }
    return out;
  });
  m.def("op_timing_counters", [] {
    nb::dict d;
    d["recorded"] = tracker().recorded();
    d["overwritten"] = tracker().overwritten();
    d["trace_events"] = tracker().trace().size();
    d["trace_dropped"] = tracker().trace_dropped();
    return d;
  });
  m.def("op_timing_hotspots", [](int top) { return obs::format_hotspots(tracker().op_stats(), top); }, nb::arg("top"));
  m.def("op_timing_breakdown", [](const std::string& op) {
    auto stats = tracker().op_stats();
    const obs::OpStats* s = find_op(stats, op);
    if (!s) raise(not_found("no timing recorded for op '" + op + "'"));
    return obs::format_breakdown(*s);
  });
  m.def("op_timing_histogram", [](const std::string& op) {
    auto stats = tracker().op_stats();
    const obs::OpStats* s = find_op(stats, op);
    if (!s) raise(not_found("no timing recorded for op '" + op + "'"));
    return obs::format_histogram(*s);
  });
  m.def("op_timing_thread_table", [] { return obs::format_thread_stats(tracker().thread_stats()); });
  m.def("op_timing_export_csv", [](const std::string& path) {
    Status s = obs::write_timing_csv(path, tracker().op_stats());
    if (!s.is_ok()) raise(s);
  });
  m.def("diagnostics_enable", [](const std::string& category, const std::string& level) {
    obs::DiagLevel l;
    if (!obs::parse_diag_level(level, &l))
      raise(invalid_argument("diagnostics level must be OFF, SUMMARY, DETAILED or FULL, got '" + level + "'"));
    if (category == "all" || category == "ALL") {
      obs::Diagnostics::global().enable_all(l);
      return;
    }
    obs::DiagCategory c;
    if (!obs::parse_diag_category(category, &c)) {
      std::string names;
      for (int i = 0; i < obs::kNumDiagCategories; ++i)
        names += std::string(i ? ", " : "") + obs::diag_category_name(static_cast<obs::DiagCategory>(i));
      raise(invalid_argument("unknown diagnostics category '" + category + "'; categories: " + names));
    }
    obs::Diagnostics::global().enable(c, l);
  });
  m.def("diagnostics_json", [] { return obs::Diagnostics::global().to_json(); });
  m.def("diagnostics_write", [](const std::string& path) {
    Status s = obs::Diagnostics::global().write_json(path);
    if (!s.is_ok()) raise(s);
  });
  m.def("diagnostics_reset", [] { obs::Diagnostics::global().reset(); });
#if SDX_TEST_HOOKS
  // Test-only, in test builds only: slows every execution of one op type by `factor` (obs/test_slowdown.h).
  m.def("_test_set_slowdown", [](const std::string& op, double factor) { obs::set_test_slowdown(op, factor); });
#endif
  m.def("op_timing_export_chrome_trace", [](const std::string& path) {
    Status s = obs::write_chrome_trace(path, tracker().trace());
    if (!s.is_ok()) raise(s);
  });
  // The trace mode's executions as (op, node, thread, start_ns, total_ns), start_ns on op_timing_now_ns's
  // clock (the profiler of InferenceSession(enable_profiling) reads its runs' ops from these).
  m.def("op_timing_trace", [] {
    nb::list out;
    for (const obs::TraceEvent& e : tracker().trace())
      out.append(nb::make_tuple(e.op ? e.op : "?", e.node ? e.node : "", e.thread, e.start_ns,
                                e.phase_ns[static_cast<int>(obs::TimingPhase::kTotal)]));
    return out;
  });
  m.def("op_timing_now_ns", [] { return obs::now_ns(); });
}

}  // namespace sdx::py
