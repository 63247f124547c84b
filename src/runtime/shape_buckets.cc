#include "runtime/shape_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "plan/bucket_choice.h"

namespace sdx::runtime {
namespace {

// The summands of a declared dim: "past_sequence_length + sequence_length" -> both names.
std::vector<std::string> summands(const std::string& param) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t plus = param.find(" + ", start);
    out.push_back(param.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) return out;
    start = plus + 3;
  }
}

// Bytes per element when elements are whole bytes (strings and sub-byte types are not padded).
size_t element_bytes(DType t) {
  if (t == DType::kString || t == DType::kUndefined) return 0;
  const size_t one = dtype_storage_bytes(t, 1), two = dtype_storage_bytes(t, 2);
  return two == 2 * one ? one : 0;
}

// Copies a block of shape `block` from src (dims `sd`, starting at per-axis offsets `so`) to dst (dims `dd`,
// at offsets `dof`), one innermost row at a time. Padding copies the given tensor into the front-padded one;
// slicing copies the real entries back out.
void copy_block(const char* src, const std::vector<int64_t>& sd, const std::vector<int64_t>& so, char* dst,
                const std::vector<int64_t>& dd, const std::vector<int64_t>& dof, const std::vector<int64_t>& block,
                size_t elem) {
  const size_t rank = block.size();
  if (Shape(block).numel() == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  const int64_t row = block[rank - 1], rows = Shape(block).numel() / row;
  std::vector<int64_t> idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t s_off = 0, d_off = 0;
    for (size_t a = 0; a + 1 < rank; ++a) {
      s_off = s_off * sd[a] + idx[a] + so[a];
      d_off = d_off * dd[a] + idx[a] + dof[a];
    }
    s_off = s_off * sd[rank - 1] + so[rank - 1];
    d_off = d_off * dd[rank - 1] + dof[rank - 1];
    std::memcpy(dst + static_cast<size_t>(d_off) * elem, src + static_cast<size_t>(s_off) * elem,
                static_cast<size_t>(row) * elem);
    for (size_t a = rank - 1; a-- > 0;) {
      if (++idx[a] < block[a]) break;
      idx[a] = 0;
    }
  }
}

// Zeros the entries of dst (dims `to`) in front of each axis' lead: for axis a, every index < lead[a] (the
// rest copy_block fills), one memset per slab instead of a pass over the whole tensor.
void zero_leads(char* dst, const std::vector<int64_t>& to, const std::vector<int64_t>& lead, size_t elem) {
  for (size_t a = 0; a < to.size(); ++a) {
    if (lead[a] <= 0) continue;
    int64_t outer = 1, inner = 1;
    for (size_t b = 0; b < a; ++b) outer *= to[b];
    for (size_t b = a + 1; b < to.size(); ++b) inner *= to[b];
    for (int64_t o = 0; o < outer; ++o)
      std::memset(dst + static_cast<size_t>(o * to[a] * inner) * elem, 0, static_cast<size_t>(lead[a] * inner) * elem);
  }
}

}  // namespace

bool ShapeBuckets::Call::padded() const {
  return std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p > 0; });
}

