// The fast path's float32 row kernels (vector_math.h): exp, tanh, the softmax
// and masked softmax rows, additive scores, LayerNorm and GRU rows, in SIMD.
// Each is the twin of a plain loop in its op's own file (ops_softmax.cpp's
// forward_row, ops_attention.cpp's forward_row, ...), its reference, which
// reference mode (attograd/reference.h) and float64 run instead.
#include "vector_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "kernels/cpu_features.h"

namespace ag::detail {

namespace {

// e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln 2 / 2.
// ln 2 is split in two (Cody-Waite) so n ln 2 is subtracted without rounding
// error; e^r is a degree-7 polynomial (Cephes' expf coefficients); 2^n is
// built directly in the float's exponent bits, which holds for x in
// [-88, kExpMax]: from x = -88 down n rounds to -127, whose exponent bits are
// all zero, so 2^n and the result are exactly 0. n's integer comes from the
// bits of the rounding sum rather than a float-to-int conversion, which would
// be undefined for NaN (NaN goes through the polynomial and stays NaN).
constexpr float kExpMin = -87.33654f, kExpMax = 88.0f;

inline float exp_in_range(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;       // 1.5 * 2^23: adding it rounds to an integer
  const float rounded = x * kLog2e + kRound;  // kRound + n
  const float n = rounded - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // n + 127 into the exponent field: rounded's low bits are kRound's plus n
  const uint32_t biased =
      std::bit_cast<uint32_t>(rounded) - (std::bit_cast<uint32_t>(kRound) - 127u);
  return er * std::bit_cast<float>(biased << 23);
}

// e^x for any x: below kExpMin 0, above kExpMax +inf, NaN stays NaN.
inline float exp_one(float x) {
  const bool underflow = x < kExpMin;
  const bool overflow = x > kExpMax;
  const bool is_nan = x != x;
  const float y = exp_in_range(is_nan ? 0.0f : (underflow ? kExpMin : (overflow ? kExpMax : x)));
  return is_nan ? x : underflow ? 0.0f : overflow ? std::numeric_limits<float>::infinity() : y;
}

// e^(scale x - shift) where scale x - shift <= 0 (the shift is a row's max
// or log-sum-exp): the softmax's exp without exp_one's overflow and NaN
// selects, only a clamp at -88 (masked -inf scores give exactly 0). The sum
// is kept in the same pass, which saves a pass over the row
// (docs/performance.md: SDPA's forward, before and after).
inline float exp_at_most_zero(float x, float scale, float shift) {
  const float d = x * scale - shift;             // one fma where the target has it
  return exp_in_range(d < -88.0f ? -88.0f : d);  // NaN stays NaN (the comparison is false)
}

// tanh|x| = (1 - t) / (1 + t) with t = e^(-2|x|) in (0, 1]; below |x| = 1/4
// that subtraction cancels, so the odd Taylor series to x^9 takes over there
// (its first dropped term is under 1e-8 relative). -2|x| is clamped to
// kExpMin instead of going through exp_one's special cases: t = e^kExpMin
// already gives exactly 1, and the one division stays one SIMD division (with
// exp_one, GCC splits it per special case: four divisions per vector).
inline float tanh_one(float x) {
  const float a = std::fabs(x);
  const float t = exp_in_range(-2.0f * a > kExpMin ? -2.0f * a : kExpMin);  // NaN -> kExpMin
  const float large = (1.0f - t) / (1.0f + t);
  const float a2 = a * a;
  const float small =
      a * (1.0f + a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315 + a2 * (62.0f / 2835)))));
  const float magnitude = a >= 0.25f ? large : small;  // NaN: small, which is NaN
  return std::copysign(magnitude, x);
}

// Reductions in 16 independent lanes, so the compiler can keep them in one
// SIMD register instead of one serial chain of additions.
constexpr int64_t kLanes = 16;

// The 16 lanes of max_of as one GCC/Clang vector: written as a loop over a
// float[16], like sum_of, GCC 12 keeps the lanes in 16 scalar registers
// (vmaxss) instead of one vmaxps: it vectorises a float max reduction only
// under -ffast-math. Lane j still takes x[j], x[16 + j], ..., as before, and
// `v > lane ? v : lane` skips a NaN exactly as the scalar form does.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

