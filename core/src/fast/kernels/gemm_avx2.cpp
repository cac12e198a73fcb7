// AVX2 + FMA micro-kernel (x86-64): a 6 x 2-vector tile of C in 12 of the 16
// ymm registers — 6 x 16 floats, or 6 x 8 doubles.
//
//              B sliver row k:  [ b0 ][ b1 ]   2 vector loads
//                                  x     x
//   a(0,k) broadcast  ->  row 0  [c00 ][c01 ]
//     ...                          ...
//   a(5,k) broadcast  ->  row 5  [c50 ][c51 ]   12 accumulators
//
// Each k step: 2 loads of B, 6 broadcasts of A, 12 fused multiply-adds. With
// only 16 registers this is the largest tile that keeps the 2 B vectors and a
// broadcast in registers too; 12 independent chains still cover the FMA
// latency (4-5 cycles, 2 FMAs per cycle).
//
// As in gemm_avx512.cpp, only the kernel is compiled for AVX2 + FMA (a target
// attribute), and gemm.cpp calls it only when the CPU reports both.
// Its reference: gemm_naive (core/src/gemm_naive.cpp), the three loops.
#if defined(__x86_64__)

#include <immintrin.h>

#include "gemm_driver.h"

namespace ag::kernels::detail {
namespace {

#define AG_AVX2 __attribute__((target("avx2,fma")))
#define AG_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

// The handful of vector operations the kernel needs, for float and double.
template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using V = __m256;
  static constexpr int kLanes = 8;
  AG_AVX2_INLINE static V zero() { return _mm256_setzero_ps(); }
  AG_AVX2_INLINE static V load(const float* p) { return _mm256_loadu_ps(p); }
  AG_AVX2_INLINE static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  AG_AVX2_INLINE static V broadcast(float x) { return _mm256_set1_ps(x); }
  AG_AVX2_INLINE static V add(V x, V y) { return _mm256_add_ps(x, y); }
  AG_AVX2_INLINE static V fma(V x, V y, V acc) { return _mm256_fmadd_ps(x, y, acc); }
};

template <>
struct Vec<double> {
  using V = __m256d;
  static constexpr int kLanes = 4;
  AG_AVX2_INLINE static V zero() { return _mm256_setzero_pd(); }
  AG_AVX2_INLINE static V load(const double* p) { return _mm256_loadu_pd(p); }
  AG_AVX2_INLINE static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  AG_AVX2_INLINE static V broadcast(double x) { return _mm256_set1_pd(x); }
  AG_AVX2_INLINE static V add(V x, V y) { return _mm256_add_pd(x, y); }
  AG_AVX2_INLINE static V fma(V x, V y, V acc) { return _mm256_fmadd_pd(x, y, acc); }
};

template <typename Scalar>
struct Avx2Kernel {
  using T = Scalar;
  using V = typename Vec<T>::V;
  static constexpr int kVecs = 2;
  static constexpr int kNR = kVecs * Vec<T>::kLanes;
  static constexpr int kColumnStep = kNR;  // reads all kNR columns of a sliver

  AG_AVX2 static void micro_kernel(const MicroTile<T>& t) {
    const T* row[kMR];  // rows past m repeat the last real row (read, never stored)
#pragma GCC unroll 6
    for (int i = 0; i < kMR; ++i) row[i] = t.a + std::min(i, t.m - 1) * t.a_rs;

    V acc[kMR][kVecs];
#pragma GCC unroll 6
    for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = Vec<T>::zero();
    }

    const T* b = t.b;
    for (int64_t k = 0, ak = 0; k < t.kc; ++k, ak += t.a_cs, b += t.b_ks) {
      V bk[kVecs];
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) bk[v] = Vec<T>::load(b + v * Vec<T>::kLanes);
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
        const V a = Vec<T>::broadcast(row[i][ak]);
#pragma GCC unroll 2
        for (int v = 0; v < kVecs; ++v) acc[i][v] = Vec<T>::fma(a, bk[v], acc[i][v]);
      }
    }

    if (t.m == kMR && t.n == kNR) {  // a whole tile: straight to C
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < kVecs; ++v) {
          T* c = t.c + i * t.ldc + v * Vec<T>::kLanes;
          Vec<T>::store(c, t.accumulate ? Vec<T>::add(acc[i][v], Vec<T>::load(c)) : acc[i][v]);
        }
      }
    } else {  // an edge tile: through a buffer, keeping only m x n
      alignas(32) T tile[kMR * kNR];
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < kVecs; ++v)
          Vec<T>::store(tile + i * kNR + v * Vec<T>::kLanes, acc[i][v]);
      }
      store_partial_tile(tile, kNR, t);
    }
  }
};

}  // namespace

void gemm_avx2(const GemmShape& s, const float* A, const float* B, float* C) {
  gemm_blocked<Avx2Kernel<float>>(s, A, B, C);
}

void gemm_avx2(const GemmShape& s, const double* A, const double* B, double* C) {
  gemm_blocked<Avx2Kernel<double>>(s, A, B, C);
}

template <typename T>
PackedBPath<T> packed_b_avx2() {
  return packed_b_path<Avx2Kernel<T>>();
}
template PackedBPath<float> packed_b_avx2<float>();
template PackedBPath<double> packed_b_avx2<double>();

}  // namespace ag::kernels::detail

#endif  // __x86_64__