Result<std::unique_ptr<ShapeBuckets>> ShapeBuckets::create(const std::vector<std::string>& spec,
                                                           const std::vector<ValueInfo>& inputs,
                                                           const std::vector<ValueInfo>& outputs) {
  if (spec.empty()) return std::unique_ptr<ShapeBuckets>();
  auto b = std::unique_ptr<ShapeBuckets>(new ShapeBuckets());
  for (const std::string& entry : spec) {
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    std::string step = eq == std::string::npos ? "" : entry.substr(eq + 1);
    const bool automatic = step.rfind("auto", 0) == 0;
    if (automatic) step = step.size() > 5 && step[4] == ':' ? step.substr(5) : step == "auto" ? "8" : "";
    char* end = nullptr;
    const long long v = step.empty() ? 0 : std::strtoll(step.c_str(), &end, 10);
    if (name.empty() || step.empty() || *end != '\0' || v < 1 || (automatic && v > 64))
      return invalid_argument("shape_buckets entry '" + entry +
                              "' is not NAME=STEP (a symbolic input dim and a whole number >= 1: its sizes are "
                              "padded up to multiples of STEP) or NAME=auto[:K] (K, at most 64, buckets chosen from "
                              "the traffic)");
    Dim d{name, automatic ? 0 : v, automatic ? static_cast<int>(v) : 8};
    for (size_t i = 0; i < inputs.size() && d.input < 0; ++i) {
      const auto& shape = inputs[i].type.shape;
      if (inputs[i].type.kind != ir::TypeInfo::Kind::kTensor || !shape) continue;
      for (size_t a = 0; a < shape->size(); ++a)
        if (!(*shape)[a].is_fixed() && (*shape)[a].param == name) {
          d.input = static_cast<int>(i);
          d.axis = static_cast<int>(a);
          break;
        }
    }
    if (d.input < 0) {
      std::string names;
      for (const ValueInfo& in : inputs)
        if (in.type.shape)
          for (const ir::Dim& dim : *in.type.shape)
            if (!dim.is_fixed() && !dim.param.empty() && names.find("'" + dim.param + "'") == std::string::npos)
              names += (names.empty() ? "'" : ", '") + dim.param + "'";
      return invalid_argument("shape_buckets names dim '" + name + "', which no input of the model declares on its own" +
                              (names.empty() ? std::string(" (the inputs declare no symbolic dims)")
                                             : " (the inputs' symbolic dims: " + names + ")"));
    }
    b->dims_.push_back(std::move(d));
  }
  auto axes_of = [&](const std::vector<ValueInfo>& values) {
    std::vector<AxisDims> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& shape = values[i].type.shape;
      if (values[i].type.kind != ir::TypeInfo::Kind::kTensor || !shape) continue;
      out[i].resize(shape->size());
      for (size_t a = 0; a < shape->size(); ++a) {
        if ((*shape)[a].is_fixed() || (*shape)[a].param.empty()) continue;
        for (const std::string& s : summands((*shape)[a].param))
          for (size_t k = 0; k < b->dims_.size(); ++k)
            if (b->dims_[k].name == s) out[i][a].push_back(static_cast<int>(k));
      }
    }
    return out;
  };
  b->in_axes_ = axes_of(inputs);
  b->out_axes_ = axes_of(outputs);
  b->auto_.resize(b->dims_.size());
  return b;
}

std::vector<int64_t> ShapeBuckets::leads(const std::vector<AxisDims>& axes, size_t i, const Datum& d, const Call& call) {
  std::vector<int64_t> lead;
  bool any = false;
  if (!d.is_tensor() || i >= axes.size() || axes[i].size() != static_cast<size_t>(d.as_tensor().rank())) return lead;
  for (const std::vector<int>& ks : axes[i]) {
    int64_t p = 0;
    for (int k : ks) p += call.pads[static_cast<size_t>(k)];
    lead.push_back(p);
    any = any || p > 0;
  }
  if (!any) lead.clear();
  return lead;
}

void ShapeBuckets::choose(AutoState& a, const Dim& d) {
  // Bucket sizes are chosen among at most kMaxCandidates of the sizes seen (evenly spaced through them, the
  // largest included), so a choice costs O(K x 256^2) however many sizes the dim took.
  constexpr size_t kMaxCandidates = 256;
  std::vector<plan::SizeCount> trace;
  std::vector<int64_t> candidates;
  const size_t n = a.seen.size(), stride = (n + kMaxCandidates - 1) / kMaxCandidates;
  size_t i = 0;
  for (const auto& [size, count] : a.seen) {
    trace.push_back({size, count});
    if (stride > 1 && ((n - 1 - i) % stride == 0)) candidates.push_back(size);
    ++i;
  }
  a.chosen = plan::choose_buckets(std::move(trace), d.max_buckets, 0, candidates).sizes;
}

void ShapeBuckets::seed(const std::string& name, const std::vector<int64_t>& sizes) {
  std::lock_guard<std::mutex> lock(auto_mu_);
  for (size_t k = 0; k < dims_.size(); ++k) {
    if (dims_[k].name != name || dims_[k].step != 0) continue;
    AutoState& a = auto_[k];
    for (int64_t s : sizes)
      if (s > 0) a.seen[s] += 1;
    if (!a.seen.empty()) choose(a, dims_[k]);
    a.seeded = true;
  }
}

