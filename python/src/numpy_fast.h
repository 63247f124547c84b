// numpy arrays into and out of the engine through numpy's C API, for InferenceSession.run's fast path.
//
// Going through nanobind's ndarray instead costs about 0.7 us per call on a small model: a DLPack
// capsule per input, and numpy.asarray over the buffer protocol (a format string parsed) per output.
// Here an input is read off the array object and an output is one PyArray_New over a buffer the
// engine's threads already filled.
//
//   if (!py::numpy_api_init()) throw ...;                 // once, at module import
//   TensorView arg; int64_t dims[py::kMaxNumpyRank];
//   if (!py::numpy_input(obj, &arg, dims)) ...            // not a plain numpy array: the slower path
//   PyObject* a = py::numpy_owning_array(tensor, typenum, buf);  // owns buf (::operator new)
#pragma once

#include <Python.h>

#include <cstdint>

#include "sdx/tensor.h"

namespace sdx::py {

inline constexpr int kMaxNumpyRank = 8;

// Imports numpy's C API; false, with the Python error set, when numpy cannot be imported.
bool numpy_api_init();

// Describes `obj` in `arg` (its dims written to `dims`) when it is a numpy array the engine can read in
// place: aligned, C-contiguous, native byte order, rank <= kMaxNumpyRank and an element type sdx has
// (bool, int8..64, uint8..64, float16/32/64). False otherwise, with no error set. `arg` borrows the
// array's memory: the caller keeps `obj` alive while it is used.
bool numpy_input(PyObject* obj, TensorView* arg, int64_t* dims);

// numpy's type number for dt, or -1 when numpy has no such type (strings, bfloat16, float8, ...).
int numpy_typenum(ElementType dt);

// A new numpy array with t's shape and type `typenum` over `buf` (allocated with ::operator new, holding
// t's bytes), which it owns from now on. Null with the Python error set on failure (buf is freed).
PyObject* numpy_owning_array(const TensorView& t, int typenum, void* buf);

}  // namespace sdx::py
