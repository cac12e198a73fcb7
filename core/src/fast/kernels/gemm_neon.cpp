// NEON micro-kernel (AArch64): a 6 x 4-vector tile of C in 24 of the 32
// q registers — 6 x 16 floats, or 6 x 8 doubles.
//
//              B sliver row k:  [ b0 ][ b1 ][ b2 ][ b3 ]   4 vector loads
//                                  x     x     x     x
//   a(0,k) broadcast  ->  row 0  [c00 ][c01 ][c02 ][c03 ]
//     ...                          ...
//   a(5,k) broadcast  ->  row 5  [c50 ][c51 ][c52 ][c53 ]   24 accumulators
//
// The same shape as the AVX-512 kernel with 128-bit vectors: 24 independent
// FMA chains, 4 B vectors and a broadcast in the remaining 8 registers.
// Advanced SIMD is part of the AArch64 base ISA, so no target attribute is
// needed; on other CPUs this file compiles to nothing.
// Its reference: gemm_naive (core/src/gemm_naive.cpp), the three loops.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "gemm_driver.h"

namespace ag::kernels::detail {
namespace {

// The handful of vector operations the kernel needs, for float and double.
template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static V zero() { return vdupq_n_f32(0.0f); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V broadcast(float x) { return vdupq_n_f32(x); }
  static V add(V x, V y) { return vaddq_f32(x, y); }
  static V fma(V x, V y, V acc) { return vfmaq_f32(acc, x, y); }
};

template <>
struct Vec<double> {
  using V = float64x2_t;
  static constexpr int kLanes = 2;
  static V zero() { return vdupq_n_f64(0.0); }
  static V load(const double* p) { return vld1q_f64(p); }
  static void store(double* p, V v) { vst1q_f64(p, v); }
  static V broadcast(double x) { return vdupq_n_f64(x); }
  static V add(V x, V y) { return vaddq_f64(x, y); }
  static V fma(V x, V y, V acc) { return vfmaq_f64(acc, x, y); }
};

template <typename Scalar>
struct NeonKernel {
  using T = Scalar;
  using V = typename Vec<T>::V;
  static constexpr int kVecs = 4;
  static constexpr int kNR = kVecs * Vec<T>::kLanes;
  static constexpr int kColumnStep = kNR;  // reads all kNR columns of a sliver

  static void micro_kernel(const MicroTile<T>& t) {
    const T* row[kMR];  // rows past m repeat the last real row (read, never stored)
#pragma GCC unroll 6
    for (int i = 0; i < kMR; ++i) row[i] = t.a + std::min(i, t.m - 1) * t.a_rs;

    V acc[kMR][kVecs];
#pragma GCC unroll 6
    for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[i][v] = Vec<T>::zero();
    }

    const T* b = t.b;
    for (int64_t k = 0, ak = 0; k < t.kc; ++k, ak += t.a_cs, b += t.b_ks) {
      V bk[kVecs];
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) bk[v] = Vec<T>::load(b + v * Vec<T>::kLanes);
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
        const V a = Vec<T>::broadcast(row[i][ak]);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) acc[i][v] = Vec<T>::fma(a, bk[v], acc[i][v]);
      }
    }

    if (t.m == kMR && t.n == kNR) {  // a whole tile: straight to C
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
          T* c = t.c + i * t.ldc + v * Vec<T>::kLanes;
          Vec<T>::store(c, t.accumulate ? Vec<T>::add(acc[i][v], Vec<T>::load(c)) : acc[i][v]);
        }
      }
    } else {  // an edge tile: through a buffer, keeping only m x n
      alignas(16) T tile[kMR * kNR];
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v)
          Vec<T>::store(tile + i * kNR + v * Vec<T>::kLanes, acc[i][v]);
      }
      store_partial_tile(tile, kNR, t);
    }
  }
};

}  // namespace

void gemm_neon(const GemmShape& s, const float* A, const float* B, float* C) {
  gemm_blocked<NeonKernel<float>>(s, A, B, C);
}

void gemm_neon(const GemmShape& s, const double* A, const double* B, double* C) {
  gemm_blocked<NeonKernel<double>>(s, A, B, C);
}

template <typename T>
PackedBPath<T> packed_b_neon() {
  return packed_b_path<NeonKernel<T>>();
}
template PackedBPath<float> packed_b_neon<float>();
template PackedBPath<double> packed_b_neon<double>();

}  // namespace ag::kernels::detail

#endif  // __aarch64__
