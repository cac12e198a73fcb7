// The blocked GEMM driver shared by every fast path (scalar, AVX2, AVX-512,
// NEON); their reference is gemm_naive (core/src/gemm_naive.cpp). Each path
// supplies only a micro-kernel: the code that computes one MR x NR tile of C
// in registers. Everything else is here and in gemm_panels.h (one thread's
// pieces) and gemm_shared_panels.h (threads sharing B's panels), compiled for
// the baseline ISA (only the micro-kernels carry target attributes).
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
// (docs/performance.md, "GEMM blocking": the sizes around these, measured.)
//
// Threads (plan_gemm_split): with many batch items, each thread takes whole
// items from a shared counter (gemm_item). With few, and a tall C, each
// thread runs gemm_item on its own part of the rows of C, packing its own
// copy of B (two threads then run as two one-thread products side by side).
// With a short C, the threads share the work of each item panel by panel
// (gemm_shared_panels): they pack each B panel once, together, into a buffer
// they all read, and then take blocks of rows (and of columns) to multiply
// with it. Every C element is still summed over k in the same order, so the
// result does not depend on the number of threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../parallel.h"
#include "attograd/kernels/gemm.h"
#include "gemm_panels.h"
#include "gemm_shared_panels.h"

namespace ag::kernels::detail {

// The whole gemm (every batch item). Kernel provides T, kNR, kColumnStep (it
// reads B's columns in groups of that many: kNR, or one vector for a kernel
// with narrower variants) and static void micro_kernel(const MicroTile<T>&)
// computing a kMR x kNR tile.
//
// With `prepacked` (pack_whole_b of op(B), which every batch item shares), B
// is not read: there are no panels to pack and share, so the threads take
// whole items or their own rows.
template <class Kernel, typename T = typename Kernel::T>
void gemm_blocked(const GemmShape& s, const T* A, const T* B, T* C, const T* prepacked = nullptr) {
  if (s.batch <= 0 || s.M <= 0 || s.N <= 0) return;
  if (s.K <= 0) {  // an empty sum: C = 0, or C unchanged
    if (s.beta == 0) {
      for (int64_t b = 0; b < s.batch; ++b) {
        for (int64_t i = 0; i < s.M; ++i) std::fill_n(C + b * s.stride_c + i * s.ldc, s.N, T(0));
      }
    }
    return;
  }
  auto item = [&](int64_t b) {
    gemm_item<Kernel>(s, A + b * s.stride_a, B + b * s.stride_b, C + b * s.stride_c, prepacked);
  };
  const GemmSplit split = plan_gemm_split(s);
  if (!split.parallel) {
    for (int64_t b = 0; b < s.batch; ++b) item(b);
  } else if (split.whole_items) {
    // One loop per thread, each taking the next run of neighbouring items
    // until none are left. (One item at a time, a head's [30 x 30] scores
    // were three times slower on two threads than on one: the threads took
    // turns at the shared counter and wrote neighbouring items, C's cache
    // lines going back and forth.)
    const int64_t runs = split.item_runs;
    std::atomic<int64_t> next{0};
    ag::detail::parallel_for(split.threads, [&](int64_t, int64_t) {
      for (int64_t run = next++; run < runs; run = next++) {
        const auto [b0, b1] = part_range(s.batch, 1, runs, run);
        for (int64_t b = b0; b < b1; ++b) item(b);
      }
    });
  } else if (split.rows_apart || prepacked) {
    // Part t of the rows of every item, on thread t, exactly as one thread
    // would compute them: a gemm of its own on those rows of A and C.
    ag::detail::parallel_for(split.threads, [&](int64_t first, int64_t last) {
      for (int64_t part = first; part < last; ++part) {
        const auto [i0, i1] = part_range(s.M, kMR, split.threads, part);
        GemmShape rows = s;
        rows.M = i1 - i0;
        const int64_t a_offset = s.trans_a ? i0 : i0 * s.lda;  // op(A) row i0
        for (int64_t b = 0; b < s.batch; ++b) {
          gemm_item<Kernel>(rows, A + b * s.stride_a + a_offset, B + b * s.stride_b,
                            C + b * s.stride_c + i0 * s.ldc, prepacked);
        }
      }
    });
  } else {
    gemm_shared_panels<Kernel>(s, A, B, C, split);
  }
}

// ---- tiny products, without the driver ---------------------------------------------------------
//
// For d2l's [20x8] @ [8x64] (10K multiply-adds, a fifth of a microsecond) the
// blocked driver's set-up (the thread plan, the scratch buffer, the panel
// loops: a third of the time) costs as much as OpenBLAS's whole unpacked
// small-matrix path. Products this small fit in L1 whatever their layout, so
// nothing is packed: the kernel's tiles read A and B in place and write C,
// all of k at once. A transposed B (each column a row apart) goes through the
// driver, which transposes it while packing. The kernels with tiles for every
// edge have this path (AVX-512, AVX2): Kernel provides kSmallMacs (the
// largest M N K of one batch item) and small_tile(t, m, n), the tile for m
// rows and n columns of an unpacked B (its last vector read under a mask).
inline constexpr int64_t kSmallK = 64;  // the depths the path was measured at

template <class Kernel>
bool is_small_product(const GemmShape& s) {
  return !s.trans_b && s.M > 0 && s.N > 0 && s.K > 0 && s.K <= kSmallK &&
         s.M * s.N * s.K <= Kernel::kSmallMacs;
}

template <class Kernel, typename T = typename Kernel::T>
void gemm_small(const GemmShape& s, const T* A, const T* B, T* C) {
  MicroTile<T> t;
  t.kc = s.K;
  t.a_rs = s.trans_a ? 1 : s.lda;
  t.a_cs = s.trans_a ? s.lda : 1;
  t.b_ks = s.ldb;
  t.ldc = s.ldc;
  t.accumulate = s.beta != 0;
  for (int64_t item = 0; item < s.batch; ++item) {
    const T* a = A + item * s.stride_a;
    const T* b = B + item * s.stride_b;
    T* c = C + item * s.stride_c;
    for (int64_t i = 0; i < s.M; i += kMR) {
      const int m = static_cast<int>(std::min<int64_t>(kMR, s.M - i));
      t.m = m;
      t.a = a + i * t.a_rs;
      for (int64_t j = 0; j < s.N; j += Kernel::kNR) {
        const int n = static_cast<int>(std::min<int64_t>(Kernel::kNR, s.N - j));
        t.b = b + j;
        t.c = c + i * s.ldc + j;
        t.n = n;
        Kernel::small_tile(t, m, n);
      }
    }
  }
}

// ---- the paths (one translation unit each) -----------------------------------------------------

// What kernels::PackedB needs of a path: its sliver width, how it packs
// op(B), and its product with the packed B (s.stride_b is 0 there).
template <typename T>
struct PackedBPath {
  int64_t nr;
  void (*pack)(const GemmShape& s, const T* B, T* dst);  // dst: s.K x packed_b_width(s.N, nr)
  void (*gemm)(const GemmShape& s, const T* A, const T* packed, T* C);
};
template <class Kernel, typename T = typename Kernel::T>
PackedBPath<T> packed_b_path() {
  return {Kernel::kNR, pack_whole_b<Kernel>,
          [](const GemmShape& s, const T* A, const T* packed, T* C) {
            gemm_blocked<Kernel>(s, A, static_cast<const T*>(nullptr), C, packed);
          }};
}
// Each path's, instantiated for float and double in its own file.
template <typename T>
PackedBPath<T> packed_b_scalar();
#if defined(__x86_64__)
template <typename T>
PackedBPath<T> packed_b_avx2();
template <typename T>
PackedBPath<T> packed_b_avx512();
#endif
#if defined(__aarch64__)
template <typename T>
PackedBPath<T> packed_b_neon();
#endif

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
