#include "ir/dim_product.h"

#include <cctype>
#include <vector>

namespace sdx::ir {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// s without parentheses that enclose all of it ("(a + b)" -> "a + b"; "(a)*(b)" stays).
std::string unwrap(std::string s) {
  for (;;) {
    s = trim(s);
    if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < s.size()) return s;  // the first '(' closes before the end
    }
    s = s.substr(1, s.size() - 2);
  }
}

// The top-level factors of s when '*' is its only top-level operator (a unary minus or anything else: none).
std::vector<std::string> factors(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if (depth == 0 && c == '*') {
      out.push_back(s.substr(from, i - from));
      from = i + 1;
    } else if (depth == 0 && (c == '+' || c == '-' || c == '/' || c == '%')) {
      return {};
    }
  }
  if (depth != 0 || out.empty()) return {};
  out.push_back(s.substr(from));
  return out;
}

bool is_integer(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool times(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

bool add_factor(const std::string& spelled, DimProduct& p, int depth) {
  const std::string f = unwrap(spelled);
  if (f.empty()) return false;
  if (is_integer(f)) return times(p.coef, std::stoll(f), &p.coef);
  const std::vector<std::string> parts = depth < 8 ? factors(f) : std::vector<std::string>{};
  if (parts.empty()) {
    p.symbols.insert(f);
    return true;
  }
  for (const std::string& part : parts)
    if (!add_factor(part, p, depth + 1)) return false;
  return true;
}

}  // namespace

std::optional<DimProduct> parse_product(const Dim& d) {
  DimProduct p;
  if (d.is_fixed()) {
    p.coef = d.value;
    return p;
  }
  if (d.param.empty() || !add_factor(d.param, p, 0)) return std::nullopt;
  return p;
}

std::optional<DimProduct> product_of(const Dim* begin, const Dim* end) {
  DimProduct p;
  for (const Dim* d = begin; d != end; ++d) {
    auto f = parse_product(*d);
    if (!f) return std::nullopt;
    auto m = multiply(p, *f);
    if (!m) return std::nullopt;
    p = std::move(*m);
  }
  return p;
}

std::optional<DimProduct> multiply(const DimProduct& a, const DimProduct& b) {
  DimProduct p;
  if (!times(a.coef, b.coef, &p.coef)) return std::nullopt;
  p.symbols = a.symbols;
  p.symbols.insert(b.symbols.begin(), b.symbols.end());
  return p;
}

std::optional<DimProduct> divide(const DimProduct& a, const DimProduct& b) {
  if (b.coef == 0 || a.coef % b.coef != 0) return std::nullopt;
  DimProduct p;
  p.coef = a.coef / b.coef;
  p.symbols = a.symbols;
  for (const std::string& s : b.symbols) {
    auto it = p.symbols.find(s);
    if (it == p.symbols.end()) return std::nullopt;
    p.symbols.erase(it);
  }
  return p;
}

Dim spell(const DimProduct& p) {
  if (p.symbols.empty() || p.coef == 0) return Dim::fixed(p.coef);
  if (p.coef == 1 && p.symbols.size() == 1) return Dim::symbolic(*p.symbols.begin());
  std::string s = p.coef == 1 ? "" : std::to_string(p.coef);
  for (const std::string& x : p.symbols) {
    const bool plain = x.find_first_of(" +-*/%()") == std::string::npos;
    s += (s.empty() ? "" : "*") + (plain ? x : "(" + x + ")");
  }
  return Dim::symbolic(s);
}

}  // namespace sdx::ir
