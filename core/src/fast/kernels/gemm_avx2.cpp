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
// The edges of C (the last rows when M is not a multiple of 6, the last
// columns when N is not a multiple of 16) get the same loop with fewer rows
// and vectors, the last vector of a row read and written under a mask; tiny
// products (a Transformer head's) skip the driver: gemm_avx512.cpp's
// structure, with AVX2's masked loads and stores.
//
// As in gemm_avx512.cpp, only the kernel is compiled for AVX2 + FMA (a target
// attribute), and gemm.cpp calls it only when the CPU reports both.
// Its reference: gemm_naive (core/src/gemm_naive.cpp), the three loops.
#if defined(__x86_64__)

#include <immintrin.h>

#include <type_traits>

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
  using Mask = __m256i;  // all ones in the lanes to read or write
  static constexpr int kLanes = 8;
  AG_AVX2_INLINE static V zero() { return _mm256_setzero_ps(); }
  AG_AVX2_INLINE static V load(const float* p) { return _mm256_loadu_ps(p); }
  AG_AVX2_INLINE static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  AG_AVX2_INLINE static Mask first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // (lanes off the mask are neither read nor written: no fault past an array's end)
  AG_AVX2_INLINE static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  AG_AVX2_INLINE static void store(float* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }
  AG_AVX2_INLINE static V broadcast(float x) { return _mm256_set1_ps(x); }
  AG_AVX2_INLINE static V add(V x, V y) { return _mm256_add_ps(x, y); }
  AG_AVX2_INLINE static V fma(V x, V y, V acc) { return _mm256_fmadd_ps(x, y, acc); }
};

template <>
struct Vec<double> {
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int kLanes = 4;
  AG_AVX2_INLINE static V zero() { return _mm256_setzero_pd(); }
  AG_AVX2_INLINE static V load(const double* p) { return _mm256_loadu_pd(p); }
  AG_AVX2_INLINE static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  AG_AVX2_INLINE static Mask first(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  AG_AVX2_INLINE static V load(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  AG_AVX2_INLINE static void store(double* p, Mask m, V v) { _mm256_maskstore_pd(p, m, v); }
  AG_AVX2_INLINE static V broadcast(double x) { return _mm256_set1_pd(x); }
  AG_AVX2_INLINE static V add(V x, V y) { return _mm256_add_pd(x, y); }
  AG_AVX2_INLINE static V fma(V x, V y, V acc) { return _mm256_fmadd_pd(x, y, acc); }
};

template <typename Scalar>
struct Avx2Kernel {
  using T = Scalar;
  using V = typename Vec<T>::V;
  static constexpr int kVecs = 2;
  static constexpr int kLanes = Vec<T>::kLanes;
  static constexpr int kNR = kVecs * kLanes;
  static constexpr int kColumnStep = kLanes;  // narrow tiles read whole vectors of B

  // C[0:m, 0:n] (+)= the tile, for m == R and n in ((Vs - 1) * kLanes, Vs * kLanes]:
  // gemm_avx512.cpp's tile, with AVX2's masked loads and stores (a mask of
  // lanes in a vector register) for the last, partial vector of C's rows.
  // MaskedB: B's last vector of each k step is read with that mask too
  // (gemm_small reads an unpacked B in place, where past its last column
  // there may be no memory); a packed sliver is zero-padded and read whole.
  template <int R, int Vs, bool MaskedB = false>
  AG_AVX2 static void tile(const MicroTile<T>& t) {
    const T* row[R];
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) row[i] = t.a + i * t.a_rs;

    V acc[R][Vs];
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < Vs; ++v) acc[i][v] = Vec<T>::zero();
    }