int64_t ShapeBuckets::bucket_of(const Dim& d, int64_t value) const {
  if (value <= 0) return value;
  if (d.step > 0) return (value + d.step - 1) / d.step * d.step;
  constexpr int64_t kRechooseEvery = 64;  // calls between two choices
  constexpr size_t kMaxSizesKept = 4096;  // distinct sizes counted (later new ones are not)
  std::lock_guard<std::mutex> lock(auto_mu_);
  AutoState& a = auto_[static_cast<size_t>(&d - dims_.data())];
  if (a.seen.size() < kMaxSizesKept || a.seen.count(value)) a.seen[value] += 1;
  if (++a.calls % kRechooseEvery == 0) choose(a, d);
  auto it = std::lower_bound(a.chosen.begin(), a.chosen.end(), value);
  if (a.seeded && (it == a.chosen.end() || *it != value) && static_cast<int>(a.chosen.size()) < d.max_buckets)
    return *a.chosen.insert(it, value);  // room left: a size of its own (no padding)
  if (it != a.chosen.end()) return *it;
  // Above every chosen size: a multiple of a quarter of the value's power of two (at least 16).
  int64_t p2 = 1;
  while (p2 * 2 <= value) p2 *= 2;
  const int64_t g = std::max<int64_t>(16, p2 / 4);
  return (value + g - 1) / g * g;
}

Result<ShapeBuckets::Call> ShapeBuckets::pad(const std::vector<const Datum*>& in) const {
  Call call;
  call.pads.assign(dims_.size(), 0);
  if (state_.load(std::memory_order_acquire) == kDisabled) return call;
  for (size_t k = 0; k < dims_.size(); ++k) {
    const Datum* d = in[static_cast<size_t>(dims_[k].input)];
    if (!d || !d->is_tensor() || d->as_tensor().rank() <= dims_[k].axis) return Call{{}, std::vector<int64_t>(dims_.size(), 0)};
    const int64_t v = d->as_tensor().shape()[dims_[k].axis];
    call.pads[k] = bucket_of(dims_[k], v) - v;
  }
  if (!call.padded()) return call;
  for (size_t i = 0; i < in.size(); ++i) {
    const Datum* d = in[i];
    const std::vector<int64_t> lead = d ? leads(in_axes_, i, *d, call) : std::vector<int64_t>();
    if (lead.empty()) {
      call.feeds.push_back(d ? *d : Datum::none());
      continue;
    }
    const Tensor& t = d->as_tensor();
    const size_t elem = element_bytes(t.dtype());
    if (elem == 0) return Call{{}, std::vector<int64_t>(dims_.size(), 0)};  // run as given
    std::vector<int64_t> to = t.shape().dims();
    for (size_t a = 0; a < to.size(); ++a) to[a] += lead[a];
    SDX_ASSIGN_OR_RETURN(Tensor p, Tensor::allocate(t.dtype(), Shape(to)), "padding an input to its shape bucket");
    zero_leads(static_cast<char*>(p.raw_data()), to, lead, elem);
    copy_block(static_cast<const char*>(t.raw_data()), t.shape().dims(), std::vector<int64_t>(to.size(), 0),
               static_cast<char*>(p.raw_data()), to, lead, t.shape().dims(), elem);
    call.feeds.push_back(Datum::tensor(std::move(p)));
  }
  return call;
}

