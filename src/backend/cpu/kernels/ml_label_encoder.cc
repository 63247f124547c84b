// LabelEncoder (ai.onnx.ml, opsets 1-4): maps each input element through a key -> value table.
//
// Keys and values are kept as 1-D tensors of their own element type (from keys_*/values_*
// attributes or keys_tensor/values_tensor), so every supported type pair shares one code
// path: a lookup turns each input element into a key index (or -1), then the output is
// filled from the values tensor or the default. Float keys match by value, NaN matching NaN;
// a repeated key maps to its last value.
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/type_dispatch.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

template <typename T>
Tensor vector_tensor(DType dtype, const std::vector<T>& v) {
  return Tensor::from_values(dtype, Shape{static_cast<int64_t>(v.size())}, v.data());
}

// A scalar tensor holding a single value.
template <typename T>
Tensor scalar_tensor(DType dtype, const T& v) {
  return Tensor::from_values(dtype, Shape{}, &v);
}

class LabelEncoderKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    if (node.opset() < 2) return init_v1(node);
    SDX_ASSIGN_OR_RETURN(keys_, pick_list(node, "keys"), "");
    SDX_ASSIGN_OR_RETURN(values_, pick_list(node, "values"), "");
    if (keys_.numel() != values_.numel())
      return invalid_argument("LabelEncoder: keys (" + std::to_string(keys_.numel()) + ") and values (" +
                              std::to_string(values_.numel()) + ") must have the same length");
    SDX_RETURN_IF_ERROR(init_default(node), "");
    return build_index();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* keys = &keys_;
    const Tensor* values = &values_;
    const Tensor* def = &default_;
    if (v1_) {  // opset 1: direction follows the input type
      if (x.dtype() == DType::kInt64) {
        keys = &v1_ints_;
        values = &v1_strings_;
        def = &v1_default_string_;
      }
    }
    if (x.dtype() != keys->dtype())
      return invalid_argument("LabelEncoder: input element type " + std::string(dtype_name(x.dtype())) +
                              " does not match the key type " + dtype_name(keys->dtype()));
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, values->dtype(), x.shape()), "");
    const int64_t n = x.numel();
    std::vector<int64_t> idx(static_cast<size_t>(n));
    lookup(x, keys == &keys_ ? 0 : 1, idx.data());
    return dispatch<SDX_ALL_TYPES>(values->dtype(), [&](auto tag) -> Status {
      using V = typename decltype(tag)::type;
      const V* pv = values->template data<V>();
      const V dv = def->template data<V>()[0];
      V* py = y.data<V>();
      for (int64_t i = 0; i < n; ++i) py[i] = idx[static_cast<size_t>(i)] >= 0 ? pv[idx[static_cast<size_t>(i)]] : dv;
      return Status::ok();
    }, "LabelEncoder values");
  }

 private:
  // One key -> index table per key kind; `which` selects the main table (0) or opset 1's reverse one (1).
  struct Index {
    std::unordered_map<std::string, int64_t> strings;
    std::unordered_map<int64_t, int64_t> ints;
    std::unordered_map<double, int64_t> floats;
    int64_t nan = -1;
  };

  static Result<Tensor> pick_list(const ir::Node& node, const std::string& prefix) {
    int found = 0;
    Tensor t;
    if (const ir::Attribute* a = node.attr(prefix + "_int64s")) { t = vector_tensor(DType::kInt64, a->ints); ++found; }
    if (const ir::Attribute* a = node.attr(prefix + "_floats")) { t = vector_tensor(DType::kFloat32, a->floats); ++found; }
    if (const ir::Attribute* a = node.attr(prefix + "_strings")) { t = vector_tensor(DType::kString, a->strings); ++found; }
    if (const ir::Attribute* a = node.attr(prefix + "_tensor")) {
      if (!a->t.defined()) return invalid_argument("LabelEncoder: attribute '" + prefix + "_tensor' holds no tensor");
      t = a->t.reshaped(Shape{a->t.numel()});
      ++found;
    }
    if (found != 1)
      return invalid_argument("LabelEncoder: exactly one " + prefix + "_* attribute must be set, found " +
                              std::to_string(found));
    return t;
  }

  Status init_default(const ir::Node& node) {
    const DType vt = values_.dtype();
    if (const ir::Attribute* a = node.attr("default_tensor")) {
      if (!a->t.defined() || a->t.numel() != 1)
        return invalid_argument("LabelEncoder: default_tensor must hold exactly one value");
      if (a->t.dtype() != vt)
        return invalid_argument("LabelEncoder: default_tensor type " + std::string(dtype_name(a->t.dtype())) +
                                " does not match the values type " + dtype_name(vt));
      default_ = a->t.reshaped(Shape{});
      return Status::ok();
    }
    if (vt == DType::kString) {
      default_ = scalar_tensor(vt, node.attr_string("default_string", "_Unused"));
      return Status::ok();
    }
    if (vt == DType::kFloat32) {
      default_ = scalar_tensor(vt, node.attr_float("default_float", -0.0f));
      return Status::ok();
    }
    const int64_t di = node.attr_int("default_int64", -1);
    const double df = -0.0;
    return dispatch<SDX_NUMERIC_TYPES, bool>(vt, [&](auto tag) -> Status {
      using V = typename decltype(tag)::type;
      if constexpr (std::is_same_v<V, Float16> || std::is_same_v<V, BFloat16>) default_ = scalar_tensor(vt, V::from_float(-0.0f));
      else if constexpr (std::is_floating_point_v<V>) default_ = scalar_tensor(vt, static_cast<V>(df));
      else default_ = scalar_tensor(vt, static_cast<V>(di));
      return Status::ok();
    }, "LabelEncoder values");
  }

  Status init_v1(const ir::Node& node) {
    v1_ = true;
    const ir::Attribute* classes = node.attr("classes_strings");
    std::vector<std::string> names = classes ? classes->strings : std::vector<std::string>{};
    std::vector<int64_t> ids(names.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
    keys_ = vector_tensor(DType::kString, names);
    values_ = vector_tensor(DType::kInt64, ids);
    default_ = scalar_tensor(DType::kInt64, node.attr_int("default_int64", -1));
    v1_ints_ = values_;
    v1_strings_ = keys_;
    v1_default_string_ = scalar_tensor(DType::kString, node.attr_string("default_string", "_Unused"));
    SDX_RETURN_IF_ERROR(build_index(), "");
    return add_keys(v1_ints_, index_[1]);
  }

  Status build_index() { return add_keys(keys_, index_[0]); }

  static Status add_keys(const Tensor& keys, Index& index) {
    return dispatch<SDX_ALL_TYPES>(keys.dtype(), [&](auto tag) -> Status {
      using K = typename decltype(tag)::type;
      const K* pk = keys.template data<K>();
      for (int64_t i = 0; i < keys.numel(); ++i) {
        if constexpr (std::is_same_v<K, std::string>) {
          index.strings[pk[i]] = i;
        } else if constexpr (std::is_floating_point_v<compute_t<K>>) {
          const double k = load_as<double>(pk[i]);  // float keys compare as double (exact for every float type)
          if (std::isnan(k)) index.nan = i;
          else index.floats[k] = i;
        } else {
          index.ints[static_cast<int64_t>(pk[i])] = i;
        }
      }
      return Status::ok();
    }, "LabelEncoder keys");
  }

  void lookup(const Tensor& x, int which, int64_t* idx) const {
    const Index& index = index_[which];
    (void)dispatch<SDX_ALL_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using K = typename decltype(tag)::type;
      const K* px = x.template data<K>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if constexpr (std::is_same_v<K, std::string>) {
          auto it = index.strings.find(px[i]);
          idx[i] = it == index.strings.end() ? -1 : it->second;
        } else if constexpr (std::is_floating_point_v<compute_t<K>>) {
          const double k = load_as<double>(px[i]);
          if (std::isnan(k)) {
            idx[i] = index.nan;
          } else {
            auto it = index.floats.find(k);
            idx[i] = it == index.floats.end() ? -1 : it->second;
          }
        } else {
          auto it = index.ints.find(static_cast<int64_t>(px[i]));
          idx[i] = it == index.ints.end() ? -1 : it->second;
        }
      }
      return Status::ok();
    }, "LabelEncoder");
  }

  Tensor keys_, values_, default_;
  Index index_[2];
  bool v1_ = false;
  Tensor v1_ints_, v1_strings_, v1_default_string_;
};

const backend::KernelRegistrar kLabelEncoder(
    {"LabelEncoder", "ai.onnx.ml", 1, backend::kAnyOpset, backend::kernel_factory<LabelEncoderKernel>()});

}  // namespace
}  // namespace sdx::cpu
