// The reference GEMM: one dot product per element of C, summed in order.
// Slow (it walks a column of B for every element: see docs/matmul.md), but
// obviously right, so the tests compare every fast path with it.
#include "attograd/kernels/gemm.h"

namespace ag::kernels {
namespace {

template <typename T>
void naive(const GemmShape& s, const T* A, const T* B, T* C) {
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* a = A + b * s.stride_a;
    const T* bm = B + b * s.stride_b;
    T* c = C + b * s.stride_c;
    for (int64_t i = 0; i < s.M; ++i) {
      for (int64_t j = 0; j < s.N; ++j) {
        T sum = 0;
        for (int64_t k = 0; k < s.K; ++k) {
          const T a_ik = s.trans_a ? a[k * s.lda + i] : a[i * s.lda + k];
          const T b_kj = s.trans_b ? bm[j * s.ldb + k] : bm[k * s.ldb + j];
          sum += a_ik * b_kj;
        }
        T& out = c[i * s.ldc + j];
        out = s.beta != 0 ? out + sum : sum;  // beta 0 never reads C
      }
    }
  }
}

}  // namespace

void gemm_naive(const GemmShape& s, const float* A, const float* B, float* C) {
  naive(s, A, B, C);
}

void gemm_naive(const GemmShape& s, const double* A, const double* B, double* C) {
  naive(s, A, B, C);
}

}  // namespace ag::kernels
