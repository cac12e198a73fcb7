// The blocked GEMM driver shared by every fast path (scalar, AVX2, AVX-512,
// NEON). Each path supplies only a micro-kernel: the code that computes one
// MR x NR tile of C in registers. Everything else is here, compiled for the
// baseline ISA (only the micro-kernels carry target attributes).
//
// C (per batch item, per thread block) is computed as:
//
//   for ic in rows, step MC                    (only a packed transposed A: else all rows)
//     for pc in k, step KC
//       (a transposed A: pack op(A)[ic:ic+MC, pc:pc+KC], once for every panel)
//       for jc in columns, step NC             B panel: KC x NC, lives in L2
//         pack op(B)[pc:pc+KC, jc:jc+NC] into NR-wide slivers
//         for i in the block, step MR          A sliver: MR x KC, lives in L1
//           for jr in the panel, step NR
//             micro-kernel: C[i:i+MR, jc+jr:jc+jr+NR] (+)= A sliver @ B sliver
//
//            KC                  NC                          NC
//        +--------+     +--+--+--+--+--+          +--+--+--+--+--+
//     MR |A sliver| x KC|  |  |  |  |  | NR wide = |  |C |  |  |  | MR
//        +--------+     +--+--+--+--+--+          +--+--+--+--+--+
//
// An untransposed A is read in place, not packed: the sliver's six rows are
// six streams the prefetcher follows, and the sliver (6 x KC, at most 9 KB)
// stays in L1 while the jr loop sweeps the whole B panel past it, so packing
// would only add a copy. A transposed A is packed, MC rows at a time, when
// its slivers are reused (see pack_a_transposed). B is packed: a sliver of op(B) must be KC rows of
// NR contiguous values for the vector loads, which a transposed B is not, and a plain B with a
// large power-of-two row stride maps its rows onto a few cache sets. A small untransposed B (at
// most kDirectBBytes) is read in place instead: it fits in L1 and stays there while every A sliver
// sweeps past it, and small products are the ones for which the copy would cost the most. (A larger
// B comes from L2 for every A sliver anyway, and there its rows a stride apart are slower to read
// than the packed copy.)
//
// Blocking, chosen for a 32 KB L1 and a 1 MB L2 per core (AMD Zen 4; the
// Intel Xeon of issue 14 has 48 KB and 2 MB) and the same for every path:
//   KC = 1536 bytes of k (384 floats, 192 doubles): the A sliver is 9 KB, and
//        each C tile is loaded and stored once per 384 multiply-adds into it;
//   NC = 512 columns: the packed B panel is KC x NC = 768 KB, inside L2.
// Measured on the benchmark shapes on Zen 4, KC from 192 to 512 and NC from
// 256 to 1024 are all within a few percent of this. On the Xeon, KC = 256 or
// 512 measured within noise of it, NC = 1024 about 10% slower, and swapping
// the jr and i loops (a B sliver kept in L1 rather than an A sliver, with KC
// from 128 to 384) no faster.
//
// Threads: the C of each batch item is cut into row_parts x col_parts blocks
// (plan_gemm_split), and the threads of ag::detail::parallel_for take (batch
// item, block) tasks from a shared counter. Every C element is still summed
// over k in the same order, so the result does not depend on the number of
// threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "../parallel.h"
#include "attograd/kernels/gemm.h"

