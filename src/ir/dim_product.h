// Products of symbolic dims: a dim as (integer coefficient) x (multiset of symbols), so that shape arithmetic
// can multiply, divide and compare dims that exporters spell as products.
//
//   parse_product(Dim "6*s6")                       -> {6, {s6}}
//   parse_product(Dim "(floor(h/2) + 1)*(w + 1)")   -> {1, {"floor(h/2) + 1", "w + 1"}}
//   spell(product([s6, 6]))                         -> Dim "6*s6"     (what a Reshape's -1 is for [s6, 6, 400, 64]
//                                                                      -> [-1, 400, 64])
//
// A spelling is split only at top-level '*' when '*' is its only top-level operator; anything else ("a + b",
// "floor(a/2)", "a/2*3") is one symbol, compared by its spelling. Conservative: an unknown dim has no product.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "ir/type_info.h"

namespace sdx::ir {

struct DimProduct {
  int64_t coef = 1;
  std::multiset<std::string> symbols;
  bool operator==(const DimProduct& o) const { return coef == o.coef && symbols == o.symbols; }
  bool operator!=(const DimProduct& o) const { return !(*this == o); }
};

// d as a product; nullopt for an unknown dim (no value, no spelling).
std::optional<DimProduct> parse_product(const Dim& d);

// The product of dims [begin, end); nullopt when one is unknown (or a coefficient overflows).
std::optional<DimProduct> product_of(const Dim* begin, const Dim* end);

// a * b (nullopt on overflow), a / b when b divides a exactly (its symbols among a's, its coefficient a
// divisor of a's), nullopt otherwise.
std::optional<DimProduct> multiply(const DimProduct& a, const DimProduct& b);
std::optional<DimProduct> divide(const DimProduct& a, const DimProduct& b);

// As a Dim: fixed when it has no symbols, the symbol itself when it is one symbol times 1, else a spelling
// "coef*s1*s2" (symbols in order, each parenthesized when it holds an operator or a space).
Dim spell(const DimProduct& p);

}  // namespace sdx::ir
