// The blocked GEMM driver shared by every fast path (scalar, AVX2, AVX-512,
// NEON); their reference is gemm_naive (core/src/gemm_naive.cpp). Each path supplies only a micro-kernel: the code that computes one
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

// Spins until `count` reaches `target`: what a thread waits for in
// gemm_shared_panels is a few microseconds of another thread's work, less
// than it takes to sleep and be woken; it yields now and then in case that
// thread is not running.
inline void wait_for(const std::atomic<int64_t>& count, int64_t target) {
  for (int spins = 0; count.load(std::memory_order_acquire) < target; ++spins) {
    if (spins % 1024 == 1023) std::this_thread::yield();
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

// The parts [front, back) of a panel's compute tasks not taken yet from one
// thread's share, in one word so that both ends move atomically: the owner
// takes from the front, other threads, when theirs is done, from the back.
class PartRange {
 public:
  void reset(int64_t front, int64_t back) {
    bits_.store(static_cast<uint64_t>(front) << 32 | static_cast<uint64_t>(back));
  }
  bool take(bool owner, int64_t& part) {
    uint64_t bits = bits_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = bits >> 32, back = bits & 0xffffffffu;
      if (front >= back) return false;
      const uint64_t taken = owner ? (front + 1) << 32 | back : front << 32 | (back - 1);
      if (bits_.compare_exchange_weak(bits, taken, std::memory_order_relaxed)) {
        part = static_cast<int64_t>(owner ? front : back - 1);
        return true;
      }
    }
  }

 private:
  std::atomic<uint64_t> bits_{0};
};

// The whole gemm, shared by split.threads threads when there are few batch
// items. Each thread walks every panel of every item in order (item, then k
// block, then columns) and, in each, does tasks until none are left:
//
//   pack tasks      one B sliver each, into the panel's buffer
//   compute tasks   a block of C times its columns of the panel; each first
//                   waits until every sliver of the panel is packed, and
//                   until its block of C has had the previous k block added
//
// So B is packed once however many threads read it (cutting C into blocks
// that each packed their own B, as before, packed 256^3's B five times on
// two threads). Each thread owns a share of each panel's pack tasks and of
// its compute tasks and takes its own first, from the front, so that it
// works on the same slivers of B and the same blocks of A and C at every
// call, which stay in its core's cache (handed out in turn from one counter
// instead, 256^3 on two threads lost a fifth of its time fetching them from
// the other core); then it takes the others' from the back, so a thread that
// starts late (waking a pool thread takes tens of microseconds on a virtual
// machine) ends up with fewer. The panels alternate between two buffers:
// packing panel p waits until panel p - 2's compute tasks are done, which by
// then they nearly always are. A thread leaves a panel only once all its
// tasks are taken, and waits only for tasks taken before, in this panel or
// earlier ones: none waits forever.
//
// A transposed A is packed by each compute task for its own rows. To do that
// once per k block rather than once per panel, its panels span up to
// kWidePanels x kNC columns (multiply_panel sweeps them kNC at a time).
template <class Kernel, typename T = typename Kernel::T>
void gemm_shared_panels(const GemmShape& s, const T* A, const T* B, T* C, const GemmSplit& split) {
  constexpr int NR = Kernel::kNR;
  constexpr int64_t kWidePanels = 4;
  const int threads = split.threads;
  const int64_t tasks = split.tasks_per_panel;
  const bool pack_a = packs_a<Kernel>(s);
  // A panel is kNC columns per thread, up to kWidePanels of them: cut in
  // columns first, each thread's block of it is then as wide as gemm_item's
  // panels, and each A sliver is reused as often (at 1024^3 on two threads,
  // 3% faster than kNC-wide panels). A packed A^T takes kWidePanels x kNC
  // (below).
  const int64_t width =
      std::min((pack_a ? kWidePanels : std::min<int64_t>(threads, kWidePanels)) * kNC,
               (s.N + NR - 1) / NR * NR);
  const int64_t kc_max = std::min(kKC<T>, s.K);
  const int64_t row_slivers = (s.M + kMR - 1) / kMR;
  // How a panel nc wide is cut into row_parts x col_parts blocks of C:
  //  - in columns first, one block column per thread, when the panel is wide
  //    enough: thread t then packs (first) and reads the B slivers of its own
  //    columns, which stay in its core's cache, and A, only read, is cached in
  //    both (for 1024^3, rows first made each thread fetch the other's half
  //    of every packed panel from the other core);
  //  - else in rows first, and columns too when there are too few rows. So
  //    is a packed A^T, which each block of columns would pack again; its
  //    blocks are at most kMC rows, as in gemm_item.
  const int64_t rows_first_parts =
      std::max(std::min(row_slivers, tasks), (row_slivers * kMR + kMC - 1) / kMC);
  auto cut = [&](int64_t nc) -> std::pair<int64_t, int64_t> {
    const int64_t slivers = (nc + NR - 1) / NR;
    if (!pack_a && slivers >= 2 * threads) {
      return {std::min(row_slivers, (tasks + threads - 1) / threads), threads};
    }
    return {rows_first_parts, std::min(slivers, (tasks + rows_first_parts - 1) / rows_first_parts)};
  };
  // At most tasks + threads blocks cut in columns first, tasks + rows_first_parts in rows first.
  const int64_t max_blocks = tasks + std::max<int64_t>(threads, rows_first_parts);
  const int64_t column_panels = (s.N + width - 1) / width;

  struct Panel {
    int64_t b, pc, kc, jc, nc, in_place;
    int64_t packs;                           // pack tasks: one per packed sliver
    int64_t row_parts, col_parts, computes;  // compute tasks: row_parts x col_parts
    int64_t k_step;  // pc / kKC: the k blocks each of its C blocks has had before
    int64_t blocks;  // where its C blocks' counters start in k_done
    std::atomic<int64_t> packed{0}, computed{0};  // tasks done
  };
  const size_t count = static_cast<size_t>(s.batch * ((s.K + kKC<T> - 1) / kKC<T>)*column_panels);
  std::vector<Panel> panels(count);
  // Per panel, each thread's share of the pack tasks, then of the compute
  // tasks (in block-column order: a thread's share is whole columns of C
  // when the panel is cut in columns first).
  std::vector<PartRange> shares(count * 2 * static_cast<size_t>(threads));
  {
    Panel* p = panels.data();
    PartRange* share = shares.data();
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t pc = 0; pc < s.K; pc += kKC<T>) {
        for (int64_t jc = 0; jc < s.N; jc += width, ++p) {
          p->b = b;
          p->pc = pc;
          p->kc = std::min(kKC<T>, s.K - pc);
          p->jc = jc;
          p->nc = std::min(width, s.N - jc);
          p->in_place = columns_in_place<Kernel>(s, p->nc);
          p->packs = (p->nc - p->in_place + NR - 1) / NR;
          std::tie(p->row_parts, p->col_parts) = cut(p->nc);
          p->computes = p->row_parts * p->col_parts;
          p->k_step = pc / kKC<T>;
          p->blocks = (b * column_panels + jc / width) * max_blocks;
          for (int64_t n : {p->packs, p->computes}) {
            for (int t = 0; t < threads; ++t, ++share) {
              share->reset(n * t / threads, n * (t + 1) / threads);
            }
          }
        }
      }
    }
  }
  // For each block of C, how many k blocks have been added into it: the
  // next one must wait for that (it reads what the previous one wrote).
  std::vector<std::atomic<int64_t>> k_done(
      static_cast<size_t>(s.batch * column_panels * max_blocks));
  T* buffers = static_cast<T*>(gemm_scratch(sizeof(T) * 2 * width * kc_max, Scratch::Shared));
  const int64_t packed_rows =
      pack_a ? (row_slivers + rows_first_parts - 1) / rows_first_parts * kMR : 0;

  // parallel_for hands thread t the chunk [t, t + 1); a call run serially
  // gets [0, threads) and does every share.
  ag::detail::parallel_for(threads, [&](int64_t first, int64_t) {
    const int home = static_cast<int>(first);
    // Runs task(part) for every part of the shares still untaken: this
    // thread's own first, then the others'.
    auto take_all = [&](PartRange* share, auto&& task) {
      for (int i = 0; i < threads; ++i) {
        const int owner = (home + i) % threads;
        for (int64_t part = 0; share[owner].take(owner == home, part);) task(part);
      }
    };
    T* packed_a =
        pack_a ? static_cast<T*>(gemm_scratch(sizeof(T) * packed_rows * kc_max)) : nullptr;
    for (size_t at = 0; at < count; ++at) {
      Panel& p = panels[at];
      const T* a = A + p.b * s.stride_a;
      const T* b = B + p.b * s.stride_b;
      T* packed_b = buffers + (at % 2) * width * kc_max;
      PartRange* share = shares.data() + at * 2 * static_cast<size_t>(threads);
      take_all(share, [&](int64_t q) {
        if (at >= 2) wait_for(panels[at - 2].computed, panels[at - 2].computes);
        const int64_t j = p.in_place + q * NR;  // sliver q of the packed columns
        pack_b<Kernel>(s, b, p.pc, p.kc, p.jc + j, std::min<int64_t>(NR, p.nc - j),
                       packed_b + q * NR * p.kc);
        p.packed.fetch_add(1, std::memory_order_release);
      });
      take_all(share + threads, [&](int64_t part) {
        const auto [i0, i1] = part_range(s.M, kMR, p.row_parts, part % p.row_parts);
        const auto [j0, j1] = part_range(p.nc, NR, p.col_parts, part / p.row_parts);
        if (pack_a) pack_a_transposed(a + i0 + p.pc * s.lda, s.lda, i1 - i0, p.kc, packed_a);
        wait_for(p.packed, p.packs);
        std::atomic<int64_t>& block_done = k_done[static_cast<size_t>(p.blocks + part)];
        wait_for(block_done, p.k_step);
        const BPanel<T> panel{b, p.pc, p.kc, p.jc, p.nc, p.in_place, packed_b};
        multiply_panel<Kernel>(s, panel,
                               pack_a ? a_packed(packed_a, i0, p.kc) : a_in_place(s, a, p.pc),
                               C + p.b * s.stride_c, i0, i1, j0, j1);
        block_done.store(p.k_step + 1, std::memory_order_release);
        p.computed.fetch_add(1, std::memory_order_release);
      });
    }
  });
}

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
