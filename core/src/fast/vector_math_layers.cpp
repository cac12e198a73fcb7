// The fast path's float32 row kernels of the layers (vector_math.h): additive
// attention's score rows, LayerNorm's, the GRU cell's, Adam's and the
// gradient norm's, built once per instruction set (row_kernels.h). Each is
// the twin of a plain loop, its reference, in its op's own file
// (ops_attention.cpp, ops_norm.cpp, ops_rnn.cpp) or in vector_math.h (Adam,
// the squares), which reference mode and float64 run.
#include "vector_math.h"

#include "vector_lanes.h"

// Compiled once per instruction set (row_kernels.h), in its namespace.
namespace ag::detail::AG_ROW_SET {

void additive_scores_row_f32(const float* q, const float* k, const float* w, float* s,
                             float* __restrict t, int64_t tk, int64_t h) {
  for (int64_t j = 0; j < tk; ++j) {
    const float* kj = k + j * h;
    float lane[kLanes] = {};
    int64_t x = 0;
    if (t) {  // the same sums, each tanh also written to t[j, x]
      float* tj = t + j * h;
      for (; x + kLanes <= h; x += kLanes)
        for (int64_t l = 0; l < kLanes; ++l)
          lane[l] += w[x + l] * (tj[x + l] = tanh_one(q[x + l] + kj[x + l]));
      float total = sum_lanes(lane);
      for (; x < h; ++x) total += w[x] * (tj[x] = tanh_one(q[x] + kj[x]));
      s[j] = total;
      continue;
    }
    for (; x + kLanes <= h; x += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lane[l] += w[x + l] * tanh_one(q[x + l] + kj[x + l]);
    float total = sum_lanes(lane);
    for (; x < h; ++x) total += w[x] * tanh_one(q[x] + kj[x]);
    s[j] = total;
  }
}

void additive_scores_backward_row_f32(const float* q, const float* k, const float* w,
                                      const float* t_kept, const float* g, float* __restrict dq,
                                      float* __restrict dk, float* __restrict dw, int64_t tk,
                                      int64_t h) {
  for (int64_t x = 0; x < h; ++x) dq[x] = 0;
  for (int64_t j = 0; j < tk; ++j) {
    const float* kj = k + j * h;
    float* dkj = dk + j * h;
    const float gj = g[j];
    if (t_kept) {  // t read back instead of recomputed
      const float* tj = t_kept + j * h;
      for (int64_t x = 0; x < h; ++x) {
        const float t = tj[x];
        const float u = gj * (1.0f - t * t);
        dq[x] += u;
        dkj[x] += w[x] * u;
        dw[x] += gj * t;
      }
      continue;
    }
    for (int64_t x = 0; x < h; ++x) {
      const float t = tanh_one(q[x] + kj[x]);
      const float u = gj * (1.0f - t * t);  // dL/d(q + k) before the factor w
      dq[x] += u;
      dkj[x] += w[x] * u;
      dw[x] += gj * t;
    }
  }
  for (int64_t x = 0; x < h; ++x) dq[x] *= w[x];
}

void layer_norm_rows_f32(const float* x, const float* w, const float* b, float* y, int64_t rows,
                         int64_t n, double eps, double* mean, double* rstd) {
  // A block of rows at a time, one pass per step, as the masked softmax: a
  // row's steps wait on each other (its mean, then its variance, then a
  // square root and a division, tens of cycles), the block's rows do not.
  constexpr int64_t kBlockRows = 64;
  double ss[kBlockRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0);
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      mean[r0 + i] = sum_of(xr, nullptr, n) / static_cast<double>(n);
      const float m = static_cast<float>(mean[r0 + i]);
      // two passes: sum((x - mean)^2) does not cancel as sum(x^2) - N mean^2
      // would (the lanes in one vector register: a float[16] that a loop fills
      // one entry at a time and add_lanes then loads as a vector stalls on the loads)
      Lanes lane{}, v;
      int64_t k = 0;
      for (; k + kLanes <= n; k += kLanes) {
        load_lanes(v, xr + k);
        v -= m;
        lane += v * v;
      }
      ss[i] = add_lanes(lane);
      for (; k < n; ++k) ss[i] += static_cast<double>((xr[k] - m) * (xr[k] - m));
    }
    for (int64_t i = 0; i < count; ++i)
      rstd[r0 + i] = 1.0 / std::sqrt(ss[i] / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      float* yr = y + (r0 + i) * n;
      const float m = static_cast<float>(mean[r0 + i]), s = static_cast<float>(rstd[r0 + i]);
      if (w && b)
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s * w[j] + b[j];
      else
        for (int64_t j = 0; j < n; ++j)
          yr[j] = (xr[j] - m) * s * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
  }
}

void layer_norm_backward_rows_f32(const float* x, const float* w, const float* g, float* dx,
                                  int64_t rows, int64_t n, const double* mean, const double* rstd) {
  const float N = static_cast<float>(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n, *gr = g + r * n;
    float* dxr = dx + r * n;
    const float m = static_cast<float>(mean[r]), s = static_cast<float>(rstd[r]);
    // ĝ = g w (written to dx first), then sum ĝ and sum ĝ x̂ in 16 lanes each
    if (w)
      for (int64_t j = 0; j < n; ++j) dxr[j] = gr[j] * w[j];
    else
      for (int64_t j = 0; j < n; ++j) dxr[j] = gr[j];
    Lanes lane_g{}, lane_gx{}, gv, xv;
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes) {
      load_lanes(gv, dxr + k);
      load_lanes(xv, xr + k);
      lane_g += gv;
      lane_gx += gv * ((xv - m) * s);
    }
    float sum_g = add_lanes(lane_g), sum_gx = add_lanes(lane_gx);
    for (; k < n; ++k) {
      sum_g += dxr[k];
      sum_gx += dxr[k] * ((xr[k] - m) * s);
    }
    const float scale = s / N;
    for (int64_t j = 0; j < n; ++j)
      dxr[j] = scale * (N * dxr[j] - sum_g - (xr[j] - m) * s * sum_gx);
  }
}

