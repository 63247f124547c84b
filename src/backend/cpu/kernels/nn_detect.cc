// Detection ops: RoiAlign and NonMaxSuppression.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/conv_util.h"
#include "core/type_dispatch.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// One bilinear sample: four plane offsets and their weights (all zero when outside).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

class RoiAlignKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const std::string mode = node.attr_string("mode", "avg");
    if (mode != "avg" && mode != "max") return invalid_argument("mode must be 'avg' or 'max', got '" + mode + "'");
    max_mode_ = mode == "max";
    // Opset 10 behaved like output_half_pixel; opset 16 added the attribute with default half_pixel.
    const std::string ct = node.attr_string("coordinate_transformation_mode",
                                            node.opset() >= 16 ? "half_pixel" : "output_half_pixel");
    if (ct != "half_pixel" && ct != "output_half_pixel") {
      return invalid_argument("unsupported coordinate_transformation_mode '" + ct + "'");
    }
    half_pixel_ = ct == "half_pixel";
    out_h_ = node.attr_int("output_height", 1);
    out_w_ = node.attr_int("output_width", 1);
    sampling_ratio_ = node.attr_int("sampling_ratio", 0);
    spatial_scale_ = node.attr_float("spatial_scale", 1.0f);
    if (out_h_ <= 0 || out_w_ <= 0) return invalid_argument("output_height and output_width must be positive");
    if (sampling_ratio_ < 0) return invalid_argument("sampling_ratio must be >= 0");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    const Tensor& bi = ctx.input(2);
    if (x.rank() != 4) return invalid_argument("X must be [N, C, H, W], got " + x.shape().to_string());
    if (rois.rank() != 2 || rois.shape()[1] != 4) return invalid_argument("rois must be [num_rois, 4]");
    if (bi.rank() != 1 || bi.shape()[0] != rois.shape()[0]) return invalid_argument("batch_indices must be [num_rois]");
    if (bi.dtype() != DType::kInt64 && bi.dtype() != DType::kInt32) return invalid_argument("batch_indices must be int");
    const int64_t R = rois.shape()[0], N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape{R, C, out_h_, out_w_}), "");
    return dispatch<float, double, Float16, BFloat16>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if (rois.dtype() != x.dtype()) return invalid_argument("rois must have the element type of X");
          const T* xp = x.data<T>();
          const T* rp = rois.data<T>();
          T* yp = y.data<T>();
          const double offset = half_pixel_ ? 0.5 : 0.0;
          std::vector<Sample> samples;
          for (int64_t r = 0; r < R; ++r) {
            const int64_t b = bi.dtype() == DType::kInt64 ? bi.data<int64_t>()[r] : bi.data<int32_t>()[r];
            if (b < 0 || b >= N) return out_of_range("batch index " + std::to_string(b) + " is out of range");
            const double sw = load_as<double>(rp[r * 4 + 0]) * spatial_scale_ - offset;
            const double sh = load_as<double>(rp[r * 4 + 1]) * spatial_scale_ - offset;
            const double ew = load_as<double>(rp[r * 4 + 2]) * spatial_scale_ - offset;
            const double eh = load_as<double>(rp[r * 4 + 3]) * spatial_scale_ - offset;
            if (!std::isfinite(sw) || !std::isfinite(sh) || !std::isfinite(ew) || !std::isfinite(eh))
              return invalid_argument("roi " + std::to_string(r) + " has a non-finite coordinate");
            double rw = ew - sw, rh = eh - sh;
            if (!half_pixel_) {
              rw = std::max(rw, 1.0);
              rh = std::max(rh, 1.0);
            }
            const double bh = rh / static_cast<double>(out_h_), bw = rw / static_cast<double>(out_w_);
            // Adaptive sampling grows with the ROI: bound it (in double, before any integer cast) so a
            // hostile ROI cannot demand billions of samples; 4096 per axis and bin is far beyond real images.
            const double gh_d = sampling_ratio_ > 0 ? static_cast<double>(sampling_ratio_) : std::ceil(rh / out_h_);
            const double gw_d = sampling_ratio_ > 0 ? static_cast<double>(sampling_ratio_) : std::ceil(rw / out_w_);
            if (sampling_ratio_ <= 0 && (gh_d > 4096.0 || gw_d > 4096.0))
              return invalid_argument("roi " + std::to_string(r) + " is too large for adaptive sampling");
            const int64_t gh = static_cast<int64_t>(gh_d), gw = static_cast<int64_t>(gw_d);
            const int64_t count = std::max<int64_t>(gh * gw, 1);
            // Bilinear samples of every bin, shared by all channels.
            samples.assign(static_cast<size_t>(out_h_ * out_w_ * gh * gw), Sample{});
            size_t si = 0;
            for (int64_t ph = 0; ph < out_h_; ++ph) {
              for (int64_t pw = 0; pw < out_w_; ++pw) {
                for (int64_t iy = 0; iy < gh; ++iy) {
                  const double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
                  for (int64_t ix = 0; ix < gw; ++ix, ++si) {
                    double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
                    double yv = yy;
                    if (yv < -1.0 || yv > H || xx < -1.0 || xx > W) continue;
                    yv = std::max(yv, 0.0);
                    xx = std::max(xx, 0.0);
                    int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx), yh, xh;
                    if (yl >= H - 1) {
                      yh = yl = H - 1;
                      yv = static_cast<double>(yl);
                    } else {
                      yh = yl + 1;
                    }
                    if (xl >= W - 1) {
                      xh = xl = W - 1;
                      xx = static_cast<double>(xl);
                    } else {
                      xh = xl + 1;
                    }
                    const double ly = yv - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                    Sample& s = samples[si];
                    s.pos[0] = yl * W + xl;
                    s.pos[1] = yl * W + xh;
                    s.pos[2] = yh * W + xl;
                    s.pos[3] = yh * W + xh;
                    s.w[0] = hy * hx;
                    s.w[1] = hy * lx;
                    s.w[2] = ly * hx;
                    s.w[3] = ly * lx;
                  }
                }
              }
            }
            for (int64_t c = 0; c < C; ++c) {
              const T* plane = xp + (b * C + c) * H * W;
              T* out = yp + ((r * C + c) * out_h_) * out_w_;
              const Sample* s = samples.data();
              for (int64_t p = 0; p < out_h_ * out_w_; ++p) {
                double acc = 0;
                bool first = true;
                for (int64_t k = 0; k < gh * gw; ++k, ++s) {
                  if (max_mode_) {
                    double v = s->w[0] * load_as<double>(plane[s->pos[0]]);
                    for (int q = 1; q < 4; ++q) v = std::max(v, s->w[q] * load_as<double>(plane[s->pos[q]]));
                    acc = first ? v : std::max(acc, v);
                    first = false;
                  } else {
                    for (int q = 0; q < 4; ++q) acc += s->w[q] * load_as<double>(plane[s->pos[q]]);
                  }
                }
                if (!max_mode_) acc /= static_cast<double>(count);
                if constexpr (std::is_same_v<T, double>) out[p] = acc;
                else out[p] = from_f32<T>(static_cast<float>(acc));
              }
            }
          }
          return Status::ok();
        },
        "RoiAlign");
  }

 private:
  bool max_mode_ = false, half_pixel_ = true;
  int64_t out_h_ = 1, out_w_ = 1, sampling_ratio_ = 0;
  double spatial_scale_ = 1.0;
};

class NonMaxSuppressionKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    center_point_box_ = node.attr_int("center_point_box", 0);
    if (center_point_box_ != 0 && center_point_box_ != 1) return invalid_argument("center_point_box must be 0 or 1");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    if (boxes.rank() != 3 || boxes.shape()[2] != 4) return invalid_argument("boxes must be [batch, boxes, 4]");
    if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1]) {
      return invalid_argument("scores " + scores.shape().to_string() + " do not match boxes " +
                              boxes.shape().to_string());
    }
    int64_t max_out = 0;
    double iou_threshold = 0, score_threshold = 0;
    bool has_score_threshold = false;
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      if (ctx.input(2).dtype() != DType::kInt64) return invalid_argument("max_output_boxes_per_class must be int64");
      max_out = ctx.input(2).data<int64_t>()[0];
    }
    if (ctx.has_input(3) && ctx.input(3).numel() > 0) {
      SDX_ASSIGN_OR_RETURN(iou_threshold, scalar(ctx.input(3)), "iou_threshold");
      if (iou_threshold < 0 || iou_threshold > 1) return invalid_argument("iou_threshold must be in [0, 1]");
    }
    if (ctx.has_input(4) && ctx.input(4).numel() > 0) {
      SDX_ASSIGN_OR_RETURN(score_threshold, scalar(ctx.input(4)), "score_threshold");
      has_score_threshold = true;
    }
    const int64_t B = boxes.shape()[0], NB = boxes.shape()[1], NC = scores.shape()[1];
    SDX_ASSIGN_OR_RETURN(std::vector<double> bx, read_doubles(boxes, "boxes", RealTypes::kFloat), "boxes");
    SDX_ASSIGN_OR_RETURN(std::vector<double> sc, read_doubles(scores, "scores", RealTypes::kFloat), "scores");
    // Boxes as (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
    std::vector<double> corners(bx.size());
    for (int64_t i = 0; i < B * NB; ++i) {
      const double* b = bx.data() + i * 4;
      double* c = corners.data() + i * 4;
      if (center_point_box_) {
        c[0] = b[1] - b[3] / 2;
        c[1] = b[0] - b[2] / 2;
        c[2] = b[1] + b[3] / 2;
        c[3] = b[0] + b[2] / 2;
      } else {
        c[0] = std::min(b[0], b[2]);
        c[1] = std::min(b[1], b[3]);
        c[2] = std::max(b[0], b[2]);
        c[3] = std::max(b[1], b[3]);
      }
    }
    auto suppress = [&](const double* a, const double* b) {
      const double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
      if (area_a <= 0 || area_b <= 0) return false;
      const double ih = std::min(a[2], b[2]) - std::max(a[0], b[0]);
      const double iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
      if (ih <= 0 || iw <= 0) return false;
      const double inter = ih * iw;
      return inter / (area_a + area_b - inter) > iou_threshold;
    };
    std::vector<int64_t> selected;  // triples
    std::vector<int64_t> order, kept;
    for (int64_t b = 0; b < B && max_out > 0; ++b) {
      for (int64_t c = 0; c < NC; ++c) {
        const double* s = sc.data() + (b * NC + c) * NB;
        order.clear();
        for (int64_t i = 0; i < NB; ++i)
          if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t k : kept) {
            if (suppress(corners.data() + (b * NB + k) * 4, corners.data() + (b * NB + i) * 4)) {
              keep = false;
              break;
            }
          }
          if (!keep) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    const int64_t count = static_cast<int64_t>(selected.size() / 3);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt64, Shape{count, 3}), "");
    std::copy(selected.begin(), selected.end(), y.data<int64_t>());
    return Status::ok();
  }

 private:
  static Result<double> scalar(const Tensor& t) {
    SDX_ASSIGN_OR_RETURN(std::vector<double> v, read_doubles(t, "NonMaxSuppression", RealTypes::kFloat), "");
    return v[0];
  }

  int64_t center_point_box_ = 0;
};

const backend::KernelRegistrar kRoiAlign({"RoiAlign", "", 10, backend::kAnyOpset,
                                          backend::kernel_factory<RoiAlignKernel>()});
const backend::KernelRegistrar kNonMaxSuppression({"NonMaxSuppression", "", 10, backend::kAnyOpset,
                                                   backend::kernel_factory<NonMaxSuppressionKernel>()});

}  // namespace
}  // namespace sdx::cpu
