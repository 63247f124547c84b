// Tensor-manipulation kernels that produce values from attributes or metadata:
// Identity, Constant, ConstantOfShape, Shape, Size, EyeLike, Range, Dropout (inference).
#include <cmath>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// ---- Identity: tensors, sequences and optionals pass through unchanged.
Status identity_run(KernelContext& ctx) {
  const Datum& d = ctx.input_datum(0);
  if (d.is_tensor()) return ctx.set_output(0, d.as_tensor());
  return ctx.set_output_datum(0, d);
}
const backend::KernelRegistrar kIdentity({"Identity", "", 1, backend::kAnyOpset, backend::function_kernel(identity_run)});

// ---- Constant: one of value / value_float(s) / value_int(s) / value_string(s).
class ConstantKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    int found = 0;
    for (const ir::Attribute& a : node.attributes()) {
      Result<Tensor> t = make(a);
      if (!t.is_ok()) return t.status();
      if (!t->defined()) continue;
      value_ = std::move(t).value();
      ++found;
    }
    if (found != 1)
      return invalid_argument("Constant needs exactly one value attribute (value, value_float(s), value_int(s), "
                              "value_string(s)), got " + std::to_string(found));
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override { return ctx.set_output(0, value_); }

 private:
  template <typename T, typename V>
  static Result<Tensor> filled(DType dt, Shape shape, const std::vector<V>& vals) {
    SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dt, std::move(shape)), "Constant");
    for (size_t i = 0; i < vals.size(); ++i) t.data<T>()[i] = static_cast<T>(vals[i]);
    return t;
  }
  static Result<Tensor> make(const ir::Attribute& a) {
    if (a.name == "value") {
      if (!a.t.defined()) return invalid_argument("Constant attribute 'value' holds no tensor");
      return a.t;
    }
    if (a.name == "value_float") return filled<float>(DType::kFloat32, Shape(), std::vector<float>{a.f});
    if (a.name == "value_floats")
      return filled<float>(DType::kFloat32, Shape{static_cast<int64_t>(a.floats.size())}, a.floats);
    if (a.name == "value_int") return filled<int64_t>(DType::kInt64, Shape(), std::vector<int64_t>{a.i});
    if (a.name == "value_ints") return filled<int64_t>(DType::kInt64, Shape{static_cast<int64_t>(a.ints.size())}, a.ints);
    if (a.name == "value_string") return filled<std::string>(DType::kString, Shape(), std::vector<std::string>{a.s});
    if (a.name == "value_strings")
      return filled<std::string>(DType::kString, Shape{static_cast<int64_t>(a.strings.size())}, a.strings);
    if (a.name == "sparse_value") return unimplemented("Constant with a sparse_value attribute is not supported");
    return Tensor();  // unrelated attribute
  }
  Tensor value_;
};
const backend::KernelRegistrar kConstant({"Constant", "", 1, backend::kAnyOpset, backend::kernel_factory<ConstantKernel>()});

// ---- ConstantOfShape: fill a shape given as int64 input with the 1-element `value` attribute.
class ConstantOfShapeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* a = node.attr("value");
    if (a && a->t.defined()) {
      if (a->t.numel() != 1) return invalid_argument("ConstantOfShape 'value' must hold one element");
      value_ = a->t;
    } else {
      float zero = 0.f;
      value_ = Tensor::from_values(DType::kFloat32, Shape{1}, &zero);
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, read_int64s(ctx.input(0), "ConstantOfShape input"), "");
    if (ctx.input(0).rank() > 1) return invalid_argument("ConstantOfShape input must be 1-D");
    SDX_ASSIGN_OR_RETURN(Shape shape, make_shape(dims, "ConstantOfShape input"), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, value_.dtype(), shape), "");
    return dispatch_storage(value_.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T v = value_.data<T>()[0];
      T* p = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) p[i] = v;
      return Status::ok();
    }, "ConstantOfShape");
  }

 private:
  Tensor value_;
};
const backend::KernelRegistrar kConstantOfShape(
    {"ConstantOfShape", "", 9, backend::kAnyOpset, backend::kernel_factory<ConstantOfShapeKernel>()});

// ---- Shape (start/end since opset 15).
class ShapeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    start_ = node.attr_int("start", 0);
    end_ = node.attr("end") ? node.attr_int("end", 0) : INT64_MAX;
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const int64_t r = ctx.input(0).rank();
    auto clamp = [r](int64_t v) {
      if (v < 0) v += r;
      return v < 0 ? 0 : (v > r ? r : v);
    };
    int64_t s = clamp(start_), e = clamp(end_);
    int64_t n = e > s ? e - s : 0;
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt64, Shape{n}), "");
    for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = ctx.input(0).shape()[static_cast<int>(s + i)];
    return Status::ok();
  }

 private:
  int64_t start_ = 0, end_ = INT64_MAX;
};
const backend::KernelRegistrar kShape({"Shape", "", 1, backend::kAnyOpset, backend::kernel_factory<ShapeKernel>()});

Status size_run(KernelContext& ctx) {
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt64, Shape()), "");
  y.data<int64_t>()[0] = ctx.input(0).numel();
  return Status::ok();
}
const backend::KernelRegistrar kSize({"Size", "", 1, backend::kAnyOpset, backend::function_kernel(size_run)});

