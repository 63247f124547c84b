// Einsum: general Einstein summation over any number of operands.
//
// Supports explicit ("ij,jk->ik") and implicit ("ij,jk": labels seen once, sorted,
// after the broadcast ellipsis dims) outputs, repeated labels within a term
// (diagonals, e.g. "ii->i"), "..." with numpy broadcasting, and size-1
// broadcasting of labelled dims. Every label becomes one loop; a repeated label
// in an operand adds up its strides, so diagonals need no special case. The
// loop nest runs output labels outside and summed labels inside, accumulating
// in double (64-bit integers for integer types).
//
// Fast path: a two-operand float contraction without diagonals or broadcast
// dims (batched matmul, bilinear forms, outer products, ...) groups its labels
// into batch / M / N / K, packs both operands and runs cpu::gemm per batch.
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// One term of the equation: per dim, a label id; -1 marks the ellipsis position.
struct Term {
  std::vector<int> labels;  // letters as ids 0..51, ellipsis as -1 (at most once)
  bool has_ellipsis = false;
};

int letter_id(char ch) { return std::islower(static_cast<unsigned char>(ch)) ? ch - 'a' : 26 + (ch - 'A'); }

Result<Term> parse_term(const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (t.has_ellipsis || s.compare(i, 3, "...") != 0) return invalid_argument("Einsum: bad ellipsis in term '" + s + "'");
      t.has_ellipsis = true;
      t.labels.push_back(-1);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(ch))) {
      t.labels.push_back(letter_id(ch));
    } else {
      return invalid_argument(std::string("Einsum: unexpected character '") + ch + "' in equation");
    }
  }
  return t;
}

struct Parsed {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Result<Parsed> parse_equation(const std::string& eq) {
  Parsed p;
  std::string lhs = eq, rhs;
  size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    p.explicit_output = true;
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    SDX_ASSIGN_OR_RETURN(Term t, parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)), "");
    p.inputs.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (p.explicit_output) { SDX_ASSIGN_OR_RETURN(p.output, parse_term(rhs), ""); }
  return p;
}

// Visits a row-major walk over `sizes`: fn(linear index, offset = sum idx[d] * strides[d]).
template <typename F>
void strided_walk(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, F&& fn) {
  int64_t total = 1;
  for (int64_t n : sizes) total *= n;
  if (total == 0) return;
  std::vector<int64_t> ctr(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t j = 0; j < total; ++j) {
    fn(j, off);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++ctr[d] < sizes[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (sizes[d] - 1);
      ctr[d] = 0;
    }
  }
}

// Label classes for the gemm path, each a list of loop indices.
struct GemmGroups {
  std::vector<size_t> batch, m, n, k;
};

// C = A * B per batch on packed [batch, M, K] x [batch, K, N] buffers, written to y
// through its output strides.
template <typename T>
void einsum_gemm(const T* a, const T* b, T* y, const GemmGroups& g, const std::vector<int64_t>& loop_size,
                 const std::vector<std::vector<int64_t>>& stride, const std::vector<int64_t>& out_stride) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  auto collect = [&](std::initializer_list<const std::vector<size_t>*> groups, const std::vector<int64_t>& st,
                     std::vector<int64_t>& sizes, std::vector<int64_t>& strides) {
    for (const auto* grp : groups)
      for (size_t k : *grp) {
        sizes.push_back(loop_size[k]);
        strides.push_back(st[k]);
      }
  };
  auto prod = [&](const std::vector<size_t>& grp) {
    int64_t p = 1;
    for (size_t k : grp) p *= loop_size[k];
    return p;
  };
  const int64_t nb = prod(g.batch), m = prod(g.m), n = prod(g.n), kk = prod(g.k);
  std::vector<C> pa(static_cast<size_t>(nb * m * kk)), pb(static_cast<size_t>(nb * kk * n)), pc(static_cast<size_t>(nb * m * n));
  {
    std::vector<int64_t> sz, st;
    collect({&g.batch, &g.m, &g.k}, stride[0], sz, st);
    strided_walk(sz, st, [&](int64_t j, int64_t off) { pa[static_cast<size_t>(j)] = load_as<C>(a[off]); });
  }
  {
    std::vector<int64_t> sz, st;
    collect({&g.batch, &g.k, &g.n}, stride[1], sz, st);
    strided_walk(sz, st, [&](int64_t j, int64_t off) { pb[static_cast<size_t>(j)] = load_as<C>(b[off]); });
  }
  for (int64_t i = 0; i < nb; ++i)
    gemm(false, false, m, n, kk, C(1), pa.data() + i * m * kk, kk, pb.data() + i * kk * n, n, C(0), pc.data() + i * m * n, n);
  std::vector<int64_t> sz, st;
  collect({&g.batch, &g.m, &g.n}, out_stride, sz, st);
  strided_walk(sz, st, [&](int64_t j, int64_t off) { y[off] = store_as<T>(pc[static_cast<size_t>(j)]); });
}

class EinsumKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    equation_ = node.attr_string("equation", "");
    if (equation_.empty()) return invalid_argument("Einsum requires attribute 'equation'");
    SDX_ASSIGN_OR_RETURN(parsed_, parse_equation(equation_), "Einsum equation '" + equation_ + "'");
    if (static_cast<int>(parsed_.inputs.size()) != node.num_inputs())
      return invalid_argument("Einsum equation '" + equation_ + "' has " + std::to_string(parsed_.inputs.size()) +
                              " terms but the node has " + std::to_string(node.num_inputs()) + " inputs");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const int nin = static_cast<int>(parsed_.inputs.size());
    const std::string where = "Einsum '" + equation_ + "'";
    // Ellipsis rank: the largest number of dims any operand's "..." covers.
    std::vector<int> ell_rank(static_cast<size_t>(nin), 0);
    int E = 0;
    for (int i = 0; i < nin; ++i) {
      const Term& t = parsed_.inputs[static_cast<size_t>(i)];
      const int named = static_cast<int>(t.labels.size()) - (t.has_ellipsis ? 1 : 0);
      const int r = ctx.input(i).rank();
      if (t.has_ellipsis ? r < named : r != named)
        return invalid_argument(where + ": operand " + std::to_string(i) + " has rank " + std::to_string(r) + ", term needs " +
                                std::to_string(named) + (t.has_ellipsis ? " or more" : ""));
      ell_rank[static_cast<size_t>(i)] = r - named;
      E = std::max(E, r - named);
      if (ctx.input(i).dtype() != ctx.input(0).dtype()) return invalid_argument(where + ": operands differ in element type");
    }
    // Label ids: 0..51 letters, 52.. ellipsis dims (52 + e, e = 0 is the outermost).
    constexpr int kEll = 52;
    const int nlabels = kEll + E;
    std::vector<int64_t> size(static_cast<size_t>(nlabels), -1);
    std::vector<int> count(static_cast<size_t>(nlabels), 0);
    // Per operand, per dim: its label id.
    std::vector<std::vector<int>> dim_label(static_cast<size_t>(nin));
    for (int i = 0; i < nin; ++i) {
      const Tensor& x = ctx.input(i);
      const Term& t = parsed_.inputs[static_cast<size_t>(i)];
      auto& dl = dim_label[static_cast<size_t>(i)];
      for (int l : t.labels) {
        if (l >= 0) {
          dl.push_back(l);
        } else {
          const int er = ell_rank[static_cast<size_t>(i)];
          for (int e = 0; e < er; ++e) dl.push_back(kEll + (E - er) + e);
        }
      }
      for (int dd = 0; dd < x.rank(); ++dd) {
        const int l = dl[static_cast<size_t>(dd)];
        const int64_t n = x.shape().dim(dd);
        int64_t& s = size[static_cast<size_t>(l)];
        if (s == -1 || s == 1) s = n;
        else if (n != s && n != 1)
          return invalid_argument(where + ": dimension " + std::to_string(dd) + " of operand " + std::to_string(i) + " is " +
                                  std::to_string(n) + " but the label's size is " + std::to_string(s));
        if (l < kEll) ++count[static_cast<size_t>(l)];
      }
    }
    // Output labels.
    std::vector<int> out_labels;
    if (parsed_.explicit_output) {
      for (int l : parsed_.output.labels) {
        if (l < 0) {
          for (int e = 0; e < E; ++e) out_labels.push_back(kEll + e);
        } else {
          if (size[static_cast<size_t>(l)] == -1) return invalid_argument(where + ": output label does not appear in any input");
          for (int o : out_labels)
            if (o == l) return invalid_argument(where + ": output label repeated");
          out_labels.push_back(l);
        }
      }
      // An output without "..." sums the ellipsis dims away, as numpy does.
    } else {
      for (int e = 0; e < E; ++e) out_labels.push_back(kEll + e);
      for (int l = 0; l < kEll; ++l)
        if (count[static_cast<size_t>(l)] == 1) out_labels.push_back(l);
    }
    // Loop order: output labels, then every other used label (summed).
    std::vector<bool> is_out(static_cast<size_t>(nlabels), false);
    for (int l : out_labels) is_out[static_cast<size_t>(l)] = true;
    std::vector<int> loops = out_labels;
    for (int l = 0; l < nlabels; ++l)
      if (size[static_cast<size_t>(l)] >= 0 && !is_out[static_cast<size_t>(l)]) loops.push_back(l);
    const size_t nl = loops.size();
    const size_t nout = out_labels.size();
    std::vector<int64_t> loop_size(nl);
    for (size_t k = 0; k < nl; ++k) loop_size[k] = size[static_cast<size_t>(loops[k])];
    // Strides: stride[i][k] = element stride of operand i along loop k (summed over repeated labels).
    std::vector<std::vector<int64_t>> stride(static_cast<size_t>(nin), std::vector<int64_t>(nl, 0));
    // appear[i][k]: dims of operand i labelled loops[k]; simple = no diagonal and no broadcast dim.
    std::vector<std::vector<int>> appear(static_cast<size_t>(nin), std::vector<int>(nl, 0));
    bool simple = true;
    for (int i = 0; i < nin; ++i) {
      const Shape& s = ctx.input(i).shape();
      int64_t st = 1;
      for (int dd = s.rank() - 1; dd >= 0; --dd) {
        const int l = dim_label[static_cast<size_t>(i)][static_cast<size_t>(dd)];
        for (size_t k = 0; k < nl; ++k) {
          if (loops[k] != l) continue;
          if (s.dim(dd) != 1) stride[static_cast<size_t>(i)][k] += st;
          else if (loop_size[k] != 1) simple = false;
          if (++appear[static_cast<size_t>(i)][k] > 1) simple = false;
        }
        st *= s.dim(dd);
      }
    }
    std::vector<int64_t> out_dims(loop_size.begin(), loop_size.begin() + static_cast<std::ptrdiff_t>(nout));
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), where);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, ctx.input(0).dtype(), out_shape), where);
    if (nin == 2 && simple && dtype_is_float(y.dtype()) && out_shape.numel() > 0) {
      GemmGroups g;
      for (size_t k = 0; k < nl; ++k) {
        if (loop_size[k] == 1) continue;
        const bool in_a = appear[0][k] > 0, in_b = appear[1][k] > 0, out = k < nout;
        if (in_a && in_b) (out ? g.batch : g.k).push_back(k);
        else if (in_a && out) g.m.push_back(k);
        else if (in_b && out) g.n.push_back(k);
        else simple = false;  // summed over one operand only: generic loop
      }
      if (simple) {
        std::vector<int64_t> out_stride(nl, 0);
        int64_t st = 1;
        for (size_t k = nout; k-- > 0;) {
          out_stride[k] = st;
          st *= loop_size[k];
        }
        return dispatch<SDX_FLOAT_TYPES>(
            y.dtype(),
            [&](auto tag) -> Status {
              using T = typename decltype(tag)::type;
              einsum_gemm<T>(ctx.input(0).data<T>(), ctx.input(1).data<T>(), y.data<T>(), g, loop_size, stride, out_stride);
              return Status::ok();
            },
            where);
      }
    }
    int64_t inner_total = 1;
    for (size_t k = nout; k < nl; ++k) inner_total *= loop_size[k];
    return dispatch<SDX_NUMERIC_TYPES>(
        y.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using A = accum_t<T>;
          std::vector<const T*> ptr(static_cast<size_t>(nin));
          for (int i = 0; i < nin; ++i) ptr[static_cast<size_t>(i)] = ctx.input(i).data<T>();
          T* py = y.data<T>();
          const int64_t n_out = out_shape.numel();
          if (n_out == 0) return Status::ok();
          std::vector<int64_t> ctr(nl, 0), off(static_cast<size_t>(nin), 0);
          // Advances the odometer over loops [lo, hi); returns false when it wraps.
          auto advance = [&](size_t lo, size_t hi) {
            for (size_t k = hi; k-- > lo;) {
              if (++ctr[k] < loop_size[k]) {
                for (int i = 0; i < nin; ++i) off[static_cast<size_t>(i)] += stride[static_cast<size_t>(i)][k];
                return true;
              }
              for (int i = 0; i < nin; ++i) off[static_cast<size_t>(i)] -= stride[static_cast<size_t>(i)][k] * (loop_size[k] - 1);
              ctr[k] = 0;
            }
            return false;
          };
          for (int64_t o = 0; o < n_out; ++o) {
            A acc = 0;
            for (int64_t r = 0; r < inner_total; ++r) {
              A p = load_as<A>(ptr[0][off[0]]);
              for (int i = 1; i < nin; ++i) p = static_cast<A>(p * load_as<A>(ptr[static_cast<size_t>(i)][off[static_cast<size_t>(i)]]));
              acc = static_cast<A>(acc + p);
              advance(nout, nl);
            }
            py[o] = store_as<T>(acc);
            advance(0, nout);
          }
          return Status::ok();
        },
        where);
  }

 private:
  std::string equation_;
  Parsed parsed_;
};

const backend::KernelRegistrar kEinsum({"Einsum", "", 1, backend::kAnyOpset, backend::kernel_factory<EinsumKernel>()});

}  // namespace
}  // namespace sdx::cpu
