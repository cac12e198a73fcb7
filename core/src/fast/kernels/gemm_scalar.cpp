// Portable micro-kernel: the blocked and packed driver of gemm_driver.h around
// a plain C++ 6 x NR tile, NR = 32 bytes of values (8 floats, 4 doubles). The
// 48 float (or 24 double) accumulators fit the 16 registers of baseline
// x86-64 SSE2 once the compiler vectorizes the j loop, as it does at -O2 and
// above; on other CPUs it is plain scalar code. This path runs everywhere and
// is what the SIMD kernels are measured against in docs/matmul.md.
// Its reference: gemm_naive (core/src/gemm_naive.cpp), the three loops.
#include "gemm_driver.h"

namespace ag::kernels::detail {
namespace {

template <typename Scalar>
struct ScalarKernel {
  using T = Scalar;
  static constexpr int kNR = 32 / sizeof(T);
  static constexpr int kColumnStep = kNR;  // reads all kNR columns of a sliver

  static void micro_kernel(const MicroTile<T>& t) {
    const T* row[kMR];  // rows past m repeat the last real row (read, never stored)
    for (int i = 0; i < kMR; ++i) row[i] = t.a + std::min(i, t.m - 1) * t.a_rs;

    T acc[kMR][kNR] = {};
    const T* b = t.b;
    for (int64_t k = 0, ak = 0; k < t.kc; ++k, ak += t.a_cs, b += t.b_ks) {
      for (int i = 0; i < kMR; ++i) {
        const T a = row[i][ak];
        for (int j = 0; j < kNR; ++j) acc[i][j] += a * b[j];
      }
    }
    store_partial_tile(&acc[0][0], kNR, t);
  }
};

}  // namespace

void gemm_scalar(const GemmShape& s, const float* A, const float* B, float* C) {
  gemm_blocked<ScalarKernel<float>>(s, A, B, C);
}

void gemm_scalar(const GemmShape& s, const double* A, const double* B, double* C) {
  gemm_blocked<ScalarKernel<double>>(s, A, B, C);
}

template <typename T>
PackedBPath<T> packed_b_scalar() {
  return packed_b_path<ScalarKernel<T>>();
}
template PackedBPath<float> packed_b_scalar<float>();
template PackedBPath<double> packed_b_scalar<double>();

}  // namespace ag::kernels::detail
