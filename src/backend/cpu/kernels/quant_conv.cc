// ConvInteger and QLinearConv: N-D convolution of int8/uint8 data accumulated in int32 (zero points
// subtracted before padding, so padding contributes zero); QLinearConv adds an int32 bias and
// requantizes like onnx's reference.
//
// Paths (the same exact sums): a 2-D convolution of one group runs as im2col rows of bytes (padding
// holds x's zero point; with 8 channels or more copied from x made pixel-major first) times the packed
// weights on integer_gemm (VNNI/AVX2/portable), output pixels split over the pool (constant weights packed
// once by the bound form, per call by run()); anything else on the direct loop.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backend/cpu/kernels/util/conv_util.h"
#include "backend/cpu/quant/integer_gemm.h"
#include "backend/cpu/quant/quant_util.h"
#include "backend/cpu/tensor/transpose_tile.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/frozen_step_context.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

bool is_8bit_int(DType t) { return t == DType::kInt8 || t == DType::kUint8; }

struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  int64_t group = 1;

  Status parse(const ir::Node& node) {
    SDX_ASSIGN_OR_RETURN(auto_pad, parse_auto_pad(node.attr_string("auto_pad", "NOTSET")), "attribute 'auto_pad'");
    kernel_shape = node.attr_ints("kernel_shape");
    strides = node.attr_ints("strides");
    dilations = node.attr_ints("dilations");
    pads = node.attr_ints("pads");
    group = node.attr_int("group", 1);
    if (group <= 0) return invalid_argument("attribute 'group' must be positive");
    return Status::ok();
  }
};

struct ConvResult {
  Shape shape;
  std::vector<int32_t> values;
};

// The 2-D, one-group convolution on integer_gemm (PackedConv): per image, each output pixel's window
// (C x KH x KW bytes, x's zero point where it overhangs) is a row and the weights [M, K] are B^T; rows split
// over the pool. K runs (channel, tap) for the channel-major windows (window_row, fewer than 8 channels)
// and (tap, channel) for windows copied from a pixel-major x (pixel_major_window_rows); a 1x1 window is a
// pixel's channels (pointwise_rows). Made per call by run(), once (weights packed, scratch sized) by the
// bound form.
// What window_row needs of a 2-D convolution, by value (no aliasing with the bytes it writes).
struct Window {
  int64_t C, H, W, KH, KW, sh, sw, dh, dw, ph, pw, OW;
  uint8_t pad, flip;  // x's zero point as stored; 0x80 for int8 (stored + 128)
};

// Output pixel p's window (C x KH x KW bytes as x holds them, pad ^ flip where it overhangs) into q; the
// caller flips an int8 row. kKW: KW when the window's kw run is contiguous (dw 1) and known here
// (fixed-size copies), else 0.
template <int kKW>
void window_row(const uint8_t* __restrict xn, uint8_t* __restrict q, int64_t p, const Window w) {
  const int64_t KW = kKW > 0 ? kKW : w.KW;
  const int64_t oh = p / w.OW, ow = p % w.OW, iw0 = ow * w.sw - w.pw;
  const bool row_inside = iw0 >= 0 && iw0 + (KW - 1) * w.dw < w.W;  // no kw overhangs
  for (int64_t ch = 0; ch < w.C; ++ch)
    for (int64_t kh = 0; kh < w.KH; ++kh, q += KW) {
      const int64_t ih = oh * w.sh - w.ph + kh * w.dh;
      if (ih < 0 || ih >= w.H) {
        std::memset(q, w.pad ^ w.flip, static_cast<size_t>(KW));  // flipped back with the row
        continue;
      }
      const uint8_t* xr = xn + (ch * w.H + ih) * w.W;
      if (kKW > 0 && row_inside) {
        std::memcpy(q, xr + iw0, static_cast<size_t>(kKW));  // dw is 1
        continue;
      }
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t iw = iw0 + kw * w.dw;
        q[kw] = iw >= 0 && iw < w.W ? xr[iw] : static_cast<uint8_t>(w.pad ^ w.flip);
      }
    }
}

