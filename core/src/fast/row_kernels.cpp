// vector_math.h's functions: each calls its twin in the row kernels of the
// instruction set the kernels run (row_kernels.h), chosen once, at the first
// call: the best this CPU has, or ATTOGRAD_ISA's. (These replace GCC's
// target_clones, which pick a build at load time by the CPU alone.)
#include "row_kernels.h"

#include <string>

#include "attograd/error.h"
#include "kernels/cpu_features.h"

namespace ag::detail {

// Each build's table (row_kernels_table.cpp, compiled once per set).
namespace generic {
extern const RowKernels kRowKernels;
}
#if AG_X86_ROW_KERNELS
namespace avx2 {
extern const RowKernels kRowKernels;
}
namespace avx512 {
extern const RowKernels kRowKernels;
}
#endif

const RowKernels& row_kernels(kernels::InstructionSet set) {
  AG_CHECK(kernels::detail::instruction_set_available(set), "row_kernels",
           std::string("this CPU cannot run ") + kernels::instruction_set_name(set));
#if AG_X86_ROW_KERNELS
  if (set == kernels::InstructionSet::Avx2) return avx2::kRowKernels;
  if (set == kernels::InstructionSet::Avx512) return avx512::kRowKernels;
#endif
  return generic::kRowKernels;
}

namespace {

const RowKernels& chosen_row_kernels() {
  static const RowKernels& chosen = row_kernels(kernels::instruction_set());
  return chosen;
}

}  // namespace

void dropout_f32(const float* x, float* y, float* m, int64_t n, uint64_t seed, uint64_t drop_below,
                 float scale) {
  chosen_row_kernels().dropout_f32(x, y, m, n, seed, drop_below, scale);
}

void exp_f32(const float* x, float* y, int64_t n) {
  chosen_row_kernels().exp_f32(x, y, n);
}

void tanh_f32(const float* x, float* y, int64_t n) {
  chosen_row_kernels().tanh_f32(x, y, n);
}

void softmax_row_f32(const float* x, float* y, int64_t n) {
  chosen_row_kernels().softmax_row_f32(x, y, n);
}

void softmax_backward_row_f32(const float* y, const float* g, float* dx, int64_t n) {
  chosen_row_kernels().softmax_backward_row_f32(y, g, dx, n);
}

void masked_softmax_rows_f32(const float* x, const bool* keep, const int64_t* keep_offset,
                             int64_t keep_stride, float* y, int64_t rows, int64_t n, float fill,
                             bool zero_masked, RowKernel kernel) {
  chosen_row_kernels().masked_softmax_rows_f32(x, keep, keep_offset, keep_stride, y, rows, n, fill,
                                               zero_masked, kernel);
}

void masked_softmax_backward_rows_f32(const float* y, const float* g, const bool* keep,
                                      const int64_t* keep_offset, int64_t keep_stride, float* dx,
                                      int64_t rows, int64_t n, bool zero_masked, RowKernel kernel) {
  chosen_row_kernels().masked_softmax_backward_rows_f32(y, g, keep, keep_offset, keep_stride, dx,
                                                        rows, n, zero_masked, kernel);
}

double sum_f32(const float* x, int64_t n) {
  return chosen_row_kernels().sum_f32(x, n);
}

void column_sums_f32(const float* x, int64_t rows, int64_t cols, double* acc) {
  chosen_row_kernels().column_sums_f32(x, rows, cols, acc);
}

double dot_f32(const float* a, const float* b, int64_t n) {
  return chosen_row_kernels().dot_f32(a, b, n);
}

void softmax_backward_given_f32(const float* p, const float* dp, float d, float* dz, int64_t n) {
  chosen_row_kernels().softmax_backward_given_f32(p, dp, d, dz, n);
}

float max_f32(const float* x, int64_t n) {
  return chosen_row_kernels().max_f32(x, n);
}

double exp_affine_sum_f32(float* x, int64_t n, float scale, float shift) {
  return chosen_row_kernels().exp_affine_sum_f32(x, n, scale, shift);
}

void additive_scores_row_f32(const float* q, const float* k, const float* w, float* s, float* t,
                             int64_t tk, int64_t h) {
  chosen_row_kernels().additive_scores_row_f32(q, k, w, s, t, tk, h);
}

void additive_scores_backward_row_f32(const float* q, const float* k, const float* w,
                                      const float* t_kept, const float* g, float* dq, float* dk,
                                      float* dw, int64_t tk, int64_t h) {
  chosen_row_kernels().additive_scores_backward_row_f32(q, k, w, t_kept, g, dq, dk, dw, tk, h);
}

void layer_norm_rows_f32(const float* x, const float* w, const float* b, float* y, int64_t rows,
                         int64_t n, double eps, double* mean, double* rstd) {
  chosen_row_kernels().layer_norm_rows_f32(x, w, b, y, rows, n, eps, mean, rstd);
}

void layer_norm_backward_rows_f32(const float* x, const float* w, const float* g, float* dx,
                                  int64_t rows, int64_t n, const double* mean, const double* rstd) {
  chosen_row_kernels().layer_norm_backward_rows_f32(x, w, g, dx, rows, n, mean, rstd);
}

void layer_norm_affine_grads_f32(const float* x, const float* g, int64_t rows, int64_t n,
                                 const double* mean, const double* rstd, double* sw, double* sb) {
  chosen_row_kernels().layer_norm_affine_grads_f32(x, g, rows, n, mean, rstd, sw, sb);
}

void gru_cell_rows_f32(const float* gi, const float* gh, const float* h, float* h_next,
                       float* gates, int64_t rows, int64_t H) {
  chosen_row_kernels().gru_cell_rows_f32(gi, gh, h, h_next, gates, rows, H);
}

void gru_cell_backward_rows_f32(const float* g, const float* gh_n, int64_t ld_n, const float* h,
                                const float* gates, float* dgi, float* dgh, float* dh, int64_t rows,
                                int64_t H) {
  chosen_row_kernels().gru_cell_backward_rows_f32(g, gh_n, ld_n, h, gates, dgi, dgh, dh, rows, H);
}

void adam_f32(float* w, const float* g, float* m, float* v, int64_t n,
              const AdamCoefficients<float>& c) {
  chosen_row_kernels().adam_f32(w, g, m, v, n, c);
}

void adam_f64(double* w, const double* g, double* m, double* v, int64_t n,
              const AdamCoefficients<double>& c) {
  chosen_row_kernels().adam_f64(w, g, m, v, n, c);
}

double sum_squares_f32(const float* x, int64_t n) {
  return chosen_row_kernels().sum_squares_f32(x, n);
}

}  // namespace ag::detail
