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
// The edges of C (the last rows when M is not a multiple of 6, the last
// columns when N is not a multiple of 64) get the same loop with fewer rows
// and vectors, chosen from a table of R x Vs instantiations, and masked
// loads and stores for the last, partial vector of a row: an edge tile costs
// what its size says and is written straight into C.
//
// Why gemm_avx2.cpp (the same structure, with AVX2's masked loads and
// stores, which take the mask in a vector register) and gemm_neon.cpp (no
// masked stores: one full-size tile, edge tiles stored through a buffer) do
// not share this body: sharing the k loop safely under per-target attributes
// would mean a header template instantiated in each file's anonymous
// namespace under a different attribute macro: more machinery than the
// lines it saves.
//
// Only these functions are compiled for AVX-512 (a target attribute, not a
// per-file flag): the driver and any inline library code it pulls in stay
// baseline x86-64, so nothing AVX-512 can leak into code a non-AVX-512 CPU
// runs. gemm.cpp calls it only when the CPU reports avx512f.
// Its reference: gemm_naive (core/src/gemm_naive.cpp), the three loops.
#if defined(__x86_64__)

#include <immintrin.h>

#include <type_traits>

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
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  AG_AVX512_INLINE static V zero() { return _mm512_setzero_ps(); }
  AG_AVX512_INLINE static V load(const float* p) { return _mm512_loadu_ps(p); }
  AG_AVX512_INLINE static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // The first n lanes (1 <= n <= kLanes); loads leave the others 0, stores skip them.
  AG_AVX512_INLINE static Mask first(int n) { return static_cast<Mask>((1u << n) - 1); }
  AG_AVX512_INLINE static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  AG_AVX512_INLINE static void store(float* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  AG_AVX512_INLINE static V broadcast(float x) { return _mm512_set1_ps(x); }
  AG_AVX512_INLINE static V add(V x, V y) { return _mm512_add_ps(x, y); }
  AG_AVX512_INLINE static V fma(V x, V y, V acc) { return _mm512_fmadd_ps(x, y, acc); }
};

template <>
struct Vec<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  AG_AVX512_INLINE static V zero() { return _mm512_setzero_pd(); }
  AG_AVX512_INLINE static V load(const double* p) { return _mm512_loadu_pd(p); }
  AG_AVX512_INLINE static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  AG_AVX512_INLINE static Mask first(int n) { return static_cast<Mask>((1u << n) - 1); }
  AG_AVX512_INLINE static V load(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  AG_AVX512_INLINE static void store(double* p, Mask m, V v) { _mm512_mask_storeu_pd(p, m, v); }
  AG_AVX512_INLINE static V broadcast(double x) { return _mm512_set1_pd(x); }
  AG_AVX512_INLINE static V add(V x, V y) { return _mm512_add_pd(x, y); }
  AG_AVX512_INLINE static V fma(V x, V y, V acc) { return _mm512_fmadd_pd(x, y, acc); }
};

// The sum of a vector's lanes, for float and double (GCC 12's
// _mm512_reduce_add_ps/_pd trip -Wmaybe-uninitialized).
template <typename T>
AG_AVX512_INLINE T lane_sum(typename Vec<T>::V v) {
  T lane[Vec<T>::kLanes];
  Vec<T>::store(lane, v);
  T total = 0;
  for (T x : lane) total += x;
  return total;
}

template <typename Scalar>
struct Avx512Kernel {
  using T = Scalar;
  using V = typename Vec<T>::V;
  static constexpr int kVecs = 4;
  static constexpr int kLanes = Vec<T>::kLanes;
  static constexpr int kNR = kVecs * kLanes;
  static constexpr int kColumnStep = kLanes;  // narrow tiles read whole vectors of B

  // C[0:m, 0:n] (+)= the tile, for m == R and n in ((Vs - 1) * kLanes, Vs * kLanes].
  // MaskedB: B's last vector of each k step is read with the mask of C's last
  // one (gemm_small reads an unpacked B in place, where past its last column
  // there may be no memory); a packed sliver is zero-padded and read whole.
  template <int R, int Vs, bool MaskedB = false>
  AG_AVX512 static void tile(const MicroTile<T>& t) {
    const T* row[R];
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) row[i] = t.a + i * t.a_rs;

