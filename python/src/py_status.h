// Errors crossing into Python: a failed Status is thrown as StatusError, which the module's exception
// translator (module.cc) turns into the sdx exception class of its code.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <utility>

#include "sdx/status.h"

namespace sdx::py {

struct StatusError {
  Status status;
};

[[noreturn]] inline void raise(const Status& s) { throw StatusError{s}; }

template <typename T>
T unwrap(Result<T> r) {
  if (!r.is_ok()) raise(r.status());
  return std::move(r).value();
}

// Binding groups defined in their own files.
void bind_obs(nanobind::module_& m);  // obs_bindings.cc: the op timing tracker
void bind_ort(nanobind::module_& m);  // ort_bindings.cc: terminate flags, the log sink, build info

// The flag of an sdx._sdx.TerminateFlag (RunOptions.terminate), or null for None.
const std::atomic<bool>* terminate_flag(nanobind::handle h);

}  // namespace sdx::py
