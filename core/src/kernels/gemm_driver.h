// The blocked GEMM driver shared by every fast path (scalar, AVX2, AVX-512,
// NEON). Each path supplies only a micro-kernel: the code that computes one
// MR x NR tile of C in registers. Everything else is here, compiled for the
// baseline ISA (only the micro-kernels carry target attributes).
//
// C (per batch item, per thread block) is computed as:
//
//   for jc in columns, step NC                 B panel: KC x NC, lives in L2
//     for pc in k, step KC
//       pack op(B)[pc:pc+KC, jc:jc+NC] into NR-wide slivers
//       for i in rows, step MR                 A sliver: MR x KC, lives in L1
//         for jr in the panel, step NR
//           micro-kernel: C[i:i+MR, jc+jr:jc+jr+NR] (+)= A sliver @ B sliver
//
//            KC                  NC                          NC
//        +--------+     +--+--+--+--+--+          +--+--+--+--+--+
//     MR |A sliver| x KC|  |  |  |  |  | NR wide = |  |C |  |  |  | MR
//        +--------+     +--+--+--+--+--+          +--+--+--+--+--+
//
// The A sliver (6 rows x KC, at most 9 KB) is read straight from A, not packed:
// six row streams (or, for a transposed A, six adjacent columns) prefetch
// well, and the sliver stays in L1 while the jr loop sweeps the whole B panel
// past it, so packing A would only add a copy. B is packed: a sliver of
// op(B) must be KC rows of NR contiguous values for the vector loads, which a
// transposed B is not, and a plain B with a large power-of-two row stride
// maps its rows onto a few cache sets. A small untransposed B (at most
// kDirectBBytes) is read in place instead: it stays in L2 whatever its stride,
// and small products are the ones for which the copy would cost the most.
//
// Blocking, chosen for a 32 KB L1 and a 1 MB L2 per core (AMD Zen 4 here;
// Intel's are similar) and the same for every path:
//   KC = 1536 bytes of k (384 floats, 192 doubles): the A sliver is 9 KB, and
//        each C tile is loaded and stored once per 384 multiply-adds into it;
//   NC = 512 columns: the packed B panel is KC x NC = 768 KB, inside L2.
// Measured on the benchmark shapes, KC from 192 to 512 and NC from 256 to
// 1024 are all within a few percent of this.
//
// Threads: the C of each batch item is cut into row_parts x col_parts blocks
// (plan_gemm_split), and ag::detail::parallel_for hands whole (batch item,
// block) tasks to the threads. Every C element is still summed over k in the
// same order, so the result does not depend on the number of threads.
#pragma once

#include <algorithm>
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
inline constexpr int64_t kDirectBBytes = 256 * 1024;

// One micro-kernel call: the m x n tile of C at c (m <= kMR, n <= NR) gets
// the product of a kc-long slice of an A sliver and of a B sliver.
template <typename T>
struct MicroTile {
  int64_t kc;
  const T* a;  // op(A)(i, k) = a[i * a_rs + k * a_cs]; only rows i < m may be read
  int64_t a_rs, a_cs;
  const T* b;  // op(B)(k, j) = b[k * b_ks + j]; all NR columns are readable
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
  int64_t row_parts = 1, col_parts = 1;  // blocks per batch item's C
  bool parallel = false;                 // false: run every task on the calling thread
};
// How to share one gemm among get_num_threads() threads when the micro-kernel
// is NR columns wide.
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

// Copies op(B)[pc:pc+kc, j0:j0+ncols] into NR-column slivers, one after the
// other, each kc rows of NR values (row k of sliver q is op(B)[pc+k, j0+q*NR :
// j0+q*NR+NR]), padding past ncols with zeros. The packed sliver is exactly
// what the micro-kernel's inner loop walks: one contiguous NR-row per k.
template <int NR, typename T>
void pack_b(const GemmShape& s, const T* B, int64_t pc, int64_t kc, int64_t j0, int64_t ncols,
            T* dst) {
  for (int64_t q = 0; q * NR < ncols; ++q, dst += kc * NR) {
    const int64_t j = j0 + q * NR;
    const int n = static_cast<int>(std::min<int64_t>(NR, ncols - q * NR));
    if (!s.trans_b) {  // op(B) rows are B rows: copy n contiguous values per k
      for (int64_t k = 0; k < kc; ++k) {
        std::copy_n(B + (pc + k) * s.ldb + j, n, dst + k * NR);
        std::fill(dst + k * NR + n, dst + (k + 1) * NR, T(0));
      }
    } else {  // op(B)(k, j) = B(j, k): gather n values a row stride apart per k
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = B + j * s.ldb + pc + k;
        T* row = dst + k * NR;
        for (int c = 0; c < n; ++c) row[c] = src[c * s.ldb];
        std::fill(row + n, row + NR, T(0));
      }
    }
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
  const int64_t kc_max = std::min(kKC<T>, s.K);
  const int64_t panel_width = direct_b ? NR : (std::min(kNC, n1 - n0) + NR - 1) / NR * NR;
  T* packed = static_cast<T*>(gemm_scratch(sizeof(T) * panel_width * kc_max));

  for (int64_t jc = n0; jc < n1; jc += kNC) {
    const int64_t nc = std::min(kNC, n1 - jc);
    // Columns [0, in_place) of the panel are read from B itself; the rest
    // (all of them unless direct_b, else the ragged last sliver) are packed.
    const int64_t in_place = direct_b ? nc / NR * NR : 0;
    for (int64_t pc = 0; pc < s.K; pc += kKC<T>) {
      const int64_t kc = std::min(kKC<T>, s.K - pc);
      pack_b<NR>(s, B, pc, kc, jc + in_place, nc - in_place, packed);
      for (int64_t i = m0; i < m1; i += kMR) {
        for (int64_t jr = 0; jr < nc; jr += NR) {
          MicroTile<T> t;
          t.kc = kc;
          t.a = A + i * a_rs + pc * a_cs;
          t.a_rs = a_rs;
          t.a_cs = a_cs;
          if (jr < in_place) {
            t.b = B + pc * s.ldb + jc + jr;
            t.b_ks = s.ldb;
          } else {
            t.b = packed + (jr - in_place) * kc;
            t.b_ks = NR;
          }
          t.c = C + i * s.ldc + jc + jr;
          t.ldc = s.ldc;
          t.m = static_cast<int>(std::min<int64_t>(kMR, m1 - i));
          t.n = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          t.accumulate = pc > 0 || s.beta != 0;
          Kernel::micro_kernel(t);
        }
      }
    }
  }
}

// The whole gemm (every batch item), shared among threads. Kernel provides
// T, kNR and static void micro_kernel(const MicroTile<T>&) computing a
// kMR x kNR tile.
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
  const int64_t parts = split.row_parts * split.col_parts;
  auto run_tasks = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / parts, part = task % parts;
      const auto [m0, m1] = part_range(s.M, kMR, split.row_parts, part / split.col_parts);
      const auto [n0, n1] = part_range(s.N, Kernel::kNR, split.col_parts, part % split.col_parts);
      gemm_block<Kernel>(s, A + b * s.stride_a, B + b * s.stride_b, C + b * s.stride_c, m0, m1, n0,
                         n1);
    }
  };
  if (split.parallel) {
    ag::detail::parallel_for(s.batch * parts, run_tasks);
  } else {
    run_tasks(0, s.batch * parts);
  }
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