inline float max_of(const float* x, int64_t n) {
  Lanes lane = x[0] - Lanes{};  // x[0] in every lane
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Lanes v;
    std::memcpy(&v, x + k, sizeof v);  // unaligned load
    lane = v > lane ? v : lane;
  }
  float m = x[0];
  for (int64_t j = 0; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
  for (; k < n; ++k) m = x[k] > m ? x[k] : m;
  return m;
}

// sum_k a_k (b == nullptr) or sum_k a_k b_k
inline double sum_of(const float* a, const float* b, int64_t n) {
  float lane[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lane[j] += b ? a[k + j] * b[k + j] : a[k + j];
  double total = 0;
  for (int64_t j = 0; j < kLanes; ++j) total += lane[j];
  for (; k < n; ++k) total += b ? a[k] * b[k] : a[k];
  return total;
}

// The largest and the sum of v's 16 lanes, halved in registers (the upper
// half against the lower, then again): halving a float[16] on the stack,
// each step waits on a store, which in a row of 30 keys costs as much as
// the row's arithmetic. (Which lane wins a comparison with a NaN differs
// from max_of; a row with a NaN score is NaN either way, its exp being NaN.)
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));
typedef float Lanes4 __attribute__((vector_size(4 * sizeof(float))));

inline Lanes4 fold_to_four(const Lanes& v, bool take_max) {
  const Lanes8 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const Lanes8 hi = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Lanes8 v8 = take_max ? (hi > lo ? hi : lo) : hi + lo;
  const Lanes4 lo4 = __builtin_shufflevector(v8, v8, 0, 1, 2, 3);
  const Lanes4 hi4 = __builtin_shufflevector(v8, v8, 4, 5, 6, 7);
  return take_max ? (hi4 > lo4 ? hi4 : lo4) : hi4 + lo4;
}

inline float max_lanes(const Lanes& v) {
  const Lanes4 m = fold_to_four(v, true);
  const float a = m[1] > m[0] ? m[1] : m[0], b = m[3] > m[2] ? m[3] : m[2];
  return b > a ? b : a;
}

inline float add_lanes(const Lanes& v) {
  const Lanes4 s = fold_to_four(v, false);
  return (s[0] + s[2]) + (s[1] + s[3]);
}

// v = x[0..15] (unaligned; by reference: a 64-byte vector returned by value
// changes the ABI between the clones)
inline void load_lanes(Lanes& v, const float* x) {
  std::memcpy(&v, x, sizeof v);
}

// lane[0] + ... + lane[15] of a float[16] of partial sums, added pairwise
// as add_lanes adds them.
inline float sum_lanes(const float* lane) {
  static_assert(kLanes == 16);
  Lanes v;
  load_lanes(v, lane);
  return add_lanes(v);
}

}  // namespace

// Not under ThreadSanitizer: GCC instruments the ifunc resolvers target_clones
// makes, and the dynamic loader runs them before TSan's runtime is up (a
// segfault at load); a TSan build, which checks threading, not speed, takes
// the default loops.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define AG_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
// For 64-bit integer multiplies (dropout's hash): AVX-512DQ has them as one
// instruction per vector, and x86-64-v4 includes it (avx512f alone emulates them).
#define AG_SIMD_CLONES_INT64 __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define AG_SIMD_CLONES
#define AG_SIMD_CLONES_INT64
#endif

AG_SIMD_CLONES void exp_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_one(x[i]);
}

AG_SIMD_CLONES void tanh_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = tanh_one(x[i]);
}

AG_SIMD_CLONES void softmax_row_f32(const float* x, float* y, int64_t n) {
  const float max = max_of(x, n);
  for (int64_t k = 0; k < n; ++k) y[k] = exp_one(x[k] - max);
  const float scale = static_cast<float>(1.0 / sum_of(y, nullptr, n));
  for (int64_t k = 0; k < n; ++k) y[k] *= scale;
}