Result<std::vector<Datum>> ShapeBuckets::unpad(const std::vector<Datum>& padded, const std::vector<int>& outputs,
                                               const Call& call) const {
  std::vector<Datum> out;
  for (size_t j = 0; j < padded.size(); ++j) {
    const size_t o = static_cast<size_t>(outputs[j]);
    const Datum& d = padded[j];
    const std::vector<int64_t> lead = leads(out_axes_, o, d, call);
    if (lead.empty()) {
      out.push_back(d);
      continue;
    }
    const Tensor& t = d.as_tensor();
    const size_t elem = element_bytes(t.dtype());
    std::vector<int64_t> to = t.shape().dims();
    for (size_t a = 0; a < to.size(); ++a) {
      if (elem == 0 || to[a] < lead[a])
        return internal_error("output of shape " + t.shape().to_string() + " is smaller than its shape bucket's padding");
      to[a] -= lead[a];
    }
    SDX_ASSIGN_OR_RETURN(Tensor s, Tensor::allocate(t.dtype(), Shape(to)), "slicing an output back from its shape bucket");
    copy_block(static_cast<const char*>(t.raw_data()), t.shape().dims(), lead, static_cast<char*>(s.raw_data()), to,
               std::vector<int64_t>(to.size(), 0), to, elem);
    out.push_back(Datum::tensor(std::move(s)));
  }
  return out;
}

bool ShapeBuckets::verify(const std::vector<Datum>& unpadded, const std::vector<Datum>& exact,
                          const std::vector<int>& outputs) {
  std::string why;
  double worst = 0;
  for (size_t j = 0; j < exact.size() && why.empty(); ++j) {
    const std::string name = "output " + std::to_string(outputs[j]);
    if (!exact[j].is_tensor() || !unpadded[j].is_tensor()) continue;
    const Tensor &a = unpadded[j].as_tensor(), &b = exact[j].as_tensor();
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
      why = name + " has shape " + a.shape().to_string() + " padded but " + b.shape().to_string() + " exact";
    } else if (a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64) {
      double diff = 0, scale = 1;
      for (int64_t e = 0; e < b.numel(); ++e) {
        const double x = a.dtype() == DType::kFloat32 ? a.data<float>()[e] : a.data<double>()[e];
        const double y = b.dtype() == DType::kFloat32 ? b.data<float>()[e] : b.data<double>()[e];
        if (std::isnan(x) != std::isnan(y)) diff = INFINITY;
        if (!std::isnan(x) && !std::isnan(y)) diff = std::max(diff, std::fabs(x - y));
        if (std::isfinite(y)) scale = std::max(scale, std::fabs(y));
      }
      worst = std::max(worst, diff / scale);
      if (!(diff <= 1e-4 * scale)) {
        std::ostringstream s;
        s << name << " differs from the exact shapes' by up to " << diff << " (the model does not mask what is padded?)";
        why = s.str();
      }
    } else if (a.nbytes() != b.nbytes() || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) {
      why = name + " differs from the exact shapes'";
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (state_.load(std::memory_order_relaxed) == kDisabled) return false;
  if (!why.empty()) {
    detail_ = "the first padded call's check failed: " + why + "; exact shapes from now on";
    state_.store(kDisabled, std::memory_order_release);  // publishes detail_ (also under mu_)
    return false;
  }
  std::ostringstream s;
  s << "outputs within " << worst << " (relative) of the exact shapes' on the first padded call";
  detail_ = s.str();
  state_.store(kChecked, std::memory_order_release);
  return true;
}

std::string ShapeBuckets::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  switch (state_.load(std::memory_order_acquire)) {
    case kUnchecked: return "unchecked";
    case kChecked: return "checked: " + detail_;
    default: return "disabled: " + detail_;
  }
}

std::string ShapeBuckets::describe() const {
  std::string s;
  std::lock_guard<std::mutex> lock(auto_mu_);
  for (size_t k = 0; k < dims_.size(); ++k) {
    const Dim& d = dims_[k];
    s += (s.empty() ? "" : ", ") + d.name;
    if (d.step > 0) {
      s += " in multiples of " + std::to_string(d.step);
      continue;
    }
    const AutoState& a = auto_[k];
    s += " in automatic buckets (at most " + std::to_string(d.max_buckets) + " chosen from the traffic";
    if (a.chosen.empty()) {
      s += "; none chosen yet";
    } else {
      s += "; now [";
      for (size_t i = 0; i < a.chosen.size(); ++i) s += (i ? ", " : "") + std::to_string(a.chosen[i]);
      s += "] from " + std::to_string(a.calls) + " calls";
    }
    s += "; larger sizes round up to a quarter of their power of two)";
  }
  return s;
}

}  // namespace sdx::runtime