namespace ag::kernels::detail {

// ---- what a micro-kernel gets ----------------------------------------------------------------

inline constexpr int kMR = 6;  // every micro-kernel computes 6 rows of C
template <typename T>
inline constexpr int64_t kKC = 1536 / sizeof(T);
inline constexpr int64_t kNC = 512;
// Rows of a transposed A packed at a time (KC x MC = 1.5 MB of floats): all
// of them, up to 170 slivers, so that A is packed once per k block rather
// than once per column panel too (4-5% faster on 1024^3 A^T B than packing
// 48 rows per panel); a taller A packs B again for each block of rows.
inline constexpr int64_t kMC = 170 * kMR;
inline constexpr int64_t kDirectBBytes = 32 * 1024;  // an L1

// One micro-kernel call: the m x n tile of C at c (m <= kMR, n <= NR) gets
// the product of a kc-long slice of an A sliver and of a B sliver.
template <typename T>
struct MicroTile {
  int64_t kc;
  const T* a;  // op(A)(i, k) = a[i * a_rs + k * a_cs]; only rows i < m may be read
  int64_t a_rs, a_cs;
  const T* b;  // op(B)(k, j) = b[k * b_ks + j]; columns up to n rounded up to kColumnStep readable
  int64_t b_ks;
  T* c;  // C(i, j) = c[i * ldc + j], i < m, j < n
  int64_t ldc;
  int m, n;
  bool accumulate;  // C += product; otherwise C = product (C's old values never read)
};

// Writes the top-left m x n of a computed tile (row stride `stride`) into C:
// how micro-kernels finish the ragged tiles at the bottom and right edges.
template <typename T>
inline void store_partial_tile(const T* tile, int stride, const MicroTile<T>& t) {
  for (int i = 0; i < t.m; ++i) {
    T* c = t.c + i * t.ldc;
    const T* row = tile + i * stride;
    for (int j = 0; j < t.n; ++j) c[j] = t.accumulate ? c[j] + row[j] : row[j];
  }
}

// ---- shared, non-template pieces (gemm.cpp) ---------------------------------------------------

// A 64-byte aligned buffer owned by the calling thread, grown on demand and
// reused by every later call on that thread (packing must not hit malloc).
void* gemm_scratch(size_t bytes);

struct GemmSplit {
  int threads = 1;                       // get_num_threads() when planned
  int64_t row_parts = 1, col_parts = 1;  // blocks per batch item's C
  bool parallel = false;                 // false: run every task on the calling thread
};
// How to cut one gemm into tasks for get_num_threads() threads when the
// micro-kernel is NR columns wide.
GemmSplit plan_gemm_split(const GemmShape& s, int nr);

// [begin, end) of part `part` of `parts` near-equal parts of [0, extent),
// cut on multiples of `unit`.
inline std::pair<int64_t, int64_t> part_range(int64_t extent, int64_t unit, int64_t parts,
                                              int64_t part) {
  const int64_t units = (extent + unit - 1) / unit;
  return {std::min(extent, units * part / parts * unit),
          std::min(extent, units * (part + 1) / parts * unit)};
}

// ---- packing -----------------------------------------------------------------------------------

// The row stride of a packed sliver starting `cols_left` columns before the
// end of the panel: NR, but for a last sliver narrower than NR only as many
// columns as the micro-kernel reads (ColumnStep is its kColumnStep).
template <int NR, int ColumnStep>
constexpr int64_t sliver_width(int64_t cols_left) {
  return std::min<int64_t>(NR, (cols_left + ColumnStep - 1) / ColumnStep * ColumnStep);
}

// Copies op(B)[pc:pc+kc, j0:j0+ncols] into NR-column slivers, one after the
// other, each kc rows of NR values (row k of sliver q is op(B)[pc+k, j0+q*NR :
// j0+q*NR+NR]), padding past ncols with zeros. The packed sliver is exactly
// what the micro-kernel's inner loop walks: one contiguous NR-row per k. The
// last sliver's rows are sliver_width() long, so a narrow N (a 6-key
// attention, the ragged end of a panel) is not padded to NR, neither in the
// copy nor in the arithmetic.
//
// Both loops read B along its rows, where the hardware prefetcher follows:
// an untransposed B a whole row (all slivers) per k; a transposed B kTile
// values of k (one cache line) from each of its rows in turn. Walking the
// other way, one k across NR rows a row stride apart, each read is a cache
// (and often TLB) miss the prefetcher cannot see coming.
template <class Kernel, typename T = typename Kernel::T>
void pack_b(const GemmShape& s, const T* B, int64_t pc, int64_t kc, int64_t j0, int64_t ncols,
            T* dst) {
  constexpr int NR = Kernel::kNR;
  constexpr bool kKernelTransposes = requires {
    requires Kernel::kPacksBTransposed;
  };
  const int64_t slivers = (ncols + NR - 1) / NR;
  const int tail = static_cast<int>(ncols - (slivers - 1) * NR);  // columns in the last sliver
  const int64_t tail_width = sliver_width<NR, Kernel::kColumnStep>(tail);
  // The padding: the last sliver zeroed in one go, then its columns copied
  // over it (a kernel's own transposing copy writes the zeros itself).
  if (tail < tail_width && !(s.trans_b && kKernelTransposes)) {
    std::fill_n(dst + (slivers - 1) * kc * NR, kc * tail_width, T(0));
  }
  if (!s.trans_b) {
    for (int64_t k = 0; k < kc; ++k) {
      const T* src = B + (pc + k) * s.ldb + j0;
      for (int64_t q = 0; q < slivers; ++q) {
        const bool last = q + 1 == slivers;
        std::copy_n(src + q * NR, last ? tail : NR,
                    dst + q * kc * NR + k * (last ? tail_width : NR));
      }
    }
  } else {
    constexpr int64_t kTile = 64 / static_cast<int64_t>(sizeof(T));
    for (int64_t q = 0; q < slivers; ++q) {
      const bool last = q + 1 == slivers;
      const int64_t width = last ? tail_width : NR;
      T* sliver = dst + q * kc * NR;
      const int n = last ? tail : NR;
      const T* rows = B + (j0 + q * NR) * s.ldb + pc;  // op(B)(k, q * NR + c) = rows[c * ldb + k]
      if constexpr (kKernelTransposes) {
        Kernel::pack_b_transposed(rows, s.ldb, kc, n, width, sliver);
      } else {
        for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
          const int64_t k_end = std::min(kc, k0 + kTile);
          for (int c = 0; c < n; ++c) {
            for (int64_t k = k0; k < k_end; ++k) sliver[k * width + c] = rows[c * s.ldb + k];
          }
        }
      }
    }
  }
}