    V acc[R][Vs];
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < Vs; ++v) acc[i][v] = Vec<T>::zero();
    }

    // The last vector of each row holds `last` columns of C (all kLanes but at
    // the right edge).
    const auto last = Vec<T>::first(t.n - (Vs - 1) * kLanes);
    const T* b = t.b;
    for (int64_t k = 0, ak = 0; k < t.kc; ++k, ak += t.a_cs, b += t.b_ks) {
      V bk[Vs];
#pragma GCC unroll 4
      for (int v = 0; v < Vs; ++v) {
        bk[v] = MaskedB && v == Vs - 1 ? Vec<T>::load(b + v * kLanes, last)
                                       : Vec<T>::load(b + v * kLanes);
      }
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const V a = Vec<T>::broadcast(row[i][ak]);
#pragma GCC unroll 4
        for (int v = 0; v < Vs; ++v) acc[i][v] = Vec<T>::fma(a, bk[v], acc[i][v]);
      }
    }

    // C's address and the flag are read once: the stores go through a type
    // that may alias anything, t's fields included, so the compiler would
    // otherwise read them again after each store.
    T* const c0 = t.c;
    const int64_t ldc = t.ldc;
    const bool accumulate = t.accumulate;
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v + 1 < Vs; ++v) {
        T* c = c0 + i * ldc + v * kLanes;
        Vec<T>::store(c, accumulate ? Vec<T>::add(acc[i][v], Vec<T>::load(c)) : acc[i][v]);
      }
      T* c = c0 + i * ldc + (Vs - 1) * kLanes;
      const V sum =
          accumulate ? Vec<T>::add(acc[i][Vs - 1], Vec<T>::load(c, last)) : acc[i][Vs - 1];
      Vec<T>::store(c, last, sum);
    }
  }

  // Packs one sliver of a transposed B for gemm_driver.h's pack_b: `n`
  // (<= kNR) rows of the stored B, b[c * ldb + k] for k < kc, become the
  // columns of sliver[k * width + c]; columns n..width are zeros. Done 16 x 16
  // at a time, transposed in registers: 16 row loads, 64 shuffles and 16
  // stores per 256 values, where a scalar copy takes a load and a store for
  // each (a quarter of the time of attention's Q K^T went to that copy).
  // Float only: float64's transposes are gradcheck-sized.
  static constexpr bool kPacksBTransposed = std::is_same_v<T, float>;
// GCC 12's avx512fintrin.h passes _mm512_undefined_ps() as the unused
// merge source of these shuffles, which -Wmaybe-uninitialized then flags
// (Clang, which the sanitizer passes compile with, has no such warning).
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  AG_AVX512 static void pack_b_transposed(const float* b, int64_t ldb, int64_t kc, int n,
                                          int64_t width,
                                          float* sliver) requires std::is_same_v<T, float> {
    for (int c0 = 0; c0 < width; c0 += 16) {
      for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        const int ks = static_cast<int>(std::min<int64_t>(16, kc - k0));
        const __mmask16 k_mask = Vec<float>::first(ks);
        __m512 r[16];  // r[i] = stored row c0 + i, values k0 .. k0 + 15
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) {
          r[i] = c0 + i < n ? _mm512_maskz_loadu_ps(k_mask, b + (c0 + i) * ldb + k0)
                            : _mm512_setzero_ps();
        }
        // Within each 128-bit lane: pairs of rows interleaved, then quads,
        // so that u[4q + j] holds, in lane L, value 4L + j of rows 4q .. 4q + 3.
        __m512 t[16], u[16];
#pragma GCC unroll 8
        for (int i = 0; i < 16; i += 2) {
          t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
          t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
        }
#pragma GCC unroll 4
        for (int q = 0; q < 16; q += 4) {
          u[q] = _mm512_shuffle_ps(t[q], t[q + 2], 0x44);
          u[q + 1] = _mm512_shuffle_ps(t[q], t[q + 2], 0xEE);
          u[q + 2] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0x44);
          u[q + 3] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
        }
        // Then whole lanes: value 4L + j of all 16 rows is lane L of u[j],
        // u[4 + j], u[8 + j], u[12 + j].
        __m512 out[16];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const __m512 v = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);  // lanes 0, 2 of each
          const __m512 w = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);  // lanes 1, 3
          const __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
          const __m512 w2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
          out[j] = _mm512_shuffle_f32x4(v, v2, 0x88);
          out[8 + j] = _mm512_shuffle_f32x4(v, v2, 0xDD);
          out[4 + j] = _mm512_shuffle_f32x4(w, w2, 0x88);
          out[12 + j] = _mm512_shuffle_f32x4(w, w2, 0xDD);
        }
        for (int k = 0; k < ks; ++k) _mm512_storeu_ps(sliver + (k0 + k) * width + c0, out[k]);
      }
    }
  }
