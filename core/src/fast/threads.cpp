// The thread pool behind ag::detail::parallel_for, and ag::set_num_threads /
// ag::get_num_threads. Its reference is one thread: in reference mode
// (attograd/reference_mode.h) every loop runs on the calling thread.
//
// One region at a time: the thread that wins region_mutex hands a chunk to
// each worker (waking them through a condition variable and a generation
// counter), runs chunk 0 itself and waits for the others.
//
// Between regions a worker spins for a while (kSpin) before it sleeps on the
// condition variable, and so does the caller waiting for the last chunk: an
// op's regions come close together (the forward's, then the backward's),
// and a thread that went to sleep must be woken by the kernel, which on a
// virtual machine also means waking its halted virtual CPU (measured:
// docs/performance.md; a longer spin gained nothing). The spin yields the
// core each turn, so a machine with more runnable threads than cores loses
// little. Any other call — nested in a region, or from a second thread while
// a region runs — runs serially on its own thread, so at most
// get_num_threads() pool threads plus the callers' own threads ever compute
// at once.
//
// Without threads (ATTOGRAD_HAS_THREADS == 0, WebAssembly) there is no pool:
// parallel_for runs the whole loop on the caller, and set_num_threads only
// checks its argument.
#include <string>

#include "attograd/error.h"
#include "attograd/reference_mode.h"
#include "attograd/threads.h"
#include "parallel.h"

#if ATTOGRAD_HAS_THREADS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>
#endif

namespace ag {
#if ATTOGRAD_HAS_THREADS
namespace {

using LoopBody = std::function<void(int64_t, int64_t)>;

int default_num_threads() {
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores;
}

std::atomic<int> g_num_threads{0};  // 0 until set_num_threads: every core

// True on pool workers, and on a caller while it runs a region.
thread_local bool t_in_region = false;

// How long a thread spins for the next job (a worker) or the last chunk
// (the caller) before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

// Spins until done() or kSpin has passed (the caller then sleeps if need be).
template <typename Done>
void spin_until(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done() && std::chrono::steady_clock::now() <= until) std::this_thread::yield();
}

class ThreadPool {
 public:
  ThreadPool() = default;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() { resize(0); }

  // Runs chunk 0 of [0, n) on the calling thread and chunks 1 .. chunks - 1
  // on the workers (there must be at least chunks - 1). The caller holds the
  // region lock, so no other job is in flight.
  void run(int64_t n, int chunks, const LoopBody& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      pending_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();

    std::exception_ptr error;
    try {
      fn(0, chunk_begin(n, chunks, 1));
    } catch (...) {
      error = std::current_exception();
    }

    spin_until([this] { return pending_.load() == 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    if (!error) error = error_;
    error_ = nullptr;
    fn_ = nullptr;
    lock.unlock();
    if (error) std::rethrow_exception(error);
  }

  // Stops every worker, then starts `workers` new ones (called between jobs).
  void resize(int workers) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
    stopping_ = false;
    // A worker must not take the job before its start for a new one: it
    // starts having seen the current generation.
    try {
      for (int index = 1; index <= workers; ++index)
        workers_.emplace_back([this, index, seen = generation_.load()] { work(index, seen); });
    } catch (const std::system_error& e) {
      // The pool runs with the workers it got (parallel_for resizes again
      // next time); the caller learns why.
      throw Error(std::string("set_num_threads: cannot start ") + std::to_string(workers) +
                  " worker threads: " + e.what());
    }
  }

  int size() const { return static_cast<int>(workers_.size()); }

  static int64_t chunk_begin(int64_t n, int chunks, int chunk) { return n * chunk / chunks; }

 private:
  void work(int index, uint64_t seen) {
    t_in_region = true;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      lock.unlock();
      spin_until([&] { return stopping_.load() || generation_.load() != seen; });
      lock.lock();
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index >= chunks_) continue;  // this job has fewer chunks than workers
      const LoopBody& fn = *fn_;
      const int64_t begin = chunk_begin(n_, chunks_, index);
      const int64_t end = chunk_begin(n_, chunks_, index + 1);
      lock.unlock();
      std::exception_ptr error;
      try {
        fn(begin, end);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !error_) error_ = error;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;  // guards everything below (the atomics are also read unlocked, to spin)
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_ = 0;  // bumped once per job
  std::atomic<bool> stopping_ = false;
  const LoopBody* fn_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
  std::atomic<int> pending_ = 0;  // worker chunks not finished yet
  std::exception_ptr error_;
};

std::mutex g_region_mutex;  // held by the thread whose region owns the pool

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace
#endif  // ATTOGRAD_HAS_THREADS

void set_num_threads(int n) {
  AG_CHECK(n >= 1, "set_num_threads", "expected at least 1 thread, got " + std::to_string(n));
  // The pool starts n - 1 threads on the next large op: a typo such as
  // 1000000 would start a million.
  AG_CHECK(
      n <= kMaxThreads, "set_num_threads",
      "expected at most " + std::to_string(kMaxThreads) + " threads, got " + std::to_string(n));
#if ATTOGRAD_HAS_THREADS
  g_num_threads.store(n);
#endif
}

#if !ATTOGRAD_HAS_THREADS

int get_num_threads() {
  return 1;
}

namespace detail {

int usable_threads() {
  return 1;
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t) {
  if (n > 0) fn(0, n);
}

}  // namespace detail

#else

int get_num_threads() {
  const int n = g_num_threads.load();
  return n > 0 ? n : default_num_threads();
}

namespace detail {

int usable_threads() {
  return t_in_region || reference_mode() ? 1 : get_num_threads();
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  const int threads = get_num_threads();  // read once: another thread may change it
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int chunks = static_cast<int>(std::min<int64_t>(threads, max_chunks));
  if (chunks <= 1 || t_in_region || reference_mode()) {  // reference mode: one thread
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> region(g_region_mutex, std::try_to_lock);
  if (!region.owns_lock()) {  // another thread's region has the pool
    fn(0, n);
    return;
  }
  t_in_region = true;
  struct ClearFlag {
    ~ClearFlag() { t_in_region = false; }
  } clear_flag;
  ThreadPool& workers = pool();
  if (workers.size() != threads - 1) workers.resize(threads - 1);  // set_num_threads changed it
  workers.run(n, chunks, fn);
}

}  // namespace detail

#endif  // ATTOGRAD_HAS_THREADS
}  // namespace ag