namespace {

// The masked softmax's rows are copied to a scratch and padded to whole
// vectors (padded_width(n) entries), so that every loop below runs on whole
// vectors: attention's rows are short (11 or 30 keys in d2l's Transformer),
// and on its own such a row is mostly a scalar tail, each tail a chain of
// dependent additions.
inline int64_t padded_width(int64_t n) {
  return (n + kLanes - 1) / kLanes * kLanes;
}

// A row's keep flag j: the flags start at k, `stride` apart; the stride is a
// constant 1 where the kernels below are built for it (one flag per key, as
// sequence_mask makes them), so that their loops over a row run on vectors.
// (read as bytes: GCC 12 does not vectorise a loop that loads bools)
template <bool kUnitStride>
inline bool kept(const bool* k, int64_t stride, int64_t j) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(k);
  return (kUnitStride ? bytes[j] : bytes[j * stride]) != 0;
}

// The forward's scratch, a block of padded rows: 8 KiB (wasm's stack is 64
// KiB), at least one row of kMaxPaddedRow keys.
constexpr int64_t kBlockFloats = 2048;
static_assert(kBlockFloats >= kMaxPaddedRow && kMaxPaddedRow % kLanes == 0);

// The middle pass of both masked softmax kernels over `count` padded rows
// of a block: row = e^(row - max), summed in 16 lanes, scale = 1 / the sum.
[[gnu::always_inline]] inline void exp_block_rows(float* block, int64_t count, int64_t width,
                                                  const float* max, float* scale) {
  for (int64_t i = 0; i < count; ++i) {
    float* row = block + i * width;
    Lanes sum_lane{}, v;
    for (int64_t k = 0; k < width; k += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) row[k + l] = exp_at_most_zero(row[k + l], 1.0f, max[i]);
      load_lanes(v, row + k);
      sum_lane += v;
    }
    scale[i] = 1.0f / add_lanes(sum_lane);
  }
}

// (always_inline: a call would run the default clone's code, SSE2, from the
// AVX-512 and AVX2 clones below)
template <bool kUnitStride>
[[gnu::always_inline]] inline void masked_softmax_rows(const float* x, const bool* keep,
                                                       const int64_t* keep_offset,
                                                       int64_t keep_stride, float* y, int64_t rows,
                                                       int64_t n, float fill, bool zero_masked) {
  // A block of rows at a time, one pass per step: within a pass the rows do
  // not wait on each other, so the core overlaps one row's reductions (each a
  // chain of dependent steps) with the next row's loads.
  const int64_t width = padded_width(n);
  const int64_t block_rows = kBlockFloats / width;
  alignas(64) float block[kBlockFloats];
  float max[kBlockFloats / kLanes], scale[kBlockFloats / kLanes];
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t count = std::min(block_rows, rows - r0);
    // block row i = where(keep, x, fill), padded with -inf: a padding entry's
    // weight is exactly 0 (exp_at_most_zero clamps -inf to -88), even in a row
    // whose every key is masked, where the fill is the max.
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      float* row = block + i * width;
      // (x read whatever the flag: a load under a condition stays a scalar branch)
      for (int64_t j = 0; j < n; ++j) {
        const float v = xr[j];
        row[j] = kept<kUnitStride>(kr, keep_stride, j) ? v : fill;
      }
      for (int64_t j = n; j < width; ++j) row[j] = -std::numeric_limits<float>::infinity();
      Lanes max_lane, v;
      load_lanes(max_lane, row);
      for (int64_t k = kLanes; k < width; k += kLanes) {
        load_lanes(v, row + k);
        max_lane = v > max_lane ? v : max_lane;
      }
      max[i] = max_lanes(max_lane);
    }
    exp_block_rows(block, count, width, max, scale);
    for (int64_t i = 0; i < count; ++i) {
      const float* row = block + i * width;
      const bool* kr = keep + keep_offset[r0 + i];
      float* yr = y + (r0 + i) * n;
      if (zero_masked)
        for (int64_t j = 0; j < n; ++j) {
          const float w = row[j] * scale[i];
          yr[j] = kept<kUnitStride>(kr, keep_stride, j) ? w : 0.0f;
        }
      else
        for (int64_t j = 0; j < n; ++j) yr[j] = row[j] * scale[i];
    }
  }
}