// Rows [p0, p1) of a 2-D convolution's windows, with their zero points and sums (an int8 x's bytes
// flipped to x + 128 after the copy).
void window_rows(const uint8_t* xn, const IntegerGemmRows& rows, int64_t p0, int64_t p1, const Window& w, int32_t zero) {
  void (*row)(const uint8_t*, uint8_t*, int64_t, const Window) = &window_row<0>;
  if (w.dw == 1) {
    if (w.KW == 1) row = &window_row<1>;
    if (w.KW == 2) row = &window_row<2>;
    if (w.KW == 3) row = &window_row<3>;
    if (w.KW == 5) row = &window_row<5>;
    if (w.KW == 7) row = &window_row<7>;
  }
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t* q = rows.row(p);
    row(xn, q, p, w);
    if (w.flip)
      for (int64_t k = 0; k < rows.K; ++k) q[k] ^= w.flip;
    integer_gemm_finish_row(rows, p, zero);
  }
}

// A 1x1 convolution of stride 1 without pads: rows [p0, p1) are x's pixels across the C channels,
// gathered channel by channel (contiguous reads), with their sums.
// Pixels [p0, p1) of x [C, P] (bytes ^ flip) as rows of C bytes: pixel p's at dst + p * ld, its byte sum
// added to rowsum[p] when rowsum is given (zeroed first). Eight channels at a time: sixteen pixels of
// eight channel rows are transposed in SSE2 registers into 8-byte row pieces, their sums taken by psadbw
// (the byte-by-byte gather was most of crnn_int8_ddddocr_old's 24-channel 1x1 convolutions).
void pixel_major(const uint8_t* __restrict xn, int64_t C, int64_t P, int64_t p0, int64_t p1, uint8_t flip,
                 uint8_t* __restrict dst, int64_t ld, int32_t* rowsum) {
  if (rowsum)
    for (int64_t p = p0; p < p1; ++p) rowsum[p] = 0;
  int64_t c8 = 0;
#if defined(__SSE2__)
  const __m128i flip16 = _mm_set1_epi8(static_cast<char>(flip)), zero16 = _mm_setzero_si128();
#endif
  for (; c8 + 8 <= C; c8 += 8) {
    const uint8_t* __restrict xc = xn + c8 * P;
    int64_t p = p0;
#if defined(__SSE2__)
    for (; p + 16 <= p1; p += 16) {
      __m128i r[8];
      for (int j = 0; j < 8; ++j)
        r[j] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xc + j * P + p)), flip16);
      __m128i t[8], u[8];
      for (int j = 0; j < 4; ++j) {
        t[2 * j] = _mm_unpacklo_epi8(r[2 * j], r[2 * j + 1]);      // pixels 0-7, channels 2j, 2j+1
        t[2 * j + 1] = _mm_unpackhi_epi8(r[2 * j], r[2 * j + 1]);  // pixels 8-15
      }
      for (int h = 0; h < 2; ++h) {  // channels 0-3 (h 0) and 4-7 (h 1), 4 bytes per pixel
        u[4 * h + 0] = _mm_unpacklo_epi16(t[4 * h + 0], t[4 * h + 2]);  // pixels 0-3
        u[4 * h + 1] = _mm_unpackhi_epi16(t[4 * h + 0], t[4 * h + 2]);  // 4-7
        u[4 * h + 2] = _mm_unpacklo_epi16(t[4 * h + 1], t[4 * h + 3]);  // 8-11
        u[4 * h + 3] = _mm_unpackhi_epi16(t[4 * h + 1], t[4 * h + 3]);  // 12-15
      }
      for (int q = 0; q < 4; ++q) {  // pixels 4q .. 4q+3, 8 bytes each
        const __m128i lo = _mm_unpacklo_epi32(u[q], u[4 + q]), hi = _mm_unpackhi_epi32(u[q], u[4 + q]);
        const int64_t at = p + 4 * q;
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + at * ld + c8), lo);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (at + 1) * ld + c8), _mm_unpackhi_epi64(lo, lo));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (at + 2) * ld + c8), hi);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (at + 3) * ld + c8), _mm_unpackhi_epi64(hi, hi));
        if (rowsum) {
          const __m128i sl = _mm_sad_epu8(lo, zero16), sh = _mm_sad_epu8(hi, zero16);
          rowsum[at] += _mm_cvtsi128_si32(sl);
          rowsum[at + 1] += _mm_extract_epi16(sl, 4);
          rowsum[at + 2] += _mm_cvtsi128_si32(sh);
          rowsum[at + 3] += _mm_extract_epi16(sh, 4);
        }
      }
    }
