// Mixed-radix complex FFT for the signal kernels (DFT, STFT).
//
//   FftPlan<float> plan(n);                  // factors n once
//   plan.run(data, /*forward=*/true, 1.0f);  // in place, n complex values
//
// A self-sorting (Stockham) FFT with radix-4, 2, 3 and 5 butterflies and a plain
// DFT butterfly for other factors. The factor order and butterfly arithmetic follow
// the FFTPACK lineage that numpy uses (pocketfft), computed in the signal's own
// precision, so float results carry the same rounding as the ONNX reference outputs
// (which matters where an exact result is 0 and the tolerance is absolute).
// Inverse transforms are unnormalized; pass fct = 1/n to scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace sdx::cpu::seq {

template <typename C>
struct Cx {
  C r, i;
};

template <typename C>
class FftPlan {
 public:
  explicit FftPlan(int64_t n) : n_(n) {
    int64_t len = n;
    std::vector<int64_t> fact;
    while (len % 4 == 0) fact.push_back(4), len /= 4;
    if (len % 2 == 0) {
      len /= 2;
      fact.push_back(2);
      std::swap(fact.front(), fact.back());
    }
    for (int64_t d = 3; d * d <= len; d += 2)
      while (len % d == 0) fact.push_back(d), len /= d;
    if (len > 1) fact.push_back(len);
    int64_t l1 = 1;
    for (int64_t ip : fact) {
      Pass p;
      p.ip = ip;
      p.l1 = l1;
      p.ido = n / (l1 * ip);
      for (int64_t j = 1; j < ip; ++j)
        for (int64_t i = 1; i < p.ido; ++i) {
          const double a = 2.0 * M_PI * static_cast<double>(j * l1 * i) / static_cast<double>(n);
          p.tw.push_back({static_cast<C>(std::cos(a)), static_cast<C>(std::sin(a))});
        }
      passes_.push_back(std::move(p));
      l1 *= ip;
    }
  }

  int64_t size() const { return n_; }

  // Transforms data[0..n) in place: forward uses exp(-2 pi i jk/n), inverse exp(+...).
  void run(Cx<C>* data, bool forward, C fct) const {
    std::vector<Cx<C>> scratch(static_cast<size_t>(n_));
    Cx<C>* cc = data;
    Cx<C>* ch = scratch.data();
    for (const Pass& p : passes_) {
      switch (p.ip) {
        case 2: pass2(p, cc, ch, forward); break;
        case 3: pass3(p, cc, ch, forward); break;
        case 4: pass4(p, cc, ch, forward); break;
        case 5: pass5(p, cc, ch, forward); break;
        default: pass_generic(p, cc, ch, forward);
      }
      std::swap(cc, ch);
    }
    if (cc != data)
      for (int64_t i = 0; i < n_; ++i) data[i] = cc[i];
    if (fct != C(1))
      for (int64_t i = 0; i < n_; ++i) data[i].r *= fct, data[i].i *= fct;
  }

 private:
  struct Pass {
    int64_t ip = 1, l1 = 1, ido = 1;
    std::vector<Cx<C>> tw;  // [(j-1)*(ido-1) + i-1] = exp(+2 pi i j*l1*i / n)
  };

  static Cx<C> add(Cx<C> a, Cx<C> b) { return {a.r + b.r, a.i + b.i}; }
  static Cx<C> sub(Cx<C> a, Cx<C> b) { return {a.r - b.r, a.i - b.i}; }
  // v * w (inverse) or v * conj(w) (forward).
  static Cx<C> twiddle(Cx<C> v, Cx<C> w, bool fwd) {
    return fwd ? Cx<C>{v.r * w.r + v.i * w.i, v.i * w.r - v.r * w.i} : Cx<C>{v.r * w.r - v.i * w.i, v.r * w.i + v.i * w.r};
  }
  // Multiplies by -i (forward) or +i (inverse).
  static Cx<C> rot90(Cx<C> a, bool fwd) { return fwd ? Cx<C>{a.i, -a.r} : Cx<C>{-a.i, a.r}; }

  // Input element (i, j, k) of a radix-ip pass and output element (i, k, m).
  static const Cx<C>& in(const Pass& p, const Cx<C>* cc, int64_t i, int64_t j, int64_t k) { return cc[i + p.ido * (j + p.ip * k)]; }
  static Cx<C>& out(const Pass& p, Cx<C>* ch, int64_t i, int64_t k, int64_t m) { return ch[i + p.ido * (k + p.l1 * m)]; }
  static Cx<C> wa(const Pass& p, int64_t j, int64_t i) { return p.tw[static_cast<size_t>(j * (p.ido - 1) + i - 1)]; }
  // Stores butterfly output m at (i, k, m), applying the pass twiddle when i > 0.
  static void store(const Pass& p, Cx<C>* ch, int64_t i, int64_t k, int64_t m, Cx<C> v, bool fwd) {
    out(p, ch, i, k, m) = (i == 0 || m == 0) ? v : twiddle(v, wa(p, m - 1, i), fwd);
  }

  static void pass2(const Pass& p, const Cx<C>* cc, Cx<C>* ch, bool fwd) {
    for (int64_t k = 0; k < p.l1; ++k)
      for (int64_t i = 0; i < p.ido; ++i) {
        const Cx<C> a = in(p, cc, i, 0, k), b = in(p, cc, i, 1, k);
        store(p, ch, i, k, 0, add(a, b), fwd);
        store(p, ch, i, k, 1, sub(a, b), fwd);
      }
  }

