#include "numpy_fast.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
// This file alone calls numpy's C API: its function table stays private to it.
#include <numpy/arrayobject.h>

#include <new>

namespace sdx::py {
namespace {

void free_buffer(PyObject* capsule) { ::operator delete(PyCapsule_GetPointer(capsule, nullptr)); }

}  // namespace

bool numpy_api_init() {
  // _import_array sets the Python error and returns < 0 when numpy cannot be imported.
  return _import_array() >= 0;
}

bool numpy_input(PyObject* obj, TensorView* arg, int64_t* dims) {
  if (!PyArray_Check(obj)) return false;
  auto* a = reinterpret_cast<PyArrayObject*>(obj);
  constexpr int kNeeded = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED;
  if ((PyArray_FLAGS(a) & kNeeded) != kNeeded || !PyArray_ISNOTSWAPPED(a)) return false;
  const int rank = PyArray_NDIM(a);
  if (rank > kMaxNumpyRank) return false;
  const PyArray_Descr* d = PyArray_DESCR(a);
  const npy_intp size = PyArray_ITEMSIZE(a);
  ElementType dt = ElementType::kUndefined;
  switch (d->kind) {
    case 'f':
      dt = size == 4 ? ElementType::kFloat32 : size == 8 ? ElementType::kFloat64 : size == 2 ? ElementType::kFloat16 : dt;
      break;
    case 'i':
      dt = size == 1 ? ElementType::kInt8 : size == 2 ? ElementType::kInt16 : size == 4 ? ElementType::kInt32 : size == 8 ? ElementType::kInt64 : dt;
      break;
    case 'u':
      dt = size == 1   ? ElementType::kUint8
           : size == 2 ? ElementType::kUint16
           : size == 4 ? ElementType::kUint32
           : size == 8 ? ElementType::kUint64
                       : dt;
      break;
    case 'b':
      dt = size == 1 ? ElementType::kBool : dt;
      break;
    default:
      break;  // complex, strings, objects, datetimes, user types (ml_dtypes' bfloat16 among them)
  }
  if (dt == ElementType::kUndefined) return false;
  const npy_intp* shape = PyArray_DIMS(a);
  for (int i = 0; i < rank; ++i) dims[i] = static_cast<int64_t>(shape[i]);
  arg->dtype = dt;
  arg->dims = dims;
  arg->rank = rank;
  arg->data = PyArray_DATA(a);
  return true;
}

int numpy_typenum(ElementType dt) {
  switch (dt) {
    case ElementType::kFloat32: return NPY_FLOAT32;
    case ElementType::kFloat64: return NPY_FLOAT64;
    case ElementType::kFloat16: return NPY_FLOAT16;
    case ElementType::kInt8: return NPY_INT8;
    case ElementType::kInt16: return NPY_INT16;
    case ElementType::kInt32: return NPY_INT32;
    case ElementType::kInt64: return NPY_INT64;
    case ElementType::kUint8: return NPY_UINT8;
    case ElementType::kUint16: return NPY_UINT16;
    case ElementType::kUint32: return NPY_UINT32;
    case ElementType::kUint64: return NPY_UINT64;
    case ElementType::kBool: return NPY_BOOL;
    default: return -1;
  }
}

PyObject* numpy_owning_array(const TensorView& t, int typenum, void* buf) {
  npy_intp shape[NPY_MAXDIMS];
  const int rank = t.rank;
  if (rank > NPY_MAXDIMS) {
    ::operator delete(buf);
    PyErr_Format(PyExc_ValueError, "an output of rank %d exceeds numpy's limit of %d dimensions", rank, NPY_MAXDIMS);
    return nullptr;
  }
  for (int i = 0; i < rank; ++i) shape[i] = static_cast<npy_intp>(t.dims[i]);
  PyObject* owner = PyCapsule_New(buf, nullptr, free_buffer);
  if (!owner) {
    ::operator delete(buf);
    return nullptr;
  }
  PyObject* arr = PyArray_SimpleNewFromData(rank, shape, typenum, buf);
  if (!arr) {
    Py_DECREF(owner);  // frees buf
    return nullptr;
  }
  // Steals owner, also when it fails (numpy releases it then; arr does not own buf).
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), owner) < 0) {
    Py_DECREF(arr);
    return nullptr;
  }
  return arr;
}

}  // namespace sdx::py