#endif
    for (; p < p1; ++p)
      for (int j = 0; j < 8; ++j) {
        const uint8_t v = static_cast<uint8_t>(xc[j * P + p] ^ flip);
        dst[p * ld + c8 + j] = v;
        if (rowsum) rowsum[p] += v;
      }
  }
  for (int64_t ch = c8; ch < C; ++ch) {
    const uint8_t* __restrict xc = xn + ch * P;
    for (int64_t p = p0; p < p1; ++p) {
      const uint8_t v = static_cast<uint8_t>(xc[p] ^ flip);
      dst[p * ld + ch] = v;
      if (rowsum) rowsum[p] += v;
    }
  }
}

// A 1x1 convolution of stride 1 without pads: rows [p0, p1) are x's pixels across the C channels.
void pointwise_rows(const uint8_t* xn, const IntegerGemmRows& rows, int64_t p0, int64_t p1, int64_t C, int64_t P,
                    uint8_t flip, int32_t zero) {
  pixel_major(xn, C, P, p0, p1, flip, rows.q, rows.ldq, rows.rowsum);
  for (int64_t p = p0; p < p1; ++p) integer_gemm_set_row(rows, p, zero, rows.rowsum[p]);
}

// Rows [p0, p1) of a convolution's windows from x made pixel-major (xp: [H, W, C] bytes, already flipped):
// each row is the window's (kh, kw) taps of C bytes each (the weights are packed in that order), x's
// zero point (pad) where the window overhangs; 9 copies of C bytes per 3x3 window, where the
// channel-major window_row makes 3 C copies of 3 bytes.
void pixel_major_window_rows(const uint8_t* __restrict xp, const IntegerGemmRows& rows, int64_t p0, int64_t p1,
                             const Window& w, int32_t zero) {
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t* q = rows.row(p);
    const int64_t oh = p / w.OW, ow = p % w.OW;
    for (int64_t kh = 0; kh < w.KH; ++kh) {
      const int64_t ih = oh * w.sh - w.ph + kh * w.dh;
      for (int64_t kw = 0; kw < w.KW; ++kw, q += w.C) {
        const int64_t iw = ow * w.sw - w.pw + kw * w.dw;
        if (ih < 0 || ih >= w.H || iw < 0 || iw >= w.W)
          std::memset(q, w.pad, static_cast<size_t>(w.C));
        else
          std::memcpy(q, xp + (ih * w.W + iw) * w.C, static_cast<size_t>(w.C));
      }
    }
    integer_gemm_finish_row(rows, p, zero);
  }
}

struct PackedConv {
  std::unique_ptr<IntegerGemmWeights> b;
  WindowGeometry g;
  int64_t C = 0, H = 0, W = 0, M = 0, P = 0, K = 0;
  std::vector<char> scratch;
  std::vector<int32_t> c;  // [P, M]
  bool pixel_major_windows = false;  // windows from xp (C >= 8, not pointwise)
  std::vector<uint8_t> xp;           // one image as [H, W, C] bytes

  bool pointwise() const {
    return g.kernel[0] == 1 && g.kernel[1] == 1 && g.strides[0] == 1 && g.strides[1] == 1 && g.pads[0] == 0 &&
           g.pads[1] == 0 && g.pads[2] == 0 && g.pads[3] == 0;
  }

