// Cast between strings and numbers, matching numpy (onnx's reference does
// x.astype(np.str_) and np.array(strings).astype(dtype)):
//   floats print with the fewest digits that read back to the same value in the
//   source type, positionally ("0.5", "15.0") for 1e-4 <= |x| < 1e16 (1e6 for 32-bit
//   and narrower floats, 1e3 for float16) and in scientific notation otherwise
//   ("1e-07", "1.5e+06"); "nan", "inf", "-inf"; bools print as "True"/"False".
//   Parsing accepts what Python's float() does ("1e-5", "NaN", "INF", "-inf",
//   surrounding spaces); a non-empty string is a true bool.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/cpu/quant/quant_util.h"

namespace sdx::cpu {
namespace {

// True when candidate and v are the same value once stored in element type T.
template <typename E>
bool same_in_type(double candidate, double v) {
  uint8_t a[8] = {}, b[8] = {};
  const CastOptions opts{true, E8M0Rounding::kNearest};
  E::store(a, 0, candidate, opts);
  E::store(b, 0, v, opts);
  return std::memcmp(a, b, sizeof a) == 0;
}

template <typename E>
std::string format_float(double v, double positional_max) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "d.ddde+XX".
  char sci[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(sci, sizeof sci, "%.*e", p - 1, v);
    if (same_in_type<E>(std::strtod(sci, nullptr), v)) break;
  }
  const double a = std::fabs(v);
  if (a < 1e-4 || a >= positional_max) return sci;
  // Positional: digits and decimal exponent from the scientific form.
  std::string s(sci);
  const size_t epos = s.find('e');
  const int exp10 = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (std::isdigit(static_cast<unsigned char>(s[i]))) digits += s[i];
  std::string out = v < 0 ? "-" : "";
  if (exp10 >= 0) {
    const size_t int_len = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_len) {
      out += digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  } else {
    out += "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  }
  return out;
}

template <typename E>
double positional_limit() {
  if constexpr (std::is_same_v<E, elem_detail::F64>) return 1e16;
  else if constexpr (std::is_same_v<E, elem_detail::F16>) return 1e3;
  else return 1e6;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Python float(): decimal/scientific numbers, inf/infinity/nan in any case, optional sign.
bool parse_double(const std::string& text, double* out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  // strtod also takes hex floats and "nan(...)", which Python rejects.
  for (char c : s)
    if (c == 'x' || c == 'X' || c == '(') return false;
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// Python int(): optional sign and decimal digits.
bool parse_int(const std::string& text, int64_t* out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE) return false;
  *out = v;
  return true;
}

bool parse_uint(const std::string& text, uint64_t* out) {
  const std::string s = trim(text);
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE) return false;
  *out = v;
  return true;
}

}  // namespace

Status cast_to_string(const Tensor& in, Tensor& out) {
  const int64_t n = in.numel();
  std::string* dst = out.data<std::string>();
  const void* src = in.raw_data();
  if (in.dtype() == DType::kBool) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<const uint8_t*>(src)[i] ? "True" : "False";
    return Status::ok();
  }
  return visit_numeric_dtype(
      in.dtype(),
      [&](auto s) -> Status {
        using S = decltype(s);
        for (int64_t i = 0; i < n; ++i) {
          const auto v = S::load(src, i);
          if constexpr (std::is_same_v<decltype(v), const double>) dst[i] = format_float<S>(v, positional_limit<S>());
          else dst[i] = std::to_string(v);
        }
        return Status::ok();
      },
      "Cast to string");
}

Status cast_from_string(const Tensor& in, Tensor& out, const CastOptions& opts) {
  const int64_t n = in.numel();
  const std::string* src = in.data<std::string>();
  void* dst = out.raw_data();
  zero_packed_output(out);
  if (out.dtype() == DType::kBool) {
    for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = src[i].empty() ? 0 : 1;
    return Status::ok();
  }
  return visit_numeric_dtype(
      out.dtype(),
      [&](auto d) -> Status {
        using D = decltype(d);
        for (int64_t i = 0; i < n; ++i) {
          using Load = typename D::Load;
          bool ok;
          if constexpr (std::is_same_v<Load, int64_t>) {
            int64_t v = 0;
            ok = parse_int(src[i], &v);
            if (ok) D::store(dst, i, v, opts);
          } else if constexpr (std::is_same_v<Load, uint64_t>) {
            uint64_t v = 0;
            ok = parse_uint(src[i], &v);
            if (ok) D::store(dst, i, v, opts);
          } else {
            double v = 0;
            ok = parse_double(src[i], &v);
            if (ok) D::store(dst, i, v, opts);
          }
          if (!ok)
            return invalid_argument("cannot convert string '" + src[i] + "' at flat index " + std::to_string(i) +
                                    " to " + dtype_name(out.dtype()));
        }
        return Status::ok();
      },
      "Cast from string");
}

}  // namespace sdx::cpu
