// Vectorisable float32 exp and tanh for the hot elementwise loops (softmax,
// tanh, additive attention scores). libm's expf/tanhf are scalar calls; these are
// branch-free polynomials that the compiler turns into SIMD code, built for
// AVX-512, AVX2 and baseline x86-64 and picked at load time (target_clones).
// float64 keeps std::exp/std::tanh: it is the precision path for gradcheck.
#pragma once

#include <cstdint>

namespace ag::detail {

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

// sum_k x[k] accumulated in double, in 16 lanes (two AVX-512 registers) so
// it runs at the loads' speed instead of one addition's latency per element
// (ag::sum of a contiguous float32 tensor; reduce.cpp).
double sum_f32(const float* x, int64_t n);
// sum_k a[k] b[k], in float lanes as the softmax's sums (added in double at the end).
double dot_f32(const float* a, const float* b, int64_t n);
// dz = p * (dp - d) for one attention row: the softmax backward from the
// row's d = sum_k p_k dp_k, computed elsewhere. dz may be dp.
void softmax_backward_given_f32(const float* p, const float* dp, float d, float* dz, int64_t n);

// The two row kernels of a streamed attention block (ops_flash_attention.cpp):
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

// GRU cell rows (ops_rnn.cpp's gru_cell and gru_layer), vectorised over H; the
// float32 twins of its forward_rows and backward_rows templates (the same
// math, see there). rows rows from the given pointers: gi, gh, gates, dgi,
// dgh [rows, 3H], h, h_next, g, dh [rows, H]; gh_n row b at gh_n + b * ld_n.
void gru_cell_rows_f32(const float* gi, const float* gh, const float* h, float* h_next,
                       float* gates, int64_t rows, int64_t H);
void gru_cell_backward_rows_f32(const float* g, const float* gh_n, int64_t ld_n, const float* h,
                                const float* gates, float* dgi, float* dgh, float* dh, int64_t rows,
                                int64_t H);

}  // namespace ag::detail