template <bool kUnitStride>
[[gnu::always_inline]] inline void masked_softmax_backward_rows(
    const float* y, const float* g, const bool* keep, const int64_t* keep_offset,
    int64_t keep_stride, float* dx, int64_t rows, int64_t n, bool zero_masked) {
  // As the forward: each row's sum first, for a block of rows, then their dx.
  const int64_t width = padded_width(n);
  constexpr int64_t kBlockRows = 128;
  alignas(64) float g_row[kMaxPaddedRow], y_row[kMaxPaddedRow];
  float sum[kBlockRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0);
    for (int64_t i = 0; i < count; ++i) {
      const float *yr = y + (r0 + i) * n, *gr = g + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      // g~ = zero_masked ? keep * g : g, and y, padded with zeros (no term)
      if (zero_masked)
        for (int64_t j = 0; j < n; ++j) {
          const float v = gr[j];
          g_row[j] = kept<kUnitStride>(kr, keep_stride, j) ? v : 0.0f;
        }
      else
        for (int64_t j = 0; j < n; ++j) g_row[j] = gr[j];
      for (int64_t j = 0; j < n; ++j) y_row[j] = yr[j];
      for (int64_t j = n; j < width; ++j) g_row[j] = y_row[j] = 0.0f;
      // sum = sum_j g~_j y_j, in 16 lanes
      Lanes sum_lane{}, gv, yv;
      for (int64_t k = 0; k < width; k += kLanes) {
        load_lanes(gv, g_row + k);
        load_lanes(yv, y_row + k);
        sum_lane += gv * yv;
      }
      sum[i] = add_lanes(sum_lane);
    }
    // dx = keep * y * (g - sum): where keep is true, g~ is g
    for (int64_t i = 0; i < count; ++i) {
      const float *yr = y + (r0 + i) * n, *gr = g + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      float* dxr = dx + (r0 + i) * n;
      for (int64_t j = 0; j < n; ++j) {
        const float d = yr[j] * (gr[j] - sum[i]);
        dxr[j] = kept<kUnitStride>(kr, keep_stride, j) ? d : 0.0f;
      }
    }
  }
}

}  // namespace

AG_SIMD_CLONES void masked_softmax_rows_portable_f32(const float* x, const bool* keep,
                                                     const int64_t* keep_offset,
                                                     int64_t keep_stride, float* y, int64_t rows,
                                                     int64_t n, float fill, bool zero_masked) {
  if (keep_stride == 1)
    masked_softmax_rows<true>(x, keep, keep_offset, 1, y, rows, n, fill, zero_masked);
  else
    masked_softmax_rows<false>(x, keep, keep_offset, keep_stride, y, rows, n, fill, zero_masked);
}

