// vector_lanes.h: what the fast path's float32 row kernels share (vector_math.cpp,
// vector_math_layers.cpp): the branch-free exp and tanh polynomials, the lane
// reductions. Internal to core/src/fast; compiled into each instruction set's
// build of the row kernels (row_kernels.h).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

// From here on, what this file and the file including it define is compiled
// for the instruction set of this build (AG_ROW_SET_AVX2 or _AVX512, from
// CMakeLists.txt). Not what the standard headers above define: their inline
// functions (std::min, a std::vector member) are emitted in every file that
// uses them, and the linker keeps one copy for the whole program; compiled
// for AVX-512, that copy could crash an AVX2 CPU. So the set is switched on
// here, after them, rather than for the whole file with -mavx512f. (Every
// header included after this line must be one already included above.)
#if defined(AG_ROW_SET_AVX512)
#pragma GCC target("avx512f")
#elif defined(AG_ROW_SET_AVX2)
#pragma GCC target("avx2")
#endif

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
// changes the ABI between the instruction sets)
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

// Dropout's hash multiplies 64-bit integers: AVX-512DQ has them as one
// instruction per vector, and x86-64-v4 (the avx512 set) includes it;
// -mavx512f alone would emulate them.
#if defined(AG_ROW_SET_AVX512)
#define AG_DROPOUT_TARGET [[gnu::target("arch=x86-64-v4")]]
#else
#define AG_DROPOUT_TARGET
#endif

}  // namespace ag::detail