  PackedConv(const Tensor& w, const std::vector<int32_t>& w_zp, const WindowGeometry& geometry, const Shape& x_shape)
      : g(geometry), C(x_shape[1]), H(x_shape[2]), W(x_shape[3]), M(w.shape()[0]) {
    P = g.out[0] * g.out[1];
    const int64_t taps = g.kernel[0] * g.kernel[1];
    K = C * taps;
    pixel_major_windows = !pointwise() && C >= 8;
    if (pixel_major_windows) xp.resize(static_cast<size_t>(C * H * W));
    // B [K, M] from w [M, C, KH, KW]; k = (c, tap), or (tap, c) for pixel-major windows.
    std::vector<uint8_t> bt(static_cast<size_t>(K * M));
    const auto* wb = static_cast<const uint8_t*>(w.raw_data());
    for (int64_t m = 0; m < M; ++m)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t k = pixel_major_windows ? t * C + ch : ch * taps + t;
          bt[static_cast<size_t>(k * M + m)] = wb[(m * C + ch) * taps + t];
        }
    std::vector<int32_t> bz(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) bz[static_cast<size_t>(m)] = w_zp[w_zp.size() == 1 ? 0 : static_cast<size_t>(m)];
    b = std::make_unique<IntegerGemmWeights>(w.dtype(), bt.data(), M, K, M, bz.data());
    scratch.resize(integer_gemm_scratch_bytes(P, K));
    c.resize(static_cast<size_t>(P * M));
  }

  // out [N, M, OH, OW] from x [N, C, H, W] (uint8, or int8 stored + 128) with zero point x_zp.
  void run(const Tensor& x, int32_t x_zp, int32_t* out) {
    const int64_t N = x.shape()[0], KH = g.kernel[0], KW = g.kernel[1], OW = g.out[1];
    const IntegerGemmRows rows = integer_gemm_rows(scratch.data(), P, K);
    const bool s8 = x.dtype() == DType::kInt8;
    const int32_t zero = s8 ? x_zp + 128 : x_zp;
    const uint8_t flip = s8 ? 0x80 : 0;
    const Window win{C, H, W, KH, KW, g.strides[0], g.strides[1], g.dilations[0], g.dilations[1], g.pads[0], g.pads[1], OW,
                     static_cast<uint8_t>(zero), flip};
    const bool point = pointwise();
    for (int64_t n = 0; n < N; ++n) {
      const auto* xn = static_cast<const uint8_t*>(x.raw_data()) + n * C * H * W;
      if (pixel_major_windows)
        parallel_for(H * W, 64, [&](int64_t q0, int64_t q1) {
          pixel_major(xn, C, H * W, q0, q1, flip, xp.data(), C, nullptr);
        });
      parallel_for(P, 16, [&](int64_t p0, int64_t p1) {
        if (point)
          pointwise_rows(xn, rows, p0, p1, C, P, flip, zero);
        else if (pixel_major_windows)
          pixel_major_window_rows(xp.data(), rows, p0, p1, win, zero);
        else
          window_rows(xn, rows, p0, p1, win, zero);
        integer_gemm(rows, p0, p1, *b, c.data() + p0 * M, M, 0, b->blocks());
        // Transposed to [M, P] (in bands of 16 pixels: 16 consecutive outputs per channel).
        transpose_tile_32(c.data() + p0 * M, M, out + n * M * P + p0, P, p1 - p0, M);
      });
    }
  }
};

// Whether the convolution takes PackedConv: 2-D, one group, sums exact in int32, a non-empty output.
bool packed_conv_applies(const Tensor& x, const WindowGeometry& g, int64_t group, const Shape& out) {
  return x.rank() == 4 && group == 1 && integer_gemm_applies(x.shape()[1] * g.kernel[0] * g.kernel[1]) && out.numel() > 0;
}

// The window geometry and output shape of x * w, checked (w_zp_size: how many weight zero points).
struct ConvGeometry {
  WindowGeometry g;
  Shape out;
};

Result<ConvGeometry> conv_geometry(const Tensor& x, const Tensor& w, size_t w_zp_size, const ConvAttrs& attrs) {
  if (x.rank() < 3) return invalid_argument("x must have rank >= 3, has shape " + x.shape().to_string());
  if (w.rank() != x.rank())
    return invalid_argument("w of shape " + w.shape().to_string() + " must have the rank of x " + x.shape().to_string());
  const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0], Cg = w.shape()[1];
  if (M % attrs.group != 0 || Cg * attrs.group != C)
    return invalid_argument("channels do not match: x " + x.shape().to_string() + ", w " + w.shape().to_string() +
                            ", group " + std::to_string(attrs.group));
  if (w_zp_size != 1 && static_cast<int64_t>(w_zp_size) != M)
    return invalid_argument("w_zero_point must hold one value or one per output channel (" + std::to_string(M) + ")");
  WindowGeometry g;
  g.kernel.assign(w.shape().dims().begin() + 2, w.shape().dims().end());
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != g.kernel)
    return invalid_argument("attribute 'kernel_shape' " + dims_to_string(attrs.kernel_shape) + " differs from w's spatial dims " +
                            dims_to_string(g.kernel));
  SDX_RETURN_IF_ERROR(g.set_params(attrs.strides, attrs.dilations, attrs.pads), "conv attributes");
  const std::vector<int64_t> in_sp(x.shape().dims().begin() + 2, x.shape().dims().end());
  SDX_RETURN_IF_ERROR(g.resolve(in_sp, attrs.auto_pad, false), "conv geometry");

  std::vector<int64_t> out_dims = {N, M};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  ConvGeometry cg;
  SDX_ASSIGN_OR_RETURN(cg.out, Shape::make(out_dims), "conv output");
  cg.g = std::move(g);
  return cg;
}

