// The fast path's float32 row kernels (vector_math.h) for elementwise ops,
// softmax and sums: exp, tanh, the softmax and masked softmax rows, the
// streamed attention's rows, dropout, in SIMD (the layers' rows are in
// vector_math_layers.cpp). Each is the twin of a plain loop in its op's own
// file (ops_softmax.cpp's forward_row, ops_unary.cpp's std::exp, ...), its
// reference, which reference mode (attograd/reference.h) and float64 run.
#include "vector_math.h"

#include "vector_lanes.h"

// Compiled once per instruction set (row_kernels.h), in its namespace.
namespace ag::detail::AG_ROW_SET {

void exp_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_one(x[i]);
}

void tanh_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = tanh_one(x[i]);
}

void softmax_row_f32(const float* x, float* y, int64_t n) {
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

void masked_softmax_rows_portable_f32(const float* x, const bool* keep, const int64_t* keep_offset,
                                      int64_t keep_stride, float* y, int64_t rows, int64_t n,
                                      float fill, bool zero_masked) {
  if (keep_stride == 1)
    masked_softmax_rows<true>(x, keep, keep_offset, 1, y, rows, n, fill, zero_masked);
  else
    masked_softmax_rows<false>(x, keep, keep_offset, keep_stride, y, rows, n, fill, zero_masked);
}

void masked_softmax_backward_rows_portable_f32(const float* y, const float* g, const bool* keep,
                                               const int64_t* keep_offset, int64_t keep_stride,
                                               float* dx, int64_t rows, int64_t n,
                                               bool zero_masked) {
  if (keep_stride == 1)
    masked_softmax_backward_rows<true>(y, g, keep, keep_offset, 1, dx, rows, n, zero_masked);
  else
    masked_softmax_backward_rows<false>(y, g, keep, keep_offset, keep_stride, dx, rows, n,
                                        zero_masked);
}

#if defined(AG_ROW_SET_AVX512)
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

AG_AVX512_ROWS void masked_softmax_rows_vectors(const float* x, const bool* keep,
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

AG_AVX512_ROWS void masked_softmax_backward_rows_vectors(
    const float* y, const float* g, const bool* keep, const int64_t* keep_offset,
    int64_t keep_stride, float* dx, int64_t rows, int64_t n, bool zero_masked) {
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
#elif defined(AG_ROW_SET_AVX2)
namespace {

// The masked softmax's rows with AVX2 masked loads and stores: the portable
// loops' arithmetic lane for lane (key 16k + j of a row in lane j of block
// vector k, here as two halves of 8), so the same numbers, but a row's ends
// read and written under a mask as whole vectors instead of one entry at a
// time. AVX2 has no byte masks: a row's keep flags are read 8 bytes at a time
// (those past the row's end never) and widened to 32-bit lanes (VPMOVZXBD).
constexpr int64_t kHalf = 8;

// All ones in the lanes of the 8 at key k that hold keys of a row of n.
inline __m256i lanes_in_row(int64_t n, int64_t k) {
  const int32_t left = static_cast<int32_t>(std::min<int64_t>(n - k, kHalf));  // <= 0: none
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The kept lanes among `in`: flags k .. k + 7 of a row's n flags (stride 1),
// or the row's one flag (stride 0).
inline __m256i kept_lanes(const bool* flags, int64_t stride, int64_t n, int64_t k, __m256i in) {
  if (stride == 0)
    return *reinterpret_cast<const unsigned char*>(flags) != 0 ? in : _mm256_setzero_si256();
  uint64_t bytes = 0;
  if (n - k >= kHalf)
    std::memcpy(&bytes, flags + k, kHalf);
  else if (n - k > 0)
    std::memcpy(&bytes, flags + k, static_cast<size_t>(n - k));
  const __m256i wide = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(bytes)));
  return _mm256_andnot_si256(_mm256_cmpeq_epi32(wide, _mm256_setzero_si256()), in);
}

// The 16 lanes of two halves (by reference: a 64-byte vector returned by
// value changes the ABI between the instruction sets).
inline void join_halves(Lanes& v, __m256 lo, __m256 hi) {
  v = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

void masked_softmax_rows_vectors(const float* x, const bool* keep, const int64_t* keep_offset,
                                 int64_t keep_stride, float* y, int64_t rows, int64_t n, float fill,
                                 bool zero_masked) {
  const int64_t width = padded_width(n);
  const int64_t block_rows = kBlockFloats / width;
  alignas(64) float block[kBlockFloats];
  float max[kBlockFloats / kLanes], scale[kBlockFloats / kLanes];
  const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 fill_v = _mm256_set1_ps(fill);
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t count = std::min(block_rows, rows - r0);
    // block row i = where(keep, x, fill), -inf past the row's end (weight 0)
    for (int64_t i = 0; i < count; ++i) {
      const float* xr = x + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      float* row = block + i * width;
      __m256 max_half[2] = {minus_inf, minus_inf};
      for (int64_t k = 0; k < width; k += kLanes) {
        for (int half = 0; half < 2; ++half) {
          const int64_t at = k + half * kHalf;
          const __m256i in = lanes_in_row(n, at);
          const __m256i kept = kept_lanes(kr, keep_stride, n, at, in);
          const __m256 kept_or_fill =
              _mm256_blendv_ps(fill_v, _mm256_maskload_ps(xr + at, in), _mm256_castsi256_ps(kept));
          const __m256 v = _mm256_blendv_ps(minus_inf, kept_or_fill, _mm256_castsi256_ps(in));
          _mm256_store_ps(row + at, v);
          max_half[half] = v > max_half[half] ? v : max_half[half];
        }
      }
      Lanes joined;
      join_halves(joined, max_half[0], max_half[1]);
      max[i] = max_lanes(joined);
    }
    exp_block_rows(block, count, width, max, scale);
    // y = row * scale (0 where masked, if zero_masked), the row's lanes only
    for (int64_t i = 0; i < count; ++i) {
      const float* row = block + i * width;
      const bool* kr = keep + keep_offset[r0 + i];
      float* yr = y + (r0 + i) * n;
      const __m256 scale_v = _mm256_set1_ps(scale[i]);
      for (int64_t k = 0; k < n; k += kHalf) {
        const __m256i in = lanes_in_row(n, k);
        const __m256i out = zero_masked ? kept_lanes(kr, keep_stride, n, k, in) : in;
        const __m256 w = _mm256_mul_ps(_mm256_load_ps(row + k), scale_v);
        _mm256_maskstore_ps(yr + k, in, _mm256_and_ps(w, _mm256_castsi256_ps(out)));
      }
    }
  }
}

void masked_softmax_backward_rows_vectors(const float* y, const float* g, const bool* keep,
                                          const int64_t* keep_offset, int64_t keep_stride,
                                          float* dx, int64_t rows, int64_t n, bool zero_masked) {
  // As the portable kernel: each row's sum first, for a block of rows, then their dx.
  constexpr int64_t kBlockRows = 128;
  float sum[kBlockRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0);
    // sum = sum_j g~_j y_j, g~ = zero_masked ? keep * g : g, in 16 lanes
    for (int64_t i = 0; i < count; ++i) {
      const float *yr = y + (r0 + i) * n, *gr = g + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      __m256 sum_half[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int64_t k = 0; k < n; k += kLanes) {
        for (int half = 0; half < 2; ++half) {
          const int64_t at = k + half * kHalf;
          const __m256i in = lanes_in_row(n, at);
          const __m256i terms = zero_masked ? kept_lanes(kr, keep_stride, n, at, in) : in;
          const __m256 product =
              _mm256_mul_ps(_mm256_maskload_ps(gr + at, terms), _mm256_maskload_ps(yr + at, in));
          sum_half[half] = _mm256_add_ps(sum_half[half], product);
        }
      }
      Lanes joined;
      join_halves(joined, sum_half[0], sum_half[1]);
      sum[i] = add_lanes(joined);
    }
    // dx = keep * y * (g - sum)
    for (int64_t i = 0; i < count; ++i) {
      const float *yr = y + (r0 + i) * n, *gr = g + (r0 + i) * n;
      const bool* kr = keep + keep_offset[r0 + i];
      float* dxr = dx + (r0 + i) * n;
      const __m256 sum_v = _mm256_set1_ps(sum[i]);
      for (int64_t k = 0; k < n; k += kHalf) {
        const __m256i in = lanes_in_row(n, k);
        const __m256i kept = kept_lanes(kr, keep_stride, n, k, in);
        const __m256 d = _mm256_mul_ps(_mm256_maskload_ps(yr + k, in),
                                       _mm256_sub_ps(_mm256_maskload_ps(gr + k, in), sum_v));
        _mm256_maskstore_ps(dxr + k, in, _mm256_and_ps(d, _mm256_castsi256_ps(kept)));
      }
    }
  }
}

}  // namespace
#endif

// The whole-vector kernels above, where this set has them, for flags of
// stride 0 or 1 (what sequence_mask and one flag per row make); the portable
// loops otherwise.
[[maybe_unused]] inline bool use_vector_rows(RowKernel kernel, int64_t keep_stride) {
  return kernel == RowKernel::Best && (keep_stride == 0 || keep_stride == 1);
}

void masked_softmax_rows_f32(const float* x, const bool* keep, const int64_t* keep_offset,
                             int64_t keep_stride, float* y, int64_t rows, int64_t n, float fill,
                             bool zero_masked, [[maybe_unused]] RowKernel kernel) {
#if defined(AG_ROW_SET_AVX2) || defined(AG_ROW_SET_AVX512)
  if (use_vector_rows(kernel, keep_stride))
    return masked_softmax_rows_vectors(x, keep, keep_offset, keep_stride, y, rows, n, fill,
                                       zero_masked);
#endif
  masked_softmax_rows_portable_f32(x, keep, keep_offset, keep_stride, y, rows, n, fill,
                                   zero_masked);
}

void masked_softmax_backward_rows_f32(const float* y, const float* g, const bool* keep,
                                      const int64_t* keep_offset, int64_t keep_stride, float* dx,
                                      int64_t rows, int64_t n, bool zero_masked,
                                      [[maybe_unused]] RowKernel kernel) {
#if defined(AG_ROW_SET_AVX2) || defined(AG_ROW_SET_AVX512)
  if (use_vector_rows(kernel, keep_stride))
    return masked_softmax_backward_rows_vectors(y, g, keep, keep_offset, keep_stride, dx, rows, n,
                                                zero_masked);
#endif
  masked_softmax_backward_rows_portable_f32(y, g, keep, keep_offset, keep_stride, dx, rows, n,
                                            zero_masked);
}

void softmax_backward_given_f32(const float* p, const float* dp, float d, float* dz, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dz[k] = p[k] * (dp[k] - d);
}

void softmax_backward_row_f32(const float* y, const float* g, float* dx, int64_t n) {
  softmax_backward_given_f32(y, g, static_cast<float>(sum_of(g, y, n)), dx, n);
}

double sum_f32(const float* x, int64_t n) {
  return double_lane_sum(x, n, [](float v) { return static_cast<double>(v); });
}

void column_sums_f32(const float* x, int64_t rows, int64_t cols, double* acc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) acc[j] += static_cast<double>(x[r * cols + j]);
}

double dot_f32(const float* a, const float* b, int64_t n) {
  return sum_of(a, b, n);
}

float max_f32(const float* x, int64_t n) {
  return max_of(x, n);
}

double exp_affine_sum_f32(float* x, int64_t n, float scale, float shift) {
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

AG_DROPOUT_TARGET void dropout_f32(const float* __restrict x, float* __restrict y,
                                   float* __restrict m, int64_t n, uint64_t seed,
                                   uint64_t drop_below, float scale) {
  dropout_loop(x, y, m, n, seed, drop_below, scale);
}

}  // namespace ag::detail::AG_ROW_SET