AG_SIMD_CLONES void masked_softmax_backward_rows_portable_f32(
    const float* y, const float* g, const bool* keep, const int64_t* keep_offset,
    int64_t keep_stride, float* dx, int64_t rows, int64_t n, bool zero_masked) {
  if (keep_stride == 1)
    masked_softmax_backward_rows<true>(y, g, keep, keep_offset, 1, dx, rows, n, zero_masked);
  else
    masked_softmax_backward_rows<false>(y, g, keep, keep_offset, keep_stride, dx, rows, n,
                                        zero_masked);
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

// The masked softmax's rows with AVX-512 masked loads and stores. The
// portable loops above copy each row into a padded scratch row and back,
// one entry at a time at the row's ends, and for d2l's rows of 11 or 30 keys
// those ends are most of the work. Here a row is read and written as whole
// vectors: lane j of vector k holds key 16k + j, and the lanes past the
// row's end are switched off by a mask (`in`), so they are neither read nor
// written. The keep flags become a mask the same way: 16 flag bytes loaded
// under `in` and tested against zero (AVX-512BW), or one flag for the row
// (keep_stride 0). The arithmetic is the portable kernel's: the same exp
// pass (exp_block_rows, which GCC vectorises here), the same lane
// reductions (max_lanes, add_lanes), the same block of rows per pass, so
// each row's reductions overlap the next row's loads.
#define AG_AVX512_ROWS [[gnu::target("avx512f,avx512bw,avx512vl")]]

// The lanes of vector k that hold keys of a row of n: 16, or the n - k left.
AG_AVX512_ROWS inline __mmask16 lanes_in_row(int64_t n, int64_t k) {
  const int64_t left = n - k;
  return left >= kLanes ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}

// The kept lanes among `in`: flags k .. k + 15 of a row's flags (stride 1),
// or the row's one flag (stride 0).
AG_AVX512_ROWS inline __mmask16 kept_lanes(const bool* flags, int64_t stride, int64_t k,
                                           __mmask16 in) {
  if (stride == 0) return *reinterpret_cast<const unsigned char*>(flags) != 0 ? in : 0;
  const __m128i bytes = _mm_maskz_loadu_epi8(in, flags + k);
  return _mm_test_epi8_mask(bytes, bytes);
}

AG_AVX512_ROWS void masked_softmax_rows_avx512(const float* x, const bool* keep,
                                               const int64_t* keep_offset, int64_t keep_stride,
                                               float* y, int64_t rows, int64_t n, float fill,
                                               bool zero_masked) {
  const int64_t width = padded_width(n);
  const int64_t block_rows = kBlockFloats / width;
  alignas(64) float block[kBlockFloats];
  float max[kBlockFloats / kLanes], scale[kBlockFloats / kLanes];
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512 fill_v = _mm512_set1_ps(fill);
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t count = std::min(block_rows, rows - r0);
    // block row i = where(keep, x, fill), -inf past the row's end (weight 0)
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      float* row = block + i * width;
      __m512 max_v = minus_inf;
      for (int64_t k = 0; k < width; k += kLanes) {
        const __mmask16 in = lanes_in_row(n, k);
        const __mmask16 masked = in & ~kept_lanes(kr, keep_stride, k, in);
        const __m512 v =
            _mm512_mask_mov_ps(_mm512_mask_loadu_ps(minus_inf, in, xr + k), masked, fill_v);
        _mm512_store_ps(row + k, v);
        max_v = v > max_v ? v : max_v;  // as the portable kernel, NaN included
      }
      max[i] = max_lanes(max_v);
    }
    exp_block_rows(block, count, width, max, scale);
    // y = row * scale (0 where masked, if zero_masked), the row's lanes only
    for (int64_t i = 0; i < count; ++i) {
      const float* row = block + i * width;
      const bool* kr = keep + keep_offset[r0 + i];
      float* yr = y + (r0 + i) * n;
      const __m512 scale_v = _mm512_set1_ps(scale[i]);
      for (int64_t k = 0; k < width; k += kLanes) {
        const __mmask16 in = lanes_in_row(n, k);
        const __mmask16 out = zero_masked ? kept_lanes(kr, keep_stride, k, in) : in;
        _mm512_mask_storeu_ps(yr + k, in,
                              _mm512_maskz_mul_ps(out, _mm512_load_ps(row + k), scale_v));
      }
    }
  }
}

AG_AVX512_ROWS void masked_softmax_backward_rows_avx512(const float* y, const float* g,
                                                        const bool* keep,
                                                        const int64_t* keep_offset,
                                                        int64_t keep_stride, float* dx,
                                                        int64_t rows, int64_t n, bool zero_masked) {
  // As the portable kernel: each row's sum first, for a block of rows, then their dx.
  constexpr int64_t kBlockRows = 128;
  float sum[kBlockRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0);
    // sum = sum_j g~_j y_j, g~ = zero_masked ? keep * g : g
    for (int64_t i = 0; i < count; ++i) {
      const float *yr = y + (r0 + i) * n, *gr = g + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      __m512 sum_v = _mm512_setzero_ps();
      for (int64_t k = 0; k < n; k += kLanes) {
        const __mmask16 in = lanes_in_row(n, k);
        const __mmask16 terms = zero_masked ? kept_lanes(kr, keep_stride, k, in) : in;
        sum_v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(terms, gr + k),
                                _mm512_maskz_loadu_ps(terms, yr + k), sum_v);
      }
      sum[i] = add_lanes(sum_v);
    }
    // dx = keep * y * (g - sum)
    for (int64_t i = 0; i < count; ++i) {
      const float *yr = y + (r0 + i) * n, *gr = g + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      float* dxr = dx + (r0 + i) * n;
      const __m512 sum_v = _mm512_set1_ps(sum[i]);
      for (int64_t k = 0; k < n; k += kLanes) {
        const __mmask16 in = lanes_in_row(n, k);
        const __mmask16 kept = kept_lanes(kr, keep_stride, k, in);
        const __m512 d = _mm512_mul_ps(_mm512_maskz_loadu_ps(kept, yr + k),
                                       _mm512_sub_ps(_mm512_maskz_loadu_ps(kept, gr + k), sum_v));
        _mm512_mask_storeu_ps(dxr + k, in, d);
      }
    }
  }
}

