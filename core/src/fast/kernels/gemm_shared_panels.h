// gemm_shared_panels.h: the whole gemm shared by a few threads that pack each
// B panel once, together (gemm_driver.h says when it runs); internal to
// core/src/fast/kernels.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "gemm_panels.h"

namespace ag::kernels::detail {

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
// So B is packed once however many threads read it. Each thread owns a share
// of each panel's pack tasks and of its compute tasks and takes its own
// first, from the front, so that it works on the same slivers of B and the
// same blocks of A and C at every call, which stay in its core's cache
// (docs/performance.md, "GEMM threads", has what the other ways cost); then
// it takes the others' from the back, so a thread that
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

}  // namespace ag::kernels::detail
