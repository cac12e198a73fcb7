// The fast path's float32 row kernels: exp and tanh for the hot elementwise
// loops (libm's expf/tanhf are scalar calls; these are branch-free
// polynomials the compiler turns into SIMD code), softmax rows, sums, and the
// layers' rows. Each is built once per instruction set and called in the set
// the kernels run (row_kernels.h; ATTOGRAD_ISA chooses one).
// float64 keeps std::exp/std::tanh: it is the precision path for gradcheck.
#pragma once

#include <cstdint>

namespace ag::detail {

// Dropout's random bits for element i: the top 53 bits of SplitMix64's output
// function at seed + i * golden, so a mask depends only on the seed (one draw
// of the global generator) and not on the order in which elements are visited.
inline uint64_t dropout_bits(uint64_t seed, uint64_t i) {
  uint64_t z = seed + i * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) >> 11;
}

// Inverted dropout of n elements in one pass: m[i] = 0 when
// dropout_bits(seed, i) < drop_below, else scale; y[i] = x[i] * m[i]. The
// float32 kernel of ag::dropout; float64 runs this loop as it is.
template <typename T>
inline void dropout_loop(const T* x, T* y, T* m, int64_t n, uint64_t seed, uint64_t drop_below,
                         T scale) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = dropout_bits(seed, static_cast<uint64_t>(i)) < drop_below ? T(0) : scale;
    y[i] = x[i] * m[i];
  }
}
void dropout_f32(const float* x, float* y, float* m, int64_t n, uint64_t seed, uint64_t drop_below,
                 float scale);

// y[i] = e^x[i]; relative error below 3e-7. x < -87.3 (including -inf and
// the -FLT_MAX of masked scores) gives exactly 0, x > 88 gives +inf, NaN stays NaN.
void exp_f32(const float* x, float* y, int64_t n);
// y[i] = tanh(x[i]); absolute error below 3e-7.
void tanh_f32(const float* x, float* y, int64_t n);

// One softmax row of n > 0 entries: y = e^(x - max x) / sum e^(x - max x).
// The sum uses 16 partial sums (SIMD lanes), added in double at the end.
void softmax_row_f32(const float* x, float* y, int64_t n);
// Its backward for one row: dx = y * (g - sum_k g_k y_k).
void softmax_backward_row_f32(const float* y, const float* g, float* dx, int64_t n);
// The masked softmax's rows (ops_softmax.cpp's masked_softmax_last) for n
// <= kMaxPaddedRow keys: for each of `rows` rows of x and y [rows, n], with
// the row's keep flags at keep + keep_offset[r], keep_stride apart,
//   y = softmax(where(keep, x, fill)), then y = 0 where !keep if zero_masked
// (softmax_row_f32's numbers within 1e-6 relative; the sum is in float lanes).
// y must not overlap x.
//
// Two kernels run these rows: the portable loops, and, in the avx2 and
// avx512 sets, whole vectors with masked loads and stores, which read and
// write a row without scalar ends (d2l's rows of 11 and 30 keys are mostly
// ends). Best takes the whole vectors where the set has them and the flags
// are one per key or one per row; tests run both in every set and compare
// them with a double reference.
enum class RowKernel { Best, Portable };
constexpr int64_t kMaxPaddedRow = 1024;  // 4 KiB of stack a row
void masked_softmax_rows_f32(const float* x, const bool* keep, const int64_t* keep_offset,
                             int64_t keep_stride, float* y, int64_t rows, int64_t n, float fill,
                             bool zero_masked, RowKernel kernel = RowKernel::Best);
// Its backward, from the saved y and g = dL/dy (dx must not overlap them):
//   dx = keep * y * (g~ - sum_j g~_j y_j),  g~ = zero_masked ? keep * g : g.
void masked_softmax_backward_rows_f32(const float* y, const float* g, const bool* keep,
                                      const int64_t* keep_offset, int64_t keep_stride, float* dx,
                                      int64_t rows, int64_t n, bool zero_masked,
                                      RowKernel kernel = RowKernel::Best);

// sum_k x[k] accumulated in double (double_lane_sum below; ag::sum of a
// contiguous float32 tensor, reduce.cpp).
double sum_f32(const float* x, int64_t n);
// acc[j] += sum_r x[r, j] for x [rows, cols], in double, in row order
// (reduce.cpp's sums over the leading dims: a bias's gradient).
void column_sums_f32(const float* x, int64_t rows, int64_t cols, double* acc);
// sum_k a[k] b[k], in float lanes as the softmax's sums (added in double at the end).
double dot_f32(const float* a, const float* b, int64_t n);
// dz = p * (dp - d) for one attention row: the softmax backward from the
// row's d = sum_k p_k dp_k, computed elsewhere. dz may be dp.
void softmax_backward_given_f32(const float* p, const float* dp, float d, float* dz, int64_t n);