#undef AG_AVX512_ROWS
}  // namespace
#endif

bool row_kernel_available(RowKernel kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kernel == RowKernel::Avx512) return kernels::detail::cpu_features().avx512bw;
#endif
  return kernel != RowKernel::Avx512;
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

// The AVX-512 kernel for flags of stride 0 or 1 (what sequence_mask and
// one flag per row make), where the CPU has it; the portable loops otherwise.
bool use_avx512_rows(RowKernel kernel, int64_t keep_stride) {
  if (kernel == RowKernel::Portable || (keep_stride != 0 && keep_stride != 1)) return false;
  return row_kernel_available(RowKernel::Avx512);
}

}  // namespace
#endif

void masked_softmax_rows_f32(const float* x, const bool* keep, const int64_t* keep_offset,
                             int64_t keep_stride, float* y, int64_t rows, int64_t n, float fill,
                             bool zero_masked, [[maybe_unused]] RowKernel kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (use_avx512_rows(kernel, keep_stride))
    return masked_softmax_rows_avx512(x, keep, keep_offset, keep_stride, y, rows, n, fill,
                                      zero_masked);
#endif
  masked_softmax_rows_portable_f32(x, keep, keep_offset, keep_stride, y, rows, n, fill,
                                   zero_masked);
}

void masked_softmax_backward_rows_f32(const float* y, const float* g, const bool* keep,
                                      const int64_t* keep_offset, int64_t keep_stride, float* dx,
                                      int64_t rows, int64_t n, bool zero_masked,
                                      [[maybe_unused]] RowKernel kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (use_avx512_rows(kernel, keep_stride))
    return masked_softmax_backward_rows_avx512(y, g, keep, keep_offset, keep_stride, dx, rows, n,
                                               zero_masked);
#endif
  masked_softmax_backward_rows_portable_f32(y, g, keep, keep_offset, keep_stride, dx, rows, n,
                                            zero_masked);
}

AG_SIMD_CLONES void softmax_backward_given_f32(const float* p, const float* dp, float d, float* dz,
                                               int64_t n) {
  for (int64_t k = 0; k < n; ++k) dz[k] = p[k] * (dp[k] - d);
}

AG_SIMD_CLONES void softmax_backward_row_f32(const float* y, const float* g, float* dx, int64_t n) {
  softmax_backward_given_f32(y, g, static_cast<float>(sum_of(g, y, n)), dx, n);
}

AG_SIMD_CLONES double sum_f32(const float* x, int64_t n) {
  return double_lane_sum(x, n, [](float v) { return static_cast<double>(v); });
}

AG_SIMD_CLONES void column_sums_f32(const float* x, int64_t rows, int64_t cols, double* acc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) acc[j] += static_cast<double>(x[r * cols + j]);
}

AG_SIMD_CLONES double dot_f32(const float* a, const float* b, int64_t n) {
  return sum_of(a, b, n);
}

AG_SIMD_CLONES float max_f32(const float* x, int64_t n) {
  return max_of(x, n);
}

AG_SIMD_CLONES double exp_affine_sum_f32(float* x, int64_t n, float scale, float shift) {
  float lane[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int64_t j = 0; j < kLanes; ++j)
      lane[j] += x[k + j] = exp_at_most_zero(x[k + j], scale, shift);
  double total = 0;
  for (int64_t j = 0; j < kLanes; ++j) total += lane[j];
  for (; k < n; ++k) total += x[k] = exp_at_most_zero(x[k], scale, shift);
  return total;
}

AG_SIMD_CLONES_INT64 void dropout_f32(const float* __restrict x, float* __restrict y,
                                      float* __restrict m, int64_t n, uint64_t seed,
                                      uint64_t drop_below, float scale) {
  dropout_loop(x, y, m, n, seed, drop_below, scale);
}