    const auto last = Vec<T>::first(t.n - (Vs - 1) * kLanes);
    const T* b = t.b;
    for (int64_t k = 0, ak = 0; k < t.kc; ++k, ak += t.a_cs, b += t.b_ks) {
      V bk[Vs];
#pragma GCC unroll 2
      for (int v = 0; v < Vs; ++v) {
        bk[v] = MaskedB && v == Vs - 1 ? Vec<T>::load(b + v * kLanes, last)
                                       : Vec<T>::load(b + v * kLanes);
      }
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const V a = Vec<T>::broadcast(row[i][ak]);
#pragma GCC unroll 2
        for (int v = 0; v < Vs; ++v) acc[i][v] = Vec<T>::fma(a, bk[v], acc[i][v]);
      }
    }

    // C's address and the flag read once (the stores may alias t's fields).
    T* const c0 = t.c;
    const int64_t ldc = t.ldc;
    const bool accumulate = t.accumulate;
    const bool whole = t.n == Vs * kLanes;
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v + 1 < Vs; ++v) {
        T* c = c0 + i * ldc + v * kLanes;
        Vec<T>::store(c, accumulate ? Vec<T>::add(acc[i][v], Vec<T>::load(c)) : acc[i][v]);
      }
      T* c = c0 + i * ldc + (Vs - 1) * kLanes;
      if (whole) {
        Vec<T>::store(c,
                      accumulate ? Vec<T>::add(acc[i][Vs - 1], Vec<T>::load(c)) : acc[i][Vs - 1]);
      } else {
        const V sum =
            accumulate ? Vec<T>::add(acc[i][Vs - 1], Vec<T>::load(c, last)) : acc[i][Vs - 1];
        Vec<T>::store(c, last, sum);
      }
    }
  }

  // Packs one sliver of a transposed B for gemm_driver.h's pack_b, as
  // gemm_avx512.cpp's pack_b_transposed does (which says why): `n` (<= kNR)
  // rows of the stored B, b[c * ldb + k] for k < kc, become the columns of
  // sliver[k * width + c]; columns n..width are zeros. 8 x 8 at a time,
  // transposed in registers: 8 row loads, 24 shuffles and 8 stores per 64
  // values. Float only: float64's transposes are gradcheck-sized.
  static constexpr bool kPacksBTransposed = std::is_same_v<T, float>;
  AG_AVX2 static void pack_b_transposed(const float* b, int64_t ldb, int64_t kc, int n,
                                        int64_t width,
                                        float* sliver) requires std::is_same_v<T, float> {
    for (int c0 = 0; c0 < width; c0 += 8) {
      for (int64_t k0 = 0; k0 < kc; k0 += 8) {
        const int ks = static_cast<int>(std::min<int64_t>(8, kc - k0));
        const __m256i k_mask = Vec<float>::first(ks);
        __m256 r[8];  // r[i] = stored row c0 + i, values k0 .. k0 + 7
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          r[i] = c0 + i < n ? _mm256_maskload_ps(b + (c0 + i) * ldb + k0, k_mask)
                            : _mm256_setzero_ps();
        }
        // Within each 128-bit half: pairs of rows interleaved, then quads, so
        // that u[4h + j] holds, in half L, value 4L + j of rows 4h .. 4h + 3.
        __m256 t[8], u[8];
#pragma GCC unroll 4
        for (int i = 0; i < 8; i += 2) {
          t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
          t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 8; h += 4) {
          u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
          u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
          u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
          u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
        }
        // Then the halves: value j of all 8 rows is the low halves of u[j]
        // and u[4 + j], value 4 + j their high halves.
        __m256 out[8];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          out[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
          out[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
        }
        for (int k = 0; k < ks; ++k) _mm256_storeu_ps(sliver + (k0 + k) * width + c0, out[k]);
      }
    }
  }

  using TileFn = void (*)(const MicroTile<T>&);
  // kTiles[rows - 1][vectors - 1]: the edges of C cost what their size says.
  static constexpr TileFn kTiles[kMR][kVecs] = {
      {tile<1, 1>, tile<1, 2>}, {tile<2, 1>, tile<2, 2>}, {tile<3, 1>, tile<3, 2>},
      {tile<4, 1>, tile<4, 2>}, {tile<5, 1>, tile<5, 2>}, {tile<6, 1>, tile<6, 2>},
  };
  // gemm_small's last columns when N is not a multiple of the vector.
  static constexpr TileFn kMaskedTiles[kMR][kVecs] = {
      {tile<1, 1, true>, tile<1, 2, true>}, {tile<2, 1, true>, tile<2, 2, true>},
      {tile<3, 1, true>, tile<3, 2, true>}, {tile<4, 1, true>, tile<4, 2, true>},
      {tile<5, 1, true>, tile<5, 2, true>}, {tile<6, 1, true>, tile<6, 2, true>},
  };

  static void micro_kernel(const MicroTile<T>& t) {
    if (t.m == kMR && t.n == kNR) {  // a whole tile: the common case, called directly
      tile<kMR, kVecs>(t);
    } else {
      kTiles[t.m - 1][(t.n + kLanes - 1) / kLanes - 1](t);
    }
  }

  // Tiny products without the driver (gemm_driver.h's gemm_small), with
  // half AVX-512's limit: half its vector width.
  static constexpr int64_t kSmallMacs = 16 * 1024;  // M N K of one batch item

  static void small_tile(const MicroTile<T>& t, int m, int n) {
    const int vectors = (n + kLanes - 1) / kLanes;
    (n % kLanes == 0 ? kTiles : kMaskedTiles)[m - 1][vectors - 1](t);
  }

  static void gemm(const GemmShape& s, const T* A, const T* B, T* C) {
    if (is_small_product<Avx2Kernel>(s)) {
      gemm_small<Avx2Kernel>(s, A, B, C);
    } else {
      gemm_blocked<Avx2Kernel>(s, A, B, C);
    }
  }
};

}  // namespace

void gemm_avx2(const GemmShape& s, const float* A, const float* B, float* C) {
  Avx2Kernel<float>::gemm(s, A, B, C);
}

void gemm_avx2(const GemmShape& s, const double* A, const double* B, double* C) {
  Avx2Kernel<double>::gemm(s, A, B, C);
}

template <typename T>
PackedBPath<T> packed_b_avx2() {
  return packed_b_path<Avx2Kernel<T>>();
}
template PackedBPath<float> packed_b_avx2<float>();
template PackedBPath<double> packed_b_avx2<double>();

}  // namespace ag::kernels::detail

#endif  // __x86_64__