#pragma GCC diagnostic pop

  using TileFn = void (*)(const MicroTile<T>&);
  // kTiles[rows - 1][vectors - 1]
  static constexpr TileFn kTiles[kMR][kVecs] = {
      {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>},
      {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
      {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
      {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
      {tile<5, 1>, tile<5, 2>, tile<5, 3>, tile<5, 4>},
      {tile<6, 1>, tile<6, 2>, tile<6, 3>, tile<6, 4>},
  };

  // gemm_small's last columns when N is not a multiple of the vector: the
  // same tiles, their last vector of B read with a mask. kMaskedTiles[rows - 1][vectors - 1].
  static constexpr TileFn kMaskedTiles[kMR][kVecs] = {
      {tile<1, 1, true>, tile<1, 2, true>, tile<1, 3, true>, tile<1, 4, true>},
      {tile<2, 1, true>, tile<2, 2, true>, tile<2, 3, true>, tile<2, 4, true>},
      {tile<3, 1, true>, tile<3, 2, true>, tile<3, 3, true>, tile<3, 4, true>},
      {tile<4, 1, true>, tile<4, 2, true>, tile<4, 3, true>, tile<4, 4, true>},
      {tile<5, 1, true>, tile<5, 2, true>, tile<5, 3, true>, tile<5, 4, true>},
      {tile<6, 1, true>, tile<6, 2, true>, tile<6, 3, true>, tile<6, 4, true>},
  };

  // A head's 8 float columns (d2l's Transformer with d/H = 8: P V, dS K,
  // P^T dO): one 8-float half vector (ymm) a row. A masked 16-lane vector
  // does the same work with half its lanes idle, and where the FMA units are
  // 256 bits wide (Zen 4 runs a 512-bit FMA as two halves) it costs twice
  // the issue slots. Otherwise tile<R, 1, true>'s loop, for gemm_small.
  // (FMA3 for the 256-bit fused multiply-add: every CPU with AVX-512 has
  // it, and gemm.cpp takes this path only where the CPU reports both)
  template <int R>
  __attribute__((target("avx512f,fma"))) static void half_tile(const MicroTile<T>& t) {
    if constexpr (std::is_same_v<T, float>) {  // (never called for double: see kHalfTiles)
      const float* row[R];
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) row[i] = t.a + i * t.a_rs;
      __m256 acc[R];
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
      const float* b = t.b;
      for (int64_t k = 0, ak = 0; k < t.kc; ++k, ak += t.a_cs, b += t.b_ks) {
        const __m256 bk = _mm256_loadu_ps(b);
#pragma GCC unroll 6
        for (int i = 0; i < R; ++i)
          acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(row[i][ak]), bk, acc[i]);
      }
      float* const c0 = t.c;  // read once, as in tile()
      const int64_t ldc = t.ldc;
      const bool accumulate = t.accumulate;
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        float* c = c0 + i * ldc;
        _mm256_storeu_ps(c, accumulate ? _mm256_add_ps(acc[i], _mm256_loadu_ps(c)) : acc[i]);
      }
    }
  }
  static constexpr int kHalfLanes = kLanes / 2;
  // kHalfTiles[rows - 1] (float only; for double, 8 columns are one whole vector)
  static constexpr TileFn kHalfTiles[kMR] = {half_tile<1>, half_tile<2>, half_tile<3>,
                                             half_tile<4>, half_tile<5>, half_tile<6>};

  static void micro_kernel(const MicroTile<T>& t) {
    run_tile(t, t.m, t.n);
  }

  // The tile for m rows and n columns, m and n passed apart from t: read
  // back from t just after being stored there, they cost a failed store
  // forwarding (GCC compares both with one 8-byte load), a tenth of a tiny
  // product's time.
  static void run_tile(const MicroTile<T>& t, int m, int n) {
    if (m == kMR && n == kNR) {  // a whole tile: the common case, called directly
      tile<kMR, kVecs>(t);
    } else {
      kTiles[m - 1][(n + kLanes - 1) / kLanes - 1](t);
    }
  }

  // ---- tiny products, without the driver (gemm_driver.h's gemm_small) ----
  //
  // The last vector of B's columns, when N is not a multiple of the vector
  // width, is read with a mask (kMaskedTiles), because past the last column
  // there may be no memory. (It was copied, zero-padded, into a buffer on the
  // stack: for a head's 8 columns, as the Transformer's P V has, the copy
  // cost more than the product.) The masked vector is the last of a tile as
  // wide as the columns, so 30 columns take one pass over k with two vectors
  // of B per broadcast of A, where a pass of one whole vector and a second
  // pass for the rest broadcast A twice.
  static constexpr int64_t kSmallMacs = 32 * 1024;  // M N K of one batch item

  static void small_tile(const MicroTile<T>& t, int m, int n) {
    if (n % kLanes == 0) {
      run_tile(t, m, n);
    } else if (std::is_same_v<T, float> && n == kHalfLanes) {  // a head's 8 columns
      kHalfTiles[m - 1](t);
    } else {
      kMaskedTiles[m - 1][(n + kLanes - 1) / kLanes - 1](t);
    }
  }

  // ---- a row or two times a transposed B: dot products ----
  //
  // The additive attention's backward multiplies one row by a transposed B
  // (dL/dweights [1 x 15] = dL/dcontext [1 x 512] times the values
  // [15 x 512]^T, for each of 128 words): C(i, j) is the dot product of A's
  // row i and B's row j, both contiguous in memory. The driver would first
  // transpose B into a packed sliver, a copy as long as the product, and its
  // 6-row tile would use one row; here both rows are read in place, a vector
  // of k at a time (the last one masked), and each sum is added up across
  // the lanes at the end.
  static constexpr int64_t kRowDotsMaxM = 2;

  static bool is_row_dots(const GemmShape& s) {
    return s.trans_b && !s.trans_a && s.M > 0 && s.M <= kRowDotsMaxM && s.N > 0 && s.K >= kLanes &&
           s.M * s.N * s.K <= kSmallMacs;
  }

  AG_AVX512 static void gemm_row_dots(const GemmShape& s, const T* A, const T* B, T* C) {
    constexpr int kCols = 4;  // B rows at a time: 4 x M independent chains of FMAs
    const int m = static_cast<int>(s.M);
    for (int64_t item = 0; item < s.batch; ++item) {
      const T* a = A + item * s.stride_a;
      const T* b = B + item * s.stride_b;
      T* c = C + item * s.stride_c;
      for (int64_t j0 = 0; j0 < s.N; j0 += kCols) {
        // B's rows j0.. (columns of op(B)); past the last, the last again,
        // computed and not stored
        const T* bj[kCols];
        for (int jj = 0; jj < kCols; ++jj) bj[jj] = b + std::min(j0 + jj, s.N - 1) * s.ldb;
        V acc[kRowDotsMaxM][kCols];
        for (int i = 0; i < kRowDotsMaxM; ++i)
          for (int jj = 0; jj < kCols; ++jj) acc[i][jj] = Vec<T>::zero();
        for (int64_t k = 0; k < s.K; k += kLanes) {
          // whole vectors, then the last, partial one
          const auto lanes = Vec<T>::first(static_cast<int>(std::min<int64_t>(kLanes, s.K - k)));
          for (int i = 0; i < m; ++i) {
            const V ak = Vec<T>::load(a + i * s.lda + k, lanes);
#pragma GCC unroll 4
            for (int jj = 0; jj < kCols; ++jj)
              acc[i][jj] = Vec<T>::fma(ak, Vec<T>::load(bj[jj] + k, lanes), acc[i][jj]);
          }
        }
        const int cols = static_cast<int>(std::min<int64_t>(kCols, s.N - j0));
        for (int i = 0; i < m; ++i) {
          for (int jj = 0; jj < cols; ++jj) {
            T& cij = c[i * s.ldc + j0 + jj];
            cij = (s.beta != 0 ? cij : T(0)) + lane_sum<T>(acc[i][jj]);
          }
        }
      }
    }
  }

  static void gemm(const GemmShape& s, const T* A, const T* B, T* C) {
    if (is_row_dots(s)) {
      gemm_row_dots(s, A, B, C);
    } else if (is_small_product<Avx512Kernel>(s)) {
      gemm_small<Avx512Kernel>(s, A, B, C);
    } else {
      gemm_blocked<Avx512Kernel>(s, A, B, C);
    }
  }
};

}  // namespace

void gemm_avx512(const GemmShape& s, const float* A, const float* B, float* C) {
  Avx512Kernel<float>::gemm(s, A, B, C);
}

void gemm_avx512(const GemmShape& s, const double* A, const double* B, double* C) {
  Avx512Kernel<double>::gemm(s, A, B, C);
}

template <typename T>
PackedBPath<T> packed_b_avx512() {
  return packed_b_path<Avx512Kernel<T>>();
}
template PackedBPath<float> packed_b_avx512<float>();
template PackedBPath<double> packed_b_avx512<double>();

}  // namespace ag::kernels::detail

#endif  // __x86_64__