AG_SIMD_CLONES void additive_scores_row_f32(const float* q, const float* k, const float* w,
                                            float* s, float* __restrict t, int64_t tk, int64_t h) {
  for (int64_t j = 0; j < tk; ++j) {
    const float* kj = k + j * h;
    float lane[kLanes] = {};
    int64_t x = 0;
    if (t) {  // the same sums, each tanh also written to t[j, x]
      float* tj = t + j * h;
      for (; x + kLanes <= h; x += kLanes)
        for (int64_t l = 0; l < kLanes; ++l)
          lane[l] += w[x + l] * (tj[x + l] = tanh_one(q[x + l] + kj[x + l]));
      float total = sum_lanes(lane);
      for (; x < h; ++x) total += w[x] * (tj[x] = tanh_one(q[x] + kj[x]));
      s[j] = total;
      continue;
    }
    for (; x + kLanes <= h; x += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lane[l] += w[x + l] * tanh_one(q[x + l] + kj[x + l]);
    float total = sum_lanes(lane);
    for (; x < h; ++x) total += w[x] * tanh_one(q[x] + kj[x]);
    s[j] = total;
  }
}

AG_SIMD_CLONES void additive_scores_backward_row_f32(const float* q, const float* k, const float* w,
                                                     const float* t_kept, const float* g,
                                                     float* __restrict dq, float* __restrict dk,
                                                     float* __restrict dw, int64_t tk, int64_t h) {
  for (int64_t x = 0; x < h; ++x) dq[x] = 0;
  for (int64_t j = 0; j < tk; ++j) {
    const float* kj = k + j * h;
    float* dkj = dk + j * h;
    const float gj = g[j];
    if (t_kept) {  // t read back instead of recomputed
      const float* tj = t_kept + j * h;
      for (int64_t x = 0; x < h; ++x) {
        const float t = tj[x];
        const float u = gj * (1.0f - t * t);
        dq[x] += u;
        dkj[x] += w[x] * u;
        dw[x] += gj * t;
      }
      continue;
    }
    for (int64_t x = 0; x < h; ++x) {
      const float t = tanh_one(q[x] + kj[x]);
      const float u = gj * (1.0f - t * t);  // dL/d(q + k) before the factor w
      dq[x] += u;
      dkj[x] += w[x] * u;
      dw[x] += gj * t;
    }
  }
  for (int64_t x = 0; x < h; ++x) dq[x] *= w[x];
}

AG_SIMD_CLONES void layer_norm_rows_f32(const float* x, const float* w, const float* b, float* y,
                                        int64_t rows, int64_t n, double eps, double* mean,
                                        double* rstd) {
  // A block of rows at a time, one pass per step, as the masked softmax: a
  // row's steps wait on each other (its mean, then its variance, then a
  // square root and a division, tens of cycles), the block's rows do not.
  constexpr int64_t kBlockRows = 64;
  double ss[kBlockRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0);
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      mean[r0 + i] = sum_of(xr, nullptr, n) / static_cast<double>(n);
      const float m = static_cast<float>(mean[r0 + i]);
      // two passes: sum((x - mean)^2) does not cancel as sum(x^2) - N mean^2
      // would (the lanes in one vector register: a float[16] that a loop fills
      // one entry at a time and add_lanes then loads as a vector stalls on the loads)
      Lanes lane{}, v;
      int64_t k = 0;
      for (; k + kLanes <= n; k += kLanes) {
        load_lanes(v, xr + k);
        v -= m;
        lane += v * v;
      }
      ss[i] = add_lanes(lane);
      for (; k < n; ++k) ss[i] += static_cast<double>((xr[k] - m) * (xr[k] - m));
    }
    for (int64_t i = 0; i < count; ++i)
      rstd[r0 + i] = 1.0 / std::sqrt(ss[i] / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      float* yr = y + (r0 + i) * n;
      const float m = static_cast<float>(mean[r0 + i]), s = static_cast<float>(rstd[r0 + i]);
      if (w && b)
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s * w[j] + b[j];
      else
        for (int64_t j = 0; j < n; ++j)
          yr[j] = (xr[j] - m) * s * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
  }
}