// Copies rows [0, mc) x k [0, kc) of a transposed A (A stored [K, M], so
// these are mc adjacent values in each of kc rows of A) into kMR-row slivers,
// each kc groups of kMR values. Read in place, an A sliver would be kc cache
// lines a row of A apart with 24 or 48 bytes used in each, which for a
// power-of-two row stride all fall in a few cache sets: it would not stay in
// cache while the jr loop reuses it. Packed kMC rows at a time, each line of
// A is read once, whole.
template <typename T>
void pack_a_transposed(const T* a, int64_t lda, int64_t mc, int64_t kc, T* dst) {
  for (int64_t k = 0; k < kc; ++k) {
    const T* src = a + k * lda;
    if (k + 8 < kc) {
      for (int64_t i = 0; i < mc; i += 64 / sizeof(T)) __builtin_prefetch(src + 8 * lda + i);
      __builtin_prefetch(src + 8 * lda + mc - 1);
    }
    const int64_t whole = mc / kMR * kMR;
    for (int64_t i0 = 0; i0 < whole; i0 += kMR) {
      T* group = dst + i0 * kc + k * kMR;  // sliver i0 / kMR, step k
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) group[i] = src[i0 + i];  // fixed length: a few vector moves
    }
    for (int64_t i = whole; i < mc; ++i) dst[whole * kc + k * kMR + i - whole] = src[i];  // ragged
  }
}

// ---- the driver --------------------------------------------------------------------------------

// C[m0:m1, n0:n1] of one batch item, on the calling thread.
template <class Kernel, typename T = typename Kernel::T>
void gemm_block(const GemmShape& s, const T* A, const T* B, T* C, int64_t m0, int64_t m1,
                int64_t n0, int64_t n1) {
  constexpr int NR = Kernel::kNR;
  const int64_t a_rs = s.trans_a ? 1 : s.lda;
  const int64_t a_cs = s.trans_a ? s.lda : 1;
  const bool direct_b = !s.trans_b && s.K * s.N * static_cast<int64_t>(sizeof(T)) <= kDirectBBytes;
  // A transposed A is packed when its slivers are reused (see pack_a_transposed),
  // kMC rows at a time, once for all the column panels.
  const bool pack_a = s.trans_a && n1 - n0 > NR;
  const int64_t row_block = pack_a ? kMC : m1 - m0;
  const int64_t kc_max = std::min(kKC<T>, s.K);
  const int64_t panel_width = direct_b ? NR : (std::min(kNC, n1 - n0) + NR - 1) / NR * NR;
  // Whole slivers: a ragged last one still takes kMR x kc.
  const int64_t packed_rows = pack_a ? (std::min(kMC, m1 - m0) + kMR - 1) / kMR * kMR : 0;
  T* packed_b = static_cast<T*>(gemm_scratch(sizeof(T) * (panel_width + packed_rows) * kc_max));
  T* packed_a = packed_b + panel_width * kc_max;

  for (int64_t ic = m0; ic < m1; ic += row_block) {
    const int64_t mc = std::min(row_block, m1 - ic);
    for (int64_t pc = 0; pc < s.K; pc += kKC<T>) {
      const int64_t kc = std::min(kKC<T>, s.K - pc);
      if (pack_a) pack_a_transposed(A + ic + pc * s.lda, s.lda, mc, kc, packed_a);
      for (int64_t jc = n0; jc < n1; jc += kNC) {
        const int64_t nc = std::min(kNC, n1 - jc);
        // Columns [0, in_place) of the panel are read from B itself; the rest
        // (all of them unless direct_b, else the ragged last sliver) are packed.
        const int64_t in_place = direct_b ? nc / NR * NR : 0;
        if (in_place < nc) pack_b<Kernel>(s, B, pc, kc, jc + in_place, nc - in_place, packed_b);
        for (int64_t i = ic; i < ic + mc; i += kMR) {
          MicroTile<T> t;
          t.kc = kc;
          t.a = pack_a ? packed_a + (i - ic) * kc : A + i * a_rs + pc * a_cs;
          t.a_rs = a_rs;  // 1 for a transposed A, packed or not
          t.a_cs = pack_a ? kMR : a_cs;
          t.m = static_cast<int>(std::min<int64_t>(kMR, ic + mc - i));
          for (int64_t jr = 0; jr < nc; jr += NR) {
            if (jr < in_place) {
              t.b = B + pc * s.ldb + jc + jr;
              t.b_ks = s.ldb;
            } else {
              t.b = packed_b + (jr - in_place) * kc;
              t.b_ks = sliver_width<NR, Kernel::kColumnStep>(nc - jr);
            }
            t.c = C + i * s.ldc + jc + jr;
            t.ldc = s.ldc;
            t.n = static_cast<int>(std::min<int64_t>(NR, nc - jr));
            t.accumulate = pc > 0 || s.beta != 0;
            Kernel::micro_kernel(t);
          }
        }
      }
    }
  }
}

