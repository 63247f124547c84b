// String operators: StringConcat, StringSplit, StringNormalizer, RegexFullMatch.
// Case changes and case-insensitive matching act on ASCII letters only.
#include <algorithm>
#include <cctype>
#include <regex>
#include <unordered_set>

#include "backend/cpu/tensor/broadcast.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

Status require_strings(const Tensor& t, const char* what) {
  if (t.dtype() != DType::kString) return invalid_argument(std::string(what) + " must be a string tensor, got " + t.type_string());
  return Status::ok();
}

Status string_concat(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  SDX_RETURN_IF_ERROR(require_strings(a, "X"), "");
  SDX_RETURN_IF_ERROR(require_strings(b, "Y"), "");
  SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({a.shape(), b.shape()}), "");
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kString, plan.output_shape()), "");
  const std::string* pa = a.data<std::string>();
  const std::string* pb = b.data<std::string>();
  std::string* py = y.data<std::string>();
  plan.for_each([&](int64_t o, const int64_t* in) { py[o] = pa[in[0]] + pb[in[1]]; });
  return Status::ok();
}

// Python str.split semantics: with a delimiter, every occurrence splits; without
// one, runs of whitespace split and leading/trailing whitespace is dropped.
std::vector<std::string> split_one(const std::string& s, const std::string& delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  int64_t splits = 0;
  if (!delim.empty()) {
    size_t start = 0;
    while (maxsplit < 0 || splits < maxsplit) {
      size_t pos = s.find(delim, start);
      if (pos == std::string::npos) break;
      parts.push_back(s.substr(start, pos - start));
      start = pos + delim.size();
      ++splits;
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) break;
    if (maxsplit >= 0 && splits == maxsplit) {
      size_t end = s.size();
      while (end > i && is_space(s[end - 1])) --end;
      parts.push_back(s.substr(i, end - i));
      break;
    }
    size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    parts.push_back(s.substr(i, j - i));
    ++splits;
    i = j;
  }
  return parts;
}

Status string_split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SDX_RETURN_IF_ERROR(require_strings(x, "X"), "");
  const std::string delim = ctx.node().attr_string("delimiter", "");
  const int64_t maxsplit = ctx.node().attr_int("maxsplit", -1);
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
  size_t width = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    parts[static_cast<size_t>(i)] = split_one(x.data<std::string>()[i], delim, maxsplit);
    width = std::max(width, parts[static_cast<size_t>(i)].size());
  }
  std::vector<int64_t> dims = x.shape().dims();
  dims.push_back(static_cast<int64_t>(width));
  SDX_ASSIGN_OR_RETURN(Shape yshape, Shape::make(dims), "");
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kString, yshape), "");
  SDX_ASSIGN_OR_RETURN(Tensor n, ctx.allocate_output(1, DType::kInt64, x.shape()), "");
  for (int64_t i = 0; i < x.numel(); ++i) {
    const auto& p = parts[static_cast<size_t>(i)];
    n.data<int64_t>()[i] = static_cast<int64_t>(p.size());
    for (size_t k = 0; k < p.size(); ++k) y.data<std::string>()[i * static_cast<int64_t>(width) + static_cast<int64_t>(k)] = p[k];
  }
  return Status::ok();
}

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string ascii_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

class StringNormalizerKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    action_ = node.attr_string("case_change_action", "NONE");
    if (action_ != "NONE" && action_ != "LOWER" && action_ != "UPPER")
      return invalid_argument("case_change_action must be NONE, LOWER or UPPER, got '" + action_ + "'");
    case_sensitive_ = node.attr_int("is_case_sensitive", 0) != 0;
    if (const ir::Attribute* a = node.attr("stopwords"))
      for (const std::string& w : a->strings) stops_.insert(case_sensitive_ ? w : ascii_lower(w));
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_RETURN_IF_ERROR(require_strings(x, "X"), "");
    const bool two_d = x.rank() == 2;
    if (!(x.rank() == 1 || (two_d && x.shape()[0] == 1)))
      return invalid_argument("X must have shape [C] or [1, C], got " + x.shape().to_string());
    std::vector<std::string> kept;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::string& s = x.data<std::string>()[i];
      if (stops_.count(case_sensitive_ ? s : ascii_lower(s))) continue;
      kept.push_back(action_ == "LOWER" ? ascii_lower(s) : action_ == "UPPER" ? ascii_upper(s) : s);
    }
    const int64_t c = kept.empty() ? 1 : static_cast<int64_t>(kept.size());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kString, two_d ? Shape{1, c} : Shape{c}), "");
    for (size_t i = 0; i < kept.size(); ++i) y.data<std::string>()[i] = std::move(kept[i]);
    return Status::ok();
  }

 private:
  std::string action_;
  bool case_sensitive_ = false;
  std::unordered_set<std::string> stops_;
};

// Patterns use RE2 syntax in the spec; std::regex (ECMAScript) covers the common
// subset (classes, \w \d \s \b, groups, alternation, bounded repeats).
class RegexFullMatchKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const std::string pattern = node.attr_string("pattern", "");
    try {
      re_ = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return invalid_argument("pattern '" + pattern + "' is not a valid regular expression: " + e.what());
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_RETURN_IF_ERROR(require_strings(x, "X"), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kBool, x.shape()), "");
    for (int64_t i = 0; i < x.numel(); ++i) y.data<uint8_t>()[i] = std::regex_match(x.data<std::string>()[i], re_) ? 1 : 0;
    return Status::ok();
  }

 private:
  std::regex re_;
};

using backend::KernelRegistrar;
const KernelRegistrar kStringConcat({"StringConcat", "", 20, backend::kAnyOpset, backend::function_kernel(string_concat)});
const KernelRegistrar kStringSplit({"StringSplit", "", 20, backend::kAnyOpset, backend::function_kernel(string_split)});
const KernelRegistrar kStringNormalizer({"StringNormalizer", "", 10, backend::kAnyOpset, backend::kernel_factory<StringNormalizerKernel>()});
const KernelRegistrar kRegexFullMatch({"RegexFullMatch", "", 20, backend::kAnyOpset, backend::kernel_factory<RegexFullMatchKernel>()});

}  // namespace
}  // namespace sdx::cpu
