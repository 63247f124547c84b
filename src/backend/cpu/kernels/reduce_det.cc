// Det: determinant of each trailing [M, M] matrix of a [..., M, M] tensor,
// by LU decomposition with partial pivoting in double.
#include <cmath>
#include <utility>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    int64_t piv = c;
    for (int64_t r = c + 1; r < m; ++r)
      if (std::fabs(a[static_cast<size_t>(r * m + c)]) > std::fabs(a[static_cast<size_t>(piv * m + c)])) piv = r;
    const double p = a[static_cast<size_t>(piv * m + c)];
    if (p == 0) return 0;
    if (piv != c) {
      for (int64_t k = 0; k < m; ++k) std::swap(a[static_cast<size_t>(piv * m + k)], a[static_cast<size_t>(c * m + k)]);
      det = -det;
    }
    det *= p;
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[static_cast<size_t>(r * m + c)] / p;
      if (f == 0) continue;
      for (int64_t k = c; k < m; ++k) a[static_cast<size_t>(r * m + k)] -= f * a[static_cast<size_t>(c * m + k)];
    }
  }
  return det;
}

Status det_kernel(backend::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.shape().dim(x.rank() - 1) != x.shape().dim(x.rank() - 2))
    return invalid_argument("Det: input must be [..., M, M], got " + x.shape().to_string());
  const int64_t m = x.shape().dim(x.rank() - 1);
  std::vector<int64_t> od(x.shape().dims().begin(), x.shape().dims().end() - 2);
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape(od)), "Det");
  return dispatch<SDX_FLOAT_TYPES>(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        std::vector<double> a(static_cast<size_t>(m * m));
        for (int64_t b = 0; b < y.numel(); ++b) {
          for (int64_t k = 0; k < m * m; ++k) a[static_cast<size_t>(k)] = load_as<double>(px[b * m * m + k]);
          y.data<T>()[b] = store_as<T>(determinant(a, m));
        }
        return Status::ok();
      },
      "Det");
}

const backend::KernelRegistrar kDet({"Det", "", 1, backend::kAnyOpset, backend::function_kernel(det_kernel)});

}  // namespace
}  // namespace sdx::cpu
