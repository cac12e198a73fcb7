// AVX-512 micro-kernel (x86-64): a 6 x 4-vector tile of C in 24 of the 32
// zmm registers — 6 x 64 floats, or 6 x 32 doubles.
//
//              B sliver row k:  [ b0 ][ b1 ][ b2 ][ b3 ]   4 vector loads
//                                  x     x     x     x
//   a(0,k) broadcast  ->  row 0  [c00 ][c01 ][c02 ][c03 ]
//   a(1,k) broadcast  ->  row 1  [c10 ][c11 ][c12 ][c13 ]
//     ...                          ...
//   a(5,k) broadcast  ->  row 5  [c50 ][c51 ][c52 ][c53 ]   24 accumulators
//
// Each k step: 4 loads of B, 6 broadcasts of A, 24 fused multiply-adds, each
// into its own accumulator. 24 independent chains are enough to hide the FMA
// latency (4 cycles, 1-2 FMAs issued per cycle), and each value loaded feeds 4
// or 6 FMAs, so the loads never become the bottleneck. That leaves 8 registers
// for the 4 B vectors and a broadcast.
//
// Only this function is compiled for AVX-512 (a target attribute, not a
// per-file flag): the driver and any inline library code it pulls in stay
// baseline x86-64, so nothing AVX-512 can leak into code a non-AVX-512 CPU
// runs. gemm.cpp calls it only when the CPU reports avx512f.
#if defined(__x86_64__)

#include <immintrin.h>

#include "gemm_driver.h"

namespace ag::kernels::detail {
namespace {

#define AG_AVX512 __attribute__((target("avx512f")))
#define AG_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

// The handful of vector operations the kernel needs, for float and double.
template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using V = __m512;
  static constexpr int kLanes = 16;
  AG_AVX512_INLINE static V zero() { return _mm512_setzero_ps(); }
  AG_AVX512_INLINE static V load(const float* p) { return _mm512_loadu_ps(p); }
  AG_AVX512_INLINE static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  AG_AVX512_INLINE static V broadcast(float x) { return _mm512_set1_ps(x); }
  AG_AVX512_INLINE static V add(V x, V y) { return _mm512_add_ps(x, y); }
  AG_AVX512_INLINE static V fma(V x, V y, V acc) { return _mm512_fmadd_ps(x, y, acc); }
};

template <>
struct Vec<double> {
  using V = __m512d;
  static constexpr int kLanes = 8;
  AG_AVX512_INLINE static V zero() { return _mm512_setzero_pd(); }
  AG_AVX512_INLINE static V load(const double* p) { return _mm512_loadu_pd(p); }
  AG_AVX512_INLINE static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  AG_AVX512_INLINE static V broadcast(double x) { return _mm512_set1_pd(x); }
  AG_AVX512_INLINE static V add(V x, V y) { return _mm512_add_pd(x, y); }
  AG_AVX512_INLINE static V fma(V x, V y, V acc) { return _mm512_fmadd_pd(x, y, acc); }
};

template <typename Scalar>
struct Avx512Kernel {
  using T = Scalar;
  using V = typename Vec<T>::V;
  static constexpr int kVecs = 4;
  static constexpr int kNR = kVecs * Vec<T>::kLanes;

  AG_AVX512 static void micro_kernel(const MicroTile<T>& t) {
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
      alignas(64) T tile[kMR * kNR];
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

void gemm_avx512(const GemmShape& s, const float* A, const float* B, float* C) {
  gemm_blocked<Avx512Kernel<float>>(s, A, B, C);
}

void gemm_avx512(const GemmShape& s, const double* A, const double* B, double* C) {
  gemm_blocked<Avx512Kernel<double>>(s, A, B, C);
}

}  // namespace ag::kernels::detail

#endif  // __x86_64__