// out[n, m, o...] = sum over the group's channels and the window of (x - x_zp) * (w - w_zp[m]).
Result<ConvResult> conv_int32(const Tensor& x, const Tensor& w, int32_t x_zp, const std::vector<int32_t>& w_zp,
                              const ConvAttrs& attrs) {
  SDX_ASSIGN_OR_RETURN(ConvGeometry cg, conv_geometry(x, w, w_zp.size(), attrs), "");
  const WindowGeometry& g = cg.g;
  const int nsp = x.rank() - 2;
  const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0], Cg = w.shape()[1];
  const std::vector<int64_t> in_sp(x.shape().dims().begin() + 2, x.shape().dims().end());
  ConvResult r;
  r.shape = cg.out;
  r.values.assign(static_cast<size_t>(r.shape.numel()), 0);
  if (packed_conv_applies(x, g, attrs.group, r.shape)) {
    PackedConv(w, w_zp, g, x.shape()).run(x, x_zp, r.values.data());
    return r;
  }

  std::vector<int32_t> xv = load_all_as<int32_t>(x), wv = load_all_as<int32_t>(w);
  for (int32_t& v : xv) v -= x_zp;
  const int64_t wsz = w.numel() / std::max<int64_t>(M, 1);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < wsz; ++i) wv[static_cast<size_t>(m * wsz + i)] -= w_zp[w_zp.size() == 1 ? 0 : static_cast<size_t>(m)];

  const int64_t in_size = Shape(in_sp).numel(), out_size = Shape(g.out).numel(), k_size = Shape(g.kernel).numel();
  // Kernel offsets per spatial dim, enumerated once.
  std::vector<std::vector<int64_t>> koffs(static_cast<size_t>(k_size), std::vector<int64_t>(static_cast<size_t>(nsp)));
  for (int64_t k = 0; k < k_size; ++k) {
    int64_t rem = k;
    for (int d = nsp - 1; d >= 0; --d) {
      koffs[static_cast<size_t>(k)][static_cast<size_t>(d)] = (rem % g.kernel[d]) * g.dilations[d];
      rem /= g.kernel[d];
    }
  }
  const int64_t Mg = M / attrs.group;
  std::vector<int64_t> opos(static_cast<size_t>(nsp)), base(static_cast<size_t>(nsp));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg;
      int32_t* out = r.values.data() + (n * M + m) * out_size;
      std::fill(opos.begin(), opos.end(), 0);
      for (int64_t o = 0; o < out_size; ++o) {
        for (int d = 0; d < nsp; ++d) base[d] = opos[d] * g.strides[d] - g.pads[d];
        int32_t acc = 0;
        for (int64_t c = 0; c < Cg; ++c) {
          const int32_t* xc = xv.data() + (n * C + grp * Cg + c) * in_size;
          const int32_t* wc = wv.data() + (m * Cg + c) * k_size;
          for (int64_t k = 0; k < k_size; ++k) {
            int64_t idx = 0;
            bool inside = true;
            for (int d = 0; d < nsp && inside; ++d) {
              const int64_t p = base[d] + koffs[static_cast<size_t>(k)][static_cast<size_t>(d)];
              inside = p >= 0 && p < in_sp[d];
              idx = idx * in_sp[d] + p;
            }
            if (inside) acc += xc[idx] * wc[k];
          }
        }
        out[o] = acc;
        for (int d = nsp - 1; d >= 0; --d) {
          if (++opos[d] < g.out[d]) break;
          opos[d] = 0;
        }
      }
    }
  return r;
}