// ---- EyeLike: ones on diagonal k of a 2-D tensor, in `dtype` or the input's type.
class EyeLikeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    k_ = node.attr_int("k", 0);
    if (node.attr("dtype")) {
      auto dt = dtype_from_onnx(static_cast<int>(node.attr_int("dtype", 0)));
      if (!dt) return invalid_argument("EyeLike 'dtype' is not a valid element type");
      dtype_ = *dt;
      has_dtype_ = true;
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) return invalid_argument("EyeLike input must be 2-D, got " + x.type_string());
    DType dt = has_dtype_ ? dtype_ : x.dtype();
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, dt, x.shape()), "");
    return dispatch<SDX_NUMERIC_TYPES, bool>(dt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* p = y.data<T>();
      const int64_t rows = x.shape()[0], cols = x.shape()[1];
      for (int64_t i = 0; i < rows * cols; ++i) p[i] = from_f32<T>(0.f);
      if (k_ >= cols || -k_ >= rows) return Status::ok();  // diagonal entirely outside
      for (int64_t i = 0; i < rows; ++i) {
        int64_t j = i + k_;
        if (j >= 0 && j < cols) p[i * cols + j] = from_f32<T>(1.f);
      }
      return Status::ok();
    }, "EyeLike");
  }

 private:
  int64_t k_ = 0;
  DType dtype_ = DType::kFloat32;
  bool has_dtype_ = false;
};
const backend::KernelRegistrar kEyeLike({"EyeLike", "", 9, backend::kAnyOpset, backend::kernel_factory<EyeLikeKernel>()});

// ---- Range: numpy arange(start, limit, delta); 16-bit floats compute in float or double (stash_type).
Status range_run(KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  const Tensor& l = ctx.input(1);
  const Tensor& d = ctx.input(2);
  if (s.dtype() != l.dtype() || s.dtype() != d.dtype())
    return invalid_argument("Range inputs must share one element type");
  for (const Tensor* t : {&s, &l, &d})
    if (t->numel() != 1) return invalid_argument("Range inputs must be scalars, got " + t->type_string());
  return dispatch<SDX_NUMERIC_TYPES>(s.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
    auto get = [](const Tensor& t) -> C {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return t.data<T>()[0].to_float();
      else return static_cast<C>(t.data<T>()[0]);
    };
    C start = get(s), limit = get(l), delta = get(d);
    if (delta == 0) return invalid_argument("Range delta must not be zero");
    int64_t n = 0;
    if constexpr (std::is_integral_v<T>) {
      const __int128 span = static_cast<__int128>(limit) - start;  // no overflow at the int64 extremes
      const __int128 cnt = span / delta + ((span % delta != 0 && ((span > 0) == (delta > 0))) ? 1 : 0);
      n = cnt < 0 ? 0 : (cnt > (int64_t{1} << 40) ? (int64_t{1} << 41) : static_cast<int64_t>(cnt));
    } else {
      double c = std::ceil((static_cast<double>(limit) - start) / delta);
      if (!std::isfinite(c) || c > 1e15) return invalid_argument("Range length is not finite or too large");
      n = c < 0 ? 0 : static_cast<int64_t>(c);
    }
    if (n < 0) n = 0;
    if (n > (int64_t{1} << 40)) return invalid_argument("Range length " + std::to_string(n) + " is too large");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, s.dtype(), Shape{n}), "");
    T* p = y.data<T>();
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      // Accumulate like numpy arange in the stash type: start + i * delta.
      for (int64_t i = 0; i < n; ++i) p[i] = T::from_float(static_cast<float>(start + static_cast<double>(i) * delta));
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<C>(i) * delta);
    }
    return Status::ok();
  }, "Range");
}
const backend::KernelRegistrar kRange({"Range", "", 11, backend::kAnyOpset, backend::function_kernel(range_run)});

// ---- Dropout: inference behaviour (output = input, mask all true). training_mode with ratio > 0
// would need random numbers; it is rejected rather than silently wrong.
class DropoutKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    opset_ = node.opset();
    if (opset_ < 7 && node.attr_int("is_test", 0) == 0 && node.attr_float("ratio", 0.5f) > 0.f)
      training_attr_ = true;
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    bool training = training_attr_;
    if (opset_ >= 12 && ctx.has_input(2)) {
      SDX_ASSIGN_OR_RETURN(double t, read_double_scalar(ctx.input(2), "Dropout training_mode", RealTypes::kNumericOrBool), "");
      training = t != 0;
    }
    if (training) {
      double ratio = 0.5;
      if (opset_ >= 12 && ctx.has_input(1)) {
        SDX_ASSIGN_OR_RETURN(ratio, read_double_scalar(ctx.input(1), "Dropout ratio", RealTypes::kNumericOrBool), "");
      }
      if (ratio != 0) return unimplemented("Dropout in training mode is not supported");
    }
    SDX_RETURN_IF_ERROR(ctx.set_output(0, x), "");
    if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
      // Opset 7-9 masks have the input's type; 10+ are bool.
      DType mdt = (opset_ >= 10) ? DType::kBool : x.dtype();
      SDX_ASSIGN_OR_RETURN(Tensor m, ctx.allocate_output(1, mdt, x.shape()), "");
      return dispatch<SDX_NUMERIC_TYPES, bool>(mdt, [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        for (int64_t i = 0; i < m.numel(); ++i) m.data<T>()[i] = from_f32<T>(1.f);
        return Status::ok();
      }, "Dropout mask");
    }
    return Status::ok();
  }

 private:
  int opset_ = 0;
  bool training_attr_ = false;
};
const backend::KernelRegistrar kDropout({"Dropout", "", 1, backend::kAnyOpset, backend::kernel_factory<DropoutKernel>()});

}  // namespace
}  // namespace sdx::cpu
