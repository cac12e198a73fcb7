// gemm_panels.h: the blocked GEMM's pieces that one thread runs: the packing
// of A and B, one panel's multiply, one batch item (gemm_item). gemm_driver.h
// says how they fit; internal to core/src/fast/kernels.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../parallel.h"
#include "attograd/kernels/gemm.h"

namespace ag::kernels::detail {

// ---- what a micro-kernel gets ----------------------------------------------------------------

inline constexpr int kMR = 6;  // every micro-kernel computes 6 rows of C
template <typename T>
inline constexpr int64_t kKC = 1536 / sizeof(T);
inline constexpr int64_t kNC = 512;
// Rows of a transposed A packed at a time, at most (KC x MC = 1.7 MB of
// floats): all of them, up to 192 slivers, so that A is packed once per k
// block rather than once per column panel too (4-5% faster on 1024^3 A^T B
// than packing 48 rows per panel). A taller A is cut into equal blocks
// (row_block), each of which packs B again. (With 170 slivers, 1024 rows were
// 1020 and 4, and B was packed a second time for those 4.)
inline constexpr int64_t kMC = 192 * kMR;
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
// Two of them: Scratch::Own for what a thread packs for itself, and
// Scratch::Shared for the B panels a caller's threads pack together (the
// caller packs its own rows of A meanwhile, so they cannot share one buffer).
enum class Scratch { Own, Shared };
void* gemm_scratch(size_t bytes, Scratch which = Scratch::Own);

struct GemmSplit {
  int threads = 1;              // detail::usable_threads() when planned
  bool parallel = false;        // false: run everything on the calling thread
  bool whole_items = false;     // parallel over batch items, each on one thread
  int64_t item_runs = 1;        // in this many runs of neighbouring items
  bool rows_apart = false;      // else: each thread its own rows, packing its own B
  int64_t tasks_per_panel = 1;  // else: blocks of C per shared B panel
};
// How to share one gemm among detail::usable_threads() threads.
GemmSplit plan_gemm_split(const GemmShape& s);

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
// cache while the jr loop reuses it. Packed up to kMC rows at a time, each
// line of A is read once, whole.
//
// It goes kRows rows of A at a time, and within them sliver by sliver: each
// sliver gets kRows groups, one contiguous run, while the kRows rows are read
// along. Going one whole row of A at a time instead wrote a group into each
// of up to kMC / kMR slivers a packed sliver (9 KB) apart, lines that fall in
// a few L1 sets, so each write missed: 5% of 1024^3 A^T B's time went to this
// copy. kRows rows of a power-of-two stride share one L1 set too, so they are
// fewer than its 12 (Intel) or 8 (AMD) ways.
template <typename T>
void pack_a_transposed(const T* a, int64_t lda, int64_t mc, int64_t kc, T* dst) {
  constexpr int64_t kRows = 6;
  const int64_t whole = mc / kMR * kMR;
  for (int64_t k0 = 0; k0 < kc; k0 += kRows) {
    const int64_t k1 = std::min(kc, k0 + kRows);
    for (int64_t i0 = 0; i0 < whole; i0 += kMR) {
      T* group = dst + i0 * kc + k0 * kMR;  // sliver i0 / kMR, step k0
      // A fixed length: a few vector moves (a loop of kMR, written to a T*
      // that may alias a, compiled to one scalar move per value)
      for (int64_t k = k0; k < k1; ++k, group += kMR) {
        std::memcpy(group, a + k * lda + i0, sizeof(T) * kMR);
      }
    }
    for (int64_t k = k0; k < k1; ++k) {  // the ragged last sliver
      for (int64_t i = whole; i < mc; ++i) dst[whole * kc + k * kMR + i - whole] = a[k * lda + i];
    }
  }
}

// ---- the driver --------------------------------------------------------------------------------

// One B panel, op(B)[pc:pc+kc, jc:jc+nc] of one batch item: columns [0,
// in_place) are read from B itself (a small untransposed B, see
// kDirectBBytes), the others from `packed`, the slivers pack_b makes of them.
template <typename T>
struct BPanel {
  const T* b;  // the batch item's B
  int64_t pc, kc, jc, nc, in_place;
  const T* packed;
};

// Where the micro-kernel finds the A sliver of rows i .. i + kMR: at
// base + (i - row0) * step, with op(A)(i + r, pc + k) at [r * rs + k * cs]
// from there. Read in place, base is A at column pc and row0 = 0; packed
// (pack_a_transposed), it is the packed block, whose first row is row0.
template <typename T>
struct ASlivers {
  const T* base;
  int64_t row0, step, rs, cs;
};

template <typename T>
ASlivers<T> a_in_place(const GemmShape& s, const T* a, int64_t pc) {
  const int64_t rs = s.trans_a ? 1 : s.lda, cs = s.trans_a ? s.lda : 1;
  return {a + pc * cs, 0, rs, rs, cs};
}
template <typename T>
ASlivers<T> a_packed(const T* packed, int64_t row0, int64_t kc) {
  return {packed, row0, kc, 1, kMR};  // sliver q: kc groups of kMR values
}

// C[i0:i1, jc+j0 : jc+j1] (+)= op(A)[i0:i1, pc:pc+kc] @ the panel's columns
// [j0, j1), j0 a multiple of NR. A panel wider than kNC (a packed A^T, see
// gemm_shared_panels) is swept kNC columns at a time, so that the part each A
// sliver sweeps stays in L2.
template <class Kernel, typename T = typename Kernel::T>
void multiply_panel(const GemmShape& s, const BPanel<T>& p, const ASlivers<T>& a, T* C, int64_t i0,
                    int64_t i1, int64_t j0, int64_t j1) {
  constexpr int NR = Kernel::kNR;
  MicroTile<T> t;
  t.kc = p.kc;
  t.a_rs = a.rs;
  t.a_cs = a.cs;
  t.ldc = s.ldc;
  t.accumulate = p.pc > 0 || s.beta != 0;
  for (int64_t js = j0; js < j1; js += kNC) {
    const int64_t je = std::min(j1, js + kNC);
    for (int64_t i = i0; i < i1; i += kMR) {
      t.a = a.base + (i - a.row0) * a.step;
      t.m = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
      for (int64_t jr = js; jr < je; jr += NR) {
        if (jr < p.in_place) {
          t.b = p.b + p.pc * s.ldb + p.jc + jr;
          t.b_ks = s.ldb;
        } else {
          t.b = p.packed + (jr - p.in_place) * p.kc;
          t.b_ks = sliver_width<NR, Kernel::kColumnStep>(p.nc - jr);
        }
        t.c = C + i * s.ldc + p.jc + jr;
        t.n = static_cast<int>(std::min<int64_t>(NR, p.nc - jr));
        Kernel::micro_kernel(t);
      }
    }
  }
}

// Columns of op(B) read in place (see kDirectBBytes), for a panel nc wide.
template <class Kernel, typename T = typename Kernel::T>
int64_t columns_in_place(const GemmShape& s, int64_t nc) {
  const bool direct_b = !s.trans_b && s.K * s.N * static_cast<int64_t>(sizeof(T)) <= kDirectBBytes;
  return direct_b ? nc / Kernel::kNR * Kernel::kNR : 0;
}

// Whether a transposed A is packed (see pack_a_transposed): when its slivers
// are reused, that is when C is wider than one micro-kernel.
template <class Kernel>
bool packs_a(const GemmShape& s) {
  return s.trans_a && s.N > Kernel::kNR;
}

// The rows of a transposed A packed at a time: M cut into as few equal
// blocks of at most kMC rows as it takes, whole slivers each.
inline int64_t row_block(int64_t M) {
  const int64_t blocks = (M + kMC - 1) / kMC;
  return ((M + blocks - 1) / blocks + kMR - 1) / kMR * kMR;
}

// ---- a B packed beforehand (kernels::PackedB) -----------------------------------------------

// Every panel pack_b makes of op(B), one after the other: k block pc (kKC
// rows), then column panel jc (kNC columns) within it. Every panel but the
// last of a block is kNC wide, a whole number of slivers, so block pc starts
// at pc x (N rounded up to NR) and its panel jc at kc x jc from there.
constexpr int64_t packed_b_width(int64_t N, int64_t NR) {
  return (N + NR - 1) / NR * NR;
}
template <int NR, typename Pointer>  // T* or const T*
Pointer packed_b_panel(Pointer packed, int64_t N, int64_t pc, int64_t kc, int64_t jc) {
  return packed + pc * packed_b_width(N, NR) + kc * jc;
}

// Packs all of op(B) (s.K x s.N) into dst, which holds s.K x packed_b_width(s.N, NR).
template <class Kernel, typename T = typename Kernel::T>
void pack_whole_b(const GemmShape& s, const T* B, T* dst) {
  for (int64_t pc = 0; pc < s.K; pc += kKC<T>) {
    const int64_t kc = std::min(kKC<T>, s.K - pc);
    for (int64_t jc = 0; jc < s.N; jc += kNC) {
      pack_b<Kernel>(s, B, pc, kc, jc, std::min(kNC, s.N - jc),
                     packed_b_panel<Kernel::kNR>(dst, s.N, pc, kc, jc));
    }
  }
}

// One batch item, on the calling thread. With `prepacked` (pack_whole_b of
// op(B)), B is not read and nothing is packed.
template <class Kernel, typename T = typename Kernel::T>
void gemm_item(const GemmShape& s, const T* A, const T* B, T* C, const T* prepacked = nullptr) {
  constexpr int NR = Kernel::kNR;
  const bool pack_a = packs_a<Kernel>(s);
  const int64_t rows = pack_a ? row_block(s.M) : s.M;
  const int64_t kc_max = std::min(kKC<T>, s.K);
  const int64_t panel_width = (std::min(kNC, s.N) + NR - 1) / NR * NR;
  // Whole slivers: a ragged last one still takes kMR x kc.
  const int64_t packed_rows = pack_a ? rows : 0;
  T* packed_b = static_cast<T*>(gemm_scratch(sizeof(T) * (panel_width + packed_rows) * kc_max));
  T* packed_a = packed_b + panel_width * kc_max;

  for (int64_t ic = 0; ic < s.M; ic += rows) {
    const int64_t mc = std::min(rows, s.M - ic);
    for (int64_t pc = 0; pc < s.K; pc += kKC<T>) {
      const int64_t kc = std::min(kKC<T>, s.K - pc);
      // A transposed A is packed once for all the column panels.
      if (pack_a) pack_a_transposed(A + ic + pc * s.lda, s.lda, mc, kc, packed_a);
      const ASlivers<T> a = pack_a ? a_packed(packed_a, ic, kc) : a_in_place(s, A, pc);
      for (int64_t jc = 0; jc < s.N; jc += kNC) {
        const int64_t nc = std::min(kNC, s.N - jc);
        const int64_t in_place = prepacked ? 0 : columns_in_place<Kernel>(s, nc);
        const T* packed =
            prepacked ? packed_b_panel<Kernel::kNR>(prepacked, s.N, pc, kc, jc) : packed_b;
        const BPanel<T> panel{B, pc, kc, jc, nc, in_place, packed};
        if (!prepacked && panel.in_place < nc) {
          pack_b<Kernel>(s, B, pc, kc, jc + panel.in_place, nc - panel.in_place, packed_b);
        }
        multiply_panel<Kernel>(s, panel, a, C, ic, ic + mc, 0, nc);
      }
    }
  }
}

}  // namespace ag::kernels::detail