// The whole gemm (every batch item), shared among threads. Kernel provides
// T, kNR, kColumnStep (it reads B's columns in groups of that many: kNR, or
// one vector for a kernel with narrower variants) and static void
// micro_kernel(const MicroTile<T>&) computing a kMR x kNR tile.
template <class Kernel, typename T = typename Kernel::T>
void gemm_blocked(const GemmShape& s, const T* A, const T* B, T* C) {
  if (s.batch <= 0 || s.M <= 0 || s.N <= 0) return;
  if (s.K <= 0) {  // an empty sum: C = 0, or C unchanged
    if (s.beta == 0) {
      for (int64_t b = 0; b < s.batch; ++b) {
        for (int64_t i = 0; i < s.M; ++i) std::fill_n(C + b * s.stride_c + i * s.ldc, s.N, T(0));
      }
    }
    return;
  }
  const GemmSplit split = plan_gemm_split(s, Kernel::kNR);
  if (!split.parallel) {
    // Every item whole, in order: no task arithmetic, which tiny products notice.
    for (int64_t b = 0; b < s.batch; ++b) {
      gemm_block<Kernel>(s, A + b * s.stride_a, B + b * s.stride_b, C + b * s.stride_c, 0, s.M, 0,
                         s.N);
    }
    return;
  }
  const int64_t parts = split.row_parts * split.col_parts;
  const int64_t tasks = s.batch * parts;
  auto run_task = [&](int64_t task) {
    const int64_t b = task / parts, part = task % parts;
    const auto [m0, m1] = part_range(s.M, kMR, split.row_parts, part / split.col_parts);
    const auto [n0, n1] = part_range(s.N, Kernel::kNR, split.col_parts, part % split.col_parts);
    gemm_block<Kernel>(s, A + b * s.stride_a, B + b * s.stride_b, C + b * s.stride_c, m0, m1, n0,
                       n1);
  };
  // One loop per thread, each taking the next task until none are left.
  std::atomic<int64_t> next{0};
  ag::detail::parallel_for(split.threads, [&](int64_t, int64_t) {
    for (int64_t task = next++; task < tasks; task = next++) run_task(task);
  });
}

// ---- the paths (one translation unit each) -----------------------------------------------------

void gemm_scalar(const GemmShape& s, const float* A, const float* B, float* C);
void gemm_scalar(const GemmShape& s, const double* A, const double* B, double* C);
#if defined(__x86_64__)
void gemm_avx2(const GemmShape& s, const float* A, const float* B, float* C);
void gemm_avx2(const GemmShape& s, const double* A, const double* B, double* C);
void gemm_avx512(const GemmShape& s, const float* A, const float* B, float* C);
void gemm_avx512(const GemmShape& s, const double* A, const double* B, double* C);
#endif
#if defined(__aarch64__)
void gemm_neon(const GemmShape& s, const float* A, const float* B, float* C);
void gemm_neon(const GemmShape& s, const double* A, const double* B, double* C);
#endif

}  // namespace ag::kernels::detail
