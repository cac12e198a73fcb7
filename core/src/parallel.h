// ag::detail::parallel_for — the one way attograd's kernels use threads.
//
// A small persistent pool of get_num_threads() threads (the calling thread is
// one of them) runs a loop over [0, n) split into contiguous chunks, one chunk
// per thread. It never oversubscribes the machine: a call made from inside a
// parallel region (by a worker, or by the caller while its region runs), or
// while another thread's region is running, runs the whole loop on the
// calling thread instead of waiting for the pool.
#pragma once

#include <cstdint>
#include <functional>

namespace ag::detail {

// Calls fn(begin, end) on disjoint chunks covering [0, n), each at least
// `grain` items long (so n <= grain runs serially), and returns when all are
// done. The first exception a chunk throws is rethrown here once every chunk
// has finished.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn,
                  int64_t grain = 1);

}  // namespace ag::detail
