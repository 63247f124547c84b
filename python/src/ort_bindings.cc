// Python bindings behind sdx's onnxruntime-style module API: RunOptions' terminate flag, the log sink of
// set_default_logger_callback, and the build description of get_build_info.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <memory>
#include <string>

#include "py_status.h"
// Internal headers this binding needs (docs/ARCHITECTURE.md lists each): the log sink, the version and
// the CPU level the kernels dispatch to.
#include "backend/cpu/simd/isa.h"
#include "core/version.h"
#include "obs/log.h"

namespace nb = nanobind;

namespace sdx::py {

namespace {

// RunOptions.terminate. set() publishes only the request: release, paired with the executors' acquire
// loads (runtime/run_control.h).
struct TerminateFlag {
  std::atomic<bool> value{false};
};

// The Python callable of set_default_logger_callback: called with the GIL from whichever thread logs.
// A callback that raises has its exception printed (sys.unraisablehook), never propagated into sdx.
void set_log_callback(nb::object callback) {
  if (callback.is_none()) {
    obs::set_log_sink({});
    return;
  }
  auto holder = std::shared_ptr<nb::object>(new nb::object(std::move(callback)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;  // the last sink copy may be dropped off the GIL
    delete p;
  });
  obs::set_log_sink([holder](const obs::LogRecord& r) {
    nb::gil_scoped_acquire gil;
    try {
      (*holder)(static_cast<int>(r.severity), nb::str(r.category.data(), r.category.size()), nb::str(""),
                nb::str(r.where.data(), r.where.size()), nb::str(r.message.data(), r.message.size()));
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("sdx log callback");
    }
  });
}

std::string build_info() {
  std::string s = std::string("sdx ") + version();
  if (!build_id().empty()) s += ", build id " + build_id();
#if defined(__clang__)
  s += ", clang " __clang_version__;
#elif defined(__GNUC__)
  s += ", gcc " __VERSION__;
#endif
  s += std::string(", CPU kernels: ") + cpu::simd::isa_name(cpu::simd::active_isa());
  return s;
}

}  // namespace

const std::atomic<bool>* terminate_flag(nb::handle h) {
  if (h.is_none()) return nullptr;
  return &nb::cast<TerminateFlag&>(h).value;
}

void bind_ort(nb::module_& m) {
  nb::class_<TerminateFlag>(m, "TerminateFlag")
      .def(nb::init<>())
      .def("set", [](TerminateFlag& f, bool v) { f.value.store(v, std::memory_order_release); }, nb::arg("value"))
      .def("get", [](const TerminateFlag& f) { return f.value.load(std::memory_order_acquire); });
  m.def("set_log_callback", &set_log_callback, nb::arg("callback").none());
  m.def("build_info", &build_info);
}

}  // namespace sdx::py
