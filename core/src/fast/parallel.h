// ag::detail::parallel_for — the one way attograd's kernels use threads.
//
// A small persistent pool of get_num_threads() threads (the calling thread is
// one of them) runs a loop over [0, n) split into contiguous chunks, one chunk
// per thread. It never oversubscribes the machine: a call made from inside a
// parallel region (by a worker, or by the caller while its region runs), or
// while another thread's region is running, runs the whole loop on the
// calling thread instead of waiting for the pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace ag::detail {

// Calls fn(begin, end) on disjoint chunks covering [0, n), each at least
// `grain` items long (so n <= grain runs serially), and returns when all are
// done. The first exception a chunk throws is rethrown here once every chunk
// has finished.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn,
                  int64_t grain = 1);

// How many threads a parallel_for called here would run on: 1 inside a
// parallel region (nested calls run serially), else get_num_threads(). A
// kernel that splits its work into tasks (the gemm) plans with this, so
// that called from one of flash_attention's tasks it does not cut itself
// into pieces that one thread then runs one after the other.
int usable_threads();

// The grain for items of `work_per_item` elements (or inner-loop steps) each:
// enough items that a chunk holds ~32K elements, which outweighs handing the
// chunk to a thread.
inline int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(work_per_item, 1));
}

}  // namespace ag::detail
