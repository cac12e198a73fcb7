// Vectorisable float32 exp and tanh for the hot elementwise loops (softmax,
// tanh in additive attention). libm's expf/tanhf are scalar calls; these are
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

}  // namespace ag::detail