// The two row kernels of a streamed attention block (fast/flash_attention.cpp):
// max_k x[k] (n > 0; -inf entries allowed), and, in place,
// x = e^(scale x - shift) returning sum_k x_k (16 partial sums, added in
// double), for scale x - shift <= 0 (shift = the row's max or log-sum-exp of
// scale x): -inf gives exactly 0, NaN stays NaN; relative error below 3e-7.
float max_f32(const float* x, int64_t n);
double exp_affine_sum_f32(float* x, int64_t n, float scale, float shift);

// One query row of additive_scores (ops_attention.cpp), vectorised over h:
// q [h], k [tk, h], w [h] -> s [tk] with s[j] = sum_x w[x] tanh(q[x] + k[j, x]).
// The sum over x uses 16 partial sums (SIMD lanes), added pairwise at the end.
// t, when not null: also t[j, x] = tanh(q[x] + k[j, x]) ([tk, h]) for the backward.
void additive_scores_row_f32(const float* q, const float* k, const float* w, float* s, float* t,
                             int64_t tk, int64_t h);
// Its backward for that row, from g = dL/ds [tk], with t = tanh(q + k[j]) read
// from t_kept [tk, h] (the forward's t) or, when t_kept is null, recomputed:
//   dq[x]     = w[x] sum_j g[j] (1 - t^2)   (written)
//   dk[j, x] += w[x] g[j] (1 - t^2)         (accumulated, dk [tk, h])
//   dw[x]    += sum_j g[j] t                (accumulated)
// dq, dk and dw must not overlap each other or the inputs.
void additive_scores_backward_row_f32(const float* q, const float* k, const float* w,
                                      const float* t_kept, const float* g, float* dq, float* dk,
                                      float* dw, int64_t tk, int64_t h);

// LayerNorm's rows (ops_norm.cpp), float32 in SIMD: the float64 path's
// math, with the sums in float lanes (mean's added in double) and each row's
// mean and rstd returned in double. For each of `rows` rows of x and y
// [rows, n], with w and b [n] (either may be null):
//   mean = sum x / n,  rstd = 1 / sqrt(sum (x - mean)^2 / n + eps),
//   y = (x - mean) rstd w + b.
void layer_norm_rows_f32(const float* x, const float* w, const float* b, float* y, int64_t rows,
                         int64_t n, double eps, double* mean, double* rstd);
// Its backward for dx [rows, n], from g = dL/dy (dx must not overlap x or g):
//   ĝ = g w,  x̂ = (x - mean) rstd,  dx = rstd / n (n ĝ - sum ĝ - x̂ sum ĝ x̂).
void layer_norm_backward_rows_f32(const float* x, const float* w, const float* g, float* dx,
                                  int64_t rows, int64_t n, const double* mean, const double* rstd);
// And its weight's and bias's gradients over the rows, accumulated in double
// in row order (onto sw and sb, [n], zeroed by the caller):
//   sw += sum_rows g x̂,  sb += sum_rows g.
// The float32 loop is built for the SIMD targets (8 doubles a vector on
// AVX-512); float64 runs the same template without them.
template <typename T>
inline void layer_norm_affine_grads(const T* x, const T* g, int64_t rows, int64_t n,
                                    const double* mean, const double* rstd, double* sw,
                                    double* sb) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k) {
      const double gk = g[r * n + k];
      sw[k] += gk * (x[r * n + k] - mean[r]) * rstd[r];
      sb[k] += gk;
    }
}
void layer_norm_affine_grads_f32(const float* x, const float* g, int64_t rows, int64_t n,
                                 const double* mean, const double* rstd, double* sw, double* sb);

// GRU cell rows (ops_rnn.cpp's gru_cell and gru_layer), vectorised over H.
// rows rows from the given pointers: gi, gh, gates, dgi, dgh [rows, 3H], h,
// h_next, g, dh [rows, H]; gh_n row b at gh_n + b * ld_n.
// The forward: the float32 twin of ops_rnn.cpp's forward_rows template (the
// same math, with this file's exp and tanh).
void gru_cell_rows_f32(const float* gi, const float* gh, const float* h, float* h_next,
                       float* gates, int64_t rows, int64_t H);