  static void pass3(const Pass& p, const Cx<C>* cc, Cx<C>* ch, bool fwd) {
    const C twr = C(-0.5), twi = (fwd ? C(-1) : C(1)) * static_cast<C>(0.8660254037844386467637231707529362L);
    for (int64_t k = 0; k < p.l1; ++k)
      for (int64_t i = 0; i < p.ido; ++i) {
        const Cx<C> t0 = in(p, cc, i, 0, k);
        const Cx<C> t1 = add(in(p, cc, i, 1, k), in(p, cc, i, 2, k)), t2 = sub(in(p, cc, i, 1, k), in(p, cc, i, 2, k));
        store(p, ch, i, k, 0, add(t0, t1), fwd);
        const Cx<C> ca{t0.r + t1.r * twr, t0.i + t1.i * twr};
        const Cx<C> cb{-(t2.i * twi), t2.r * twi};
        store(p, ch, i, k, 1, add(ca, cb), fwd);
        store(p, ch, i, k, 2, sub(ca, cb), fwd);
      }
  }

  static void pass4(const Pass& p, const Cx<C>* cc, Cx<C>* ch, bool fwd) {
    for (int64_t k = 0; k < p.l1; ++k)
      for (int64_t i = 0; i < p.ido; ++i) {
        const Cx<C> c0 = in(p, cc, i, 0, k), c1 = in(p, cc, i, 1, k), c2 = in(p, cc, i, 2, k), c3 = in(p, cc, i, 3, k);
        const Cx<C> t2 = add(c0, c2), t1 = sub(c0, c2), t3 = add(c1, c3);
        const Cx<C> t4 = rot90(sub(c1, c3), fwd);
        store(p, ch, i, k, 0, add(t2, t3), fwd);
        store(p, ch, i, k, 1, add(t1, t4), fwd);
        store(p, ch, i, k, 2, sub(t2, t3), fwd);
        store(p, ch, i, k, 3, sub(t1, t4), fwd);
      }
  }

  static void pass5(const Pass& p, const Cx<C>* cc, Cx<C>* ch, bool fwd) {
    const C s = fwd ? C(-1) : C(1);
    const C tw1r = static_cast<C>(0.3090169943749474241022934171828191L);
    const C tw1i = s * static_cast<C>(0.9510565162951535721164393333793821L);
    const C tw2r = static_cast<C>(-0.8090169943749474241022934171828191L);
    const C tw2i = s * static_cast<C>(0.5877852522924731291687059546390728L);
    for (int64_t k = 0; k < p.l1; ++k)
      for (int64_t i = 0; i < p.ido; ++i) {
        const Cx<C> t0 = in(p, cc, i, 0, k);
        const Cx<C> c1 = in(p, cc, i, 1, k), c2 = in(p, cc, i, 2, k), c3 = in(p, cc, i, 3, k), c4 = in(p, cc, i, 4, k);
        const Cx<C> t1 = add(c1, c4), t4 = sub(c1, c4), t2 = add(c2, c3), t3 = sub(c2, c3);
        store(p, ch, i, k, 0, Cx<C>{t0.r + t1.r + t2.r, t0.i + t1.i + t2.i}, fwd);
        // Outputs (1, 4) use (tw1, tw2); outputs (2, 3) use (tw2, -tw1).
        auto part = [&](int64_t u1, int64_t u2, C twar, C twbr, C twai, C twbi) {
          const Cx<C> ca{t0.r + twar * t1.r + twbr * t2.r, t0.i + twar * t1.i + twbr * t2.i};
          const Cx<C> cb{-(twai * t4.i + twbi * t3.i), twai * t4.r + twbi * t3.r};
          store(p, ch, i, k, u1, add(ca, cb), fwd);
          store(p, ch, i, k, u2, sub(ca, cb), fwd);
        };
        part(1, 4, tw1r, tw2r, tw1i, tw2i);
        part(2, 3, tw2r, tw1r, tw2i, -tw1i);
      }
  }

  // Any other factor: a direct ip-point DFT per butterfly.
  static void pass_generic(const Pass& p, const Cx<C>* cc, Cx<C>* ch, bool fwd) {
    const double sign = fwd ? -1.0 : 1.0;
    std::vector<Cx<C>> w(static_cast<size_t>(p.ip));
    for (int64_t m = 0; m < p.ip; ++m) {
      const double a = sign * 2.0 * M_PI * static_cast<double>(m) / static_cast<double>(p.ip);
      w[static_cast<size_t>(m)] = {static_cast<C>(std::cos(a)), static_cast<C>(std::sin(a))};
    }
    for (int64_t k = 0; k < p.l1; ++k)
      for (int64_t i = 0; i < p.ido; ++i)
        for (int64_t m = 0; m < p.ip; ++m) {
          Cx<C> acc{0, 0};
          for (int64_t j = 0; j < p.ip; ++j) {
            const Cx<C> v = in(p, cc, i, j, k), t = w[static_cast<size_t>((j * m) % p.ip)];
            acc = add(acc, Cx<C>{v.r * t.r - v.i * t.i, v.r * t.i + v.i * t.r});
          }
          store(p, ch, i, k, m, acc, fwd);
        }
  }

  int64_t n_;
  std::vector<Pass> passes_;
};

}  // namespace sdx::cpu::seq