AG_SIMD_CLONES void layer_norm_backward_rows_f32(const float* x, const float* w, const float* g,
                                                 float* dx, int64_t rows, int64_t n,
                                                 const double* mean, const double* rstd) {
  const float N = static_cast<float>(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n, *gr = g + r * n;
    float* dxr = dx + r * n;
    const float m = static_cast<float>(mean[r]), s = static_cast<float>(rstd[r]);
    // ĝ = g w (written to dx first), then sum ĝ and sum ĝ x̂ in 16 lanes each
    if (w)
      for (int64_t j = 0; j < n; ++j) dxr[j] = gr[j] * w[j];
    else
      for (int64_t j = 0; j < n; ++j) dxr[j] = gr[j];
    Lanes lane_g{}, lane_gx{}, gv, xv;
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes) {
      load_lanes(gv, dxr + k);
      load_lanes(xv, xr + k);
      lane_g += gv;
      lane_gx += gv * ((xv - m) * s);
    }
    float sum_g = add_lanes(lane_g), sum_gx = add_lanes(lane_gx);
    for (; k < n; ++k) {
      sum_g += dxr[k];
      sum_gx += dxr[k] * ((xr[k] - m) * s);
    }
    const float scale = s / N;
    for (int64_t j = 0; j < n; ++j)
      dxr[j] = scale * (N * dxr[j] - sum_g - (xr[j] - m) * s * sum_gx);
  }
}

AG_SIMD_CLONES void layer_norm_affine_grads_f32(const float* x, const float* g, int64_t rows,
                                                int64_t n, const double* mean, const double* rstd,
                                                double* __restrict sw, double* __restrict sb) {
  layer_norm_affine_grads(x, g, rows, n, mean, rstd, sw, sb);
}

AG_SIMD_CLONES void gru_cell_rows_f32(const float* gi, const float* gh, const float* h,
                                      float* __restrict h_next, float* __restrict gates,
                                      int64_t rows, int64_t H) {
  for (int64_t b = 0; b < rows; ++b) {
    const float *gib = gi + b * 3 * H, *ghb = gh + b * 3 * H, *hb = h + b * H;
    float *out = h_next + b * H, *gate = gates + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      // sigmoid(a) = 1 / (1 + e^-a); e^+big = inf gives 0
      const float r = 1 / (1 + exp_one(-(gib[j] + ghb[j])));
      const float z = 1 / (1 + exp_one(-(gib[H + j] + ghb[H + j])));
      const float n = tanh_one(gib[2 * H + j] + r * ghb[2 * H + j]);
      out[j] = (1 - z) * n + z * hb[j];
      gate[j] = r;
      gate[H + j] = z;
      gate[2 * H + j] = n;
    }
  }
}

AG_SIMD_CLONES void gru_cell_backward_rows_f32(const float* g, const float* gh_n, int64_t ld_n,
                                               const float* h, const float* gates,
                                               float* __restrict dgi, float* __restrict dgh,
                                               float* __restrict dh, int64_t rows, int64_t H) {
  gru_cell_backward_loop(g, gh_n, ld_n, h, gates, dgi, dgh, dh, rows, H);
}

// Adam's loop with contraction off: in the AVX2 and AVX-512 clones GCC would
// otherwise fuse m * beta1 + (1 - beta1) * g into one rounding, and a step's
// result would depend on the CPU (the first version did: the seq2seq's
// held-out accuracy on sort moved from 99.1% to 96.8% with it).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
template <typename T>
void adam_loop(T* __restrict w, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
               const AdamCoefficients<T>& c) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t j = 0; j < n; ++j) {
    m[j] = m[j] * c.beta1 + c.one_minus_beta1 * g[j];
    v[j] = v[j] * c.beta2 + c.one_minus_beta2 * g[j] * g[j];
    const T denom = std::sqrt(v[j]) / c.bias_correction2_sqrt + c.eps;
    w[j] -= c.step_size * (m[j] / denom);
  }
}

AG_SIMD_CLONES void adam_f32(float* w, const float* g, float* m, float* v, int64_t n,
                             const AdamCoefficients<float>& c) {
  adam_loop(w, g, m, v, n, c);
}

void adam_f64(double* w, const double* g, double* m, double* v, int64_t n,
              const AdamCoefficients<double>& c) {
  adam_loop(w, g, m, v, n, c);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

AG_SIMD_CLONES double sum_squares_f32(const float* x, int64_t n) {
  return sum_squares_loop(x, n);
}

}  // namespace ag::detail