// The backward, from g = dL/dh' [rows, H]. In the forward this was
//   h' = (1 - z) n + z h
//     =>  dh  = g z
//         dz  = g (h - n),    da_z = dz z (1 - z)       (a_z = gi_z + gh_z, sigmoid' = z (1 - z))
//         dn  = g (1 - z),    da_n = dn (1 - n^2)       (a_n = gi_n + r gh_n, tanh' = 1 - n^2)
//   a_n = gi_n + r gh_n
//     =>  dgi_n = da_n,  dgh_n = da_n r,  dr = da_n gh_n
//   r = sigmoid(a_r),  a_r = gi_r + gh_r
//     =>  da_r = dr r (1 - r)
//   gi and gh enter a_r and a_z as a plain sum, so dgi_r = dgh_r = da_r and
//   dgi_z = dgh_z = da_z.
// The buffers never overlap; saying so (__restrict) lets the compiler run the
// j loop on vectors, every element computed as written. float64 runs this
// loop as it is; float32 in gru_cell_backward_rows_f32, built per instruction set.
template <typename T>
inline void gru_cell_backward_loop(const T* __restrict g, const T* __restrict gh_n, int64_t ld_n,
                                   const T* __restrict h, const T* __restrict gates,
                                   T* __restrict dgi, T* __restrict dgh, T* __restrict dh,
                                   int64_t rows, int64_t H) {
  for (int64_t b = 0; b < rows; ++b) {
    const T *gb = g + b * H, *ghn = gh_n + b * ld_n, *hb = h + b * H, *gate = gates + b * 3 * H;
    T *dgib = dgi + b * 3 * H, *dghb = dgh + b * 3 * H, *dhb = dh + b * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = gate[j], z = gate[H + j], n = gate[2 * H + j];
      const T da_z = gb[j] * (hb[j] - n) * z * (1 - z);
      const T da_n = gb[j] * (1 - z) * (1 - n * n);
      const T da_r = da_n * ghn[j] * r * (1 - r);
      dhb[j] = gb[j] * z;
      dgib[j] = dghb[j] = da_r;
      dgib[H + j] = dghb[H + j] = da_z;
      dgib[2 * H + j] = da_n;
      dghb[2 * H + j] = da_n * r;
    }
  }
}
void gru_cell_backward_rows_f32(const float* g, const float* gh_n, int64_t ld_n, const float* h,
                                const float* gates, float* dgi, float* dgh, float* dh, int64_t rows,
                                int64_t H);

// Adam's update of n parameters (torch.optim.Adam's single-tensor loop, one
// pass instead of its five): with g the gradient,
//   m <- beta1 m + (1 - beta1) g
//   v <- beta2 v + (1 - beta2) g^2
//   w <- w - step_size m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// where step_size = lr / (1 - beta1^t). The coefficients come in the
// parameter's dtype, rounded from double as torch rounds its Python floats.
// Every element is computed as written, with no fused multiply-add: the
// float32 SIMD builds give the same bits as the plain scalar loop (SIMD
// square root and division are correctly rounded too), so an update does not
// depend on the machine's instruction set.
template <typename T>
struct AdamCoefficients {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps, step_size;
};
void adam_f32(float* w, const float* g, float* m, float* v, int64_t n,
              const AdamCoefficients<float>& c);
void adam_f64(double* w, const double* g, double* m, double* v, int64_t n,
              const AdamCoefficients<double>& c);

// sum_k term(x[k]) accumulated in double, in 16 lanes (two AVX-512 registers)
// so it runs at the loads' speed instead of one addition's latency per
// element: the lanes are added in order at the end, then the tail.
template <typename T, typename Term>
inline double double_lane_sum(const T* x, int64_t n, Term term) {
  constexpr int64_t lanes = 16;
  double lane[lanes] = {};
  int64_t k = 0;
  for (; k + lanes <= n; k += lanes)
    for (int64_t j = 0; j < lanes; ++j) lane[j] += term(x[k + j]);
  double total = 0;
  for (int64_t j = 0; j < lanes; ++j) total += lane[j];
  for (; k < n; ++k) total += term(x[k]);
  return total;
}

// sum_k x[k]^2, each square in double (exact for float32), the sum in
// double_lane_sum's lanes (clip_grad_norm_'s total norm). float64 runs this
// loop as it is; float32 in sum_squares_f32, built per instruction set.
template <typename T>
inline double sum_squares_loop(const T* x, int64_t n) {
  return double_lane_sum(x, n, [](T v) { return static_cast<double>(v) * v; });
}
double sum_squares_f32(const float* x, int64_t n);

}  // namespace ag::detail