Result<int32_t> scalar_zero_point(const backend::KernelContext& ctx, int i, const Tensor& data, const char* name) {
  if (!ctx.has_input(i)) return 0;
  const Tensor& z = ctx.input(i);
  if (z.dtype() != data.dtype())
    return invalid_argument(std::string(name) + " type " + dtype_name(z.dtype()) + " differs from " + dtype_name(data.dtype()));
  if (z.numel() != 1) return invalid_argument(std::string(name) + " must hold one value, has shape " + z.shape().to_string());
  return load_all_as<int32_t>(z)[0];
}

Result<std::vector<int32_t>> weight_zero_point(const backend::KernelContext& ctx, int i, const Tensor& w) {
  if (!ctx.has_input(i)) return std::vector<int32_t>{0};
  const Tensor& z = ctx.input(i);
  if (z.dtype() != w.dtype())
    return invalid_argument(std::string("w_zero_point type ") + dtype_name(z.dtype()) + " differs from " + dtype_name(w.dtype()));
  if (z.rank() > 1) return invalid_argument("w_zero_point must be a scalar or 1-D, has shape " + z.shape().to_string());
  return load_all_as<int32_t>(z);
}

class ConvIntegerKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override { return attrs_.parse(node); }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (!is_8bit_int(x.dtype()) || !is_8bit_int(w.dtype()))
      return invalid_argument(std::string("ConvInteger needs int8/uint8 inputs, got ") + dtype_name(x.dtype()) + " and " +
                              dtype_name(w.dtype()));
    SDX_ASSIGN_OR_RETURN(int32_t xzp, scalar_zero_point(ctx, 2, x, "x_zero_point"), "ConvInteger");
    SDX_ASSIGN_OR_RETURN(std::vector<int32_t> wzp, weight_zero_point(ctx, 3, w), "ConvInteger");
    SDX_ASSIGN_OR_RETURN(ConvResult r, conv_int32(x, w, xzp, wzp, attrs_), "ConvInteger");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt32, r.shape), "ConvInteger output");
    std::copy(r.values.begin(), r.values.end(), y.data<int32_t>());
    return Status::ok();
  }

  // Constant weights (and w_zero_point) on PackedConv: packed once; each call reads x_zero_point (it may be
  // computed: DynamicQuantizeLinear's) and writes the frozen output. Declines what run() would refuse or
  // serve on the direct loop.
  Result<std::unique_ptr<backend::BoundKernel>> prepare(const backend::PrepareContext& p) const override {
    using Declined = std::unique_ptr<backend::BoundKernel>;
    if (!p.has_input(0) || !p.has_input(1) || !p.input_is_constant(1) || !p.wants_output(0)) return Declined();
    if (p.has_input(3) && !p.input_is_constant(3)) return Declined();
    const Tensor& x = p.input(0);
    const Tensor& w = p.input(1);
    if (!is_8bit_int(x.dtype()) || !is_8bit_int(w.dtype())) return Declined();
    if (p.has_input(2) && (p.input(2).dtype() != x.dtype() || p.input(2).numel() != 1)) return Declined();
    std::vector<int32_t> wzp = {0};
    if (p.has_input(3)) {
      if (p.input(3).dtype() != w.dtype() || p.input(3).rank() > 1) return Declined();
      wzp = load_all_as<int32_t>(p.input(3));
    }
    Result<ConvGeometry> cg = conv_geometry(x, w, wzp.size(), attrs_);
    if (!cg.is_ok() || !packed_conv_applies(x, cg->g, attrs_.group, cg->out)) return Declined();
    if (p.output(0).dtype() != DType::kInt32 || p.output(0).shape() != cg->out) return Declined();
    struct Bound {
      backend::FrozenStepContext ctx;
      std::unique_ptr<PackedConv> conv;
      Shape out;
      explicit Bound(const backend::PrepareContext& p) : ctx(p) {}
    };
    auto b = std::make_shared<Bound>(p);
    b->conv = std::make_unique<PackedConv>(w, wzp, cg->g, x.shape());
    b->out = cg->out;
    return backend::bind_call([b]() -> Status {
      const backend::FrozenStepContext& c = b->ctx;
      int32_t xzp = 0;
      if (c.has_input(2)) {
        const Tensor& z = c.input(2);
        xzp = z.dtype() == DType::kUint8 ? int32_t{z.data<uint8_t>()[0]} : int32_t{z.data<int8_t>()[0]};
      }
      SDX_ASSIGN_OR_RETURN(void* y, c.output_data(0, DType::kInt32, b->out), "ConvInteger output");
      b->conv->run(c.input(0), xzp, static_cast<int32_t*>(y));
      return Status::ok();
    });
  }

 private:
  ConvAttrs attrs_;
};

class QLinearConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override { return attrs_.parse(node); }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(3);
    if (!is_8bit_int(x.dtype()) || !is_8bit_int(w.dtype()))
      return invalid_argument(std::string("QLinearConv needs int8/uint8 inputs, got ") + dtype_name(x.dtype()) + " and " +
                              dtype_name(w.dtype()));
    for (int i : {1, 4, 6})
      if (ctx.input(i).dtype() != DType::kFloat32)
        return invalid_argument("QLinearConv scales must be float; input " + std::to_string(i) + " is " +
                                dtype_name(ctx.input(i).dtype()));
    SDX_ASSIGN_OR_RETURN(int32_t xzp, scalar_zero_point(ctx, 2, x, "x_zero_point"), "QLinearConv");
    SDX_ASSIGN_OR_RETURN(std::vector<int32_t> wzp, weight_zero_point(ctx, 5, w), "QLinearConv");
    const DType out_t = ctx.has_input(7) ? ctx.input(7).dtype() : x.dtype();
    if (!is_8bit_int(out_t)) return invalid_argument(std::string("y_zero_point must be int8 or uint8, got ") + dtype_name(out_t));
    const double yzp = ctx.has_input(7) ? load_all_as<double>(ctx.input(7)).at(0) : 0.0;
    SDX_ASSIGN_OR_RETURN(ConvResult r, conv_int32(x, w, xzp, wzp, attrs_), "QLinearConv");
    const int64_t M = w.shape()[0];
    const std::vector<float> xs = load_all_as<float>(ctx.input(1)), ws = load_all_as<float>(ctx.input(4)),
                             ys = load_all_as<float>(ctx.input(6));
    if (xs.size() != 1 || ys.size() != 1) return invalid_argument("x_scale and y_scale must hold one value");
    if (!(std::isfinite(ys[0]) && ys[0] != 0)) return invalid_argument("y_scale must be finite and non-zero, got " + std::to_string(ys[0]));
    if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != M)
      return invalid_argument("w_scale must hold one value or one per output channel (" + std::to_string(M) + ")");
    std::vector<int32_t> bias(static_cast<size_t>(M), 0);
    if (ctx.has_input(8)) {
      const Tensor& b = ctx.input(8);
      if (b.dtype() != DType::kInt32 || b.numel() != M)
        return invalid_argument("B must be int32 with one value per output channel, got " + b.type_string());
      bias = load_all_as<int32_t>(b);
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, out_t, r.shape), "QLinearConv output");
    const double lo = out_t == DType::kInt8 ? -128 : 0, hi = out_t == DType::kInt8 ? 127 : 255;
    const int64_t spatial = r.shape.numel() / std::max<int64_t>(1, r.shape[0] * M);
    for (size_t i = 0; i < r.values.size(); ++i) {
      const auto m = static_cast<size_t>((static_cast<int64_t>(i) / std::max<int64_t>(spatial, 1)) % M);
      // numpy: float32 multiplier, int32 * float32 promoted to float64.
      const float mult = xs[0] * ws[ws.size() == 1 ? 0 : m] / ys[0];
      const double v = std::nearbyint(std::clamp(static_cast<double>(r.values[i] + bias[m]) * mult + yzp, lo, hi));
      if (out_t == DType::kInt8) y.data<int8_t>()[i] = static_cast<int8_t>(v);
      else y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
    return Status::ok();
  }

 private:
  ConvAttrs attrs_;
};

const backend::KernelRegistrar kConvInteger({"ConvInteger", "", 10, backend::kAnyOpset,
                                             backend::kernel_factory<ConvIntegerKernel>()});
const backend::KernelRegistrar kQLinearConv({"QLinearConv", "", 10, backend::kAnyOpset,
                                             backend::kernel_factory<QLinearConvKernel>()});

}  // namespace
}  // namespace sdx::cpu