void layer_norm_affine_grads_f32(const float* x, const float* g, int64_t rows, int64_t n,
                                 const double* mean, const double* rstd, double* __restrict sw,
                                 double* __restrict sb) {
  layer_norm_affine_grads(x, g, rows, n, mean, rstd, sw, sb);
}

void gru_cell_rows_f32(const float* gi, const float* gh, const float* h, float* __restrict h_next,
                       float* __restrict gates, int64_t rows, int64_t H) {
  for (int64_t b = 0; b < rows; ++b) {
    const float *gib = gi + b * 3 * H, *ghb = gh + b * 3 * H, *hb = h + b * H;
    float *out = h_next + b * H, *gate = gates + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      // sigmoid(a) = 1 / (1 + e^-a); e^+big = inf gives 0
      const float r = 1 / (1 + exp_one(-(gib[j] + ghb[j])));
      const float z = 1 / (1 + exp_one(-(gib[H + j] + ghb[H + j])));
      const float n = tanh_one(gib[2 * H + j] + r * ghb[2 * H + j]);
      out[j] = (1 - z) * n + z * hb[j];
      gate[j] = r;
      gate[H + j] = z;
      gate[2 * H + j] = n;
    }
  }
}

void gru_cell_backward_rows_f32(const float* g, const float* gh_n, int64_t ld_n, const float* h,
                                const float* gates, float* __restrict dgi, float* __restrict dgh,
                                float* __restrict dh, int64_t rows, int64_t H) {
  gru_cell_backward_loop(g, gh_n, ld_n, h, gates, dgi, dgh, dh, rows, H);
}

// Adam's loop with contraction off: in the AVX2 and AVX-512 builds GCC would
// otherwise fuse m * beta1 + (1 - beta1) * g into one rounding, and a step's
// result would depend on the CPU (docs/performance.md, "Adam without
// contraction", has what that did to a model).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
template <typename T>
void adam_loop(T* __restrict w, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
               const AdamCoefficients<T>& c) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t j = 0; j < n; ++j) {
    m[j] = m[j] * c.beta1 + c.one_minus_beta1 * g[j];
    v[j] = v[j] * c.beta2 + c.one_minus_beta2 * g[j] * g[j];
    const T denom = std::sqrt(v[j]) / c.bias_correction2_sqrt + c.eps;
    w[j] -= c.step_size * (m[j] / denom);
  }
}

void adam_f32(float* w, const float* g, float* m, float* v, int64_t n,
              const AdamCoefficients<float>& c) {
  adam_loop(w, g, m, v, n, c);
}

void adam_f64(double* w, const double* g, double* m, double* v, int64_t n,
              const AdamCoefficients<double>& c) {
  adam_loop(w, g, m, v, n, c);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

double sum_squares_f32(const float* x, int64_t n) {
  return sum_squares_loop(x, n);
}

}  // namespace ag::detail::AG_ROW_SET
