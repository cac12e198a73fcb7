// GEMM dispatch: picks the micro-kernel of the instruction set the kernels
// run (attograd/kernels/instruction_set.h: the best this CPU has, or
// ATTOGRAD_ISA's), once, at the first call, and holds the pieces of the
// driver (gemm_driver.h) that need no template: the per-thread packing
// buffers and the thread split.
//
// The kernel versions, each a step of docs/matmul.md (which gives their
// speeds against OpenBLAS and the bench_gemm command that measures them):
//   naive   i-j-k triple loop (gemm_naive.cpp): the reference
//   scalar  blocked driver, B packed, 6 x 8 plain C++ tile
//           (gemm_scalar.cpp; GCC -O3 vectorizes it with SSE2)
//   avx2    same driver, 6 x 16 AVX2 + FMA tile (gemm_avx2.cpp)
//   avx512  same driver, 6 x 64 AVX-512 tile (gemm_avx512.cpp); tiny products
//           skip the driver and run the tiles on A and B in place
//   neon    same driver, 6 x 16 NEON tile (gemm_neon.cpp; AArch64, tested under QEMU)
// In reference mode (attograd/reference_mode.h) gemm() takes the naive loop.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <new>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>

#include "attograd/error.h"
#include "attograd/reference_mode.h"
#include "cpu_features.h"
#include "gemm_driver.h"

namespace ag::kernels {
namespace detail {

void* gemm_scratch(size_t bytes, Scratch which) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { ::operator delete(data, std::align_val_t(64)); }
  };
  thread_local Buffer buffers[2];
  Buffer& buffer = buffers[which == Scratch::Own ? 0 : 1];
  if (buffer.size < bytes) {
    ::operator delete(buffer.data, std::align_val_t(64));
    buffer.data = nullptr;
    buffer.size = 0;
    buffer.data = ::operator new(bytes, std::align_val_t(64));
    buffer.size = bytes;
  }
  return buffer.data;
}

// Below this many flops (about 20 microseconds on one core) waking a second
// thread costs more than it saves.
constexpr double kMinParallelFlops = 2e6;
// Threads take tasks from a shared counter, so with several tasks each, a
// thread that starts late (a pool thread takes tens of microseconds to wake on
// a virtual machine) or is slowed down (say, by another process on its core)
// ends up taking fewer and the others more, instead of everyone waiting for it.
constexpr int64_t kTasksPerThread = 4;
// Rows of C per thread from which each thread takes its own rows (below).
constexpr int64_t kRowsApartMin = 128;
// Values of C per thread below which the threads do not share B panels (below).
constexpr int64_t kSharedPanelsMinOutputs = 2048;

GemmSplit plan_gemm_split(const GemmShape& s) {
  GemmSplit split;
  // 1 inside a parallel region, where a nested call would run every task
  // on this one thread, each packing its share of B again
  split.threads = ag::detail::usable_threads();
  const double flops = 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.M) *
                       static_cast<double>(s.N) * static_cast<double>(s.K);
  if (split.threads <= 1 || flops < kMinParallelFlops) return split;
  split.parallel = true;
  // Enough batch items to go round: each packs its own B, and a task is a
  // run of neighbouring items, kTasksPerThread runs a thread. Else the
  // threads share each item's B panels (gemm_shared_panels), which are then
  // cut into several tasks each.
  split.whole_items = s.batch >= split.threads * kTasksPerThread;
  split.item_runs = split.threads * kTasksPerThread;
  // Else, with C tall enough, each thread computes its own rows of it alone,
  // packing its own copy of B: the copy is K x N values against M / threads
  // x N x K multiply-adds, and the threads never wait for each other nor read
  // what the other packed; it beat shared panels on the larger square and
  // Linear shapes bench_gemm times, a tie at 256^3 (docs/performance.md).
  // A shorter C would give each thread a thin strip of rows, or none, so the
  // threads share each B panel and cut it in columns as well.
  split.rows_apart = !split.whole_items && s.M >= split.threads * kRowsApartMin;
  // Sharing panels, each thread computes its blocks of C once per k block and
  // then waits for the next block's panel. With a small C and a long k (a
  // narrow layer's weight gradient, [rows x 32]^T @ [rows x 64]) its blocks
  // are a few tiles, a few microseconds between waits, and one thread alone
  // is faster (docs/performance.md, "GEMM threads").
  if (!split.whole_items && !split.rows_apart &&
      s.M * s.N < split.threads * kSharedPanelsMinOutputs) {
    split.parallel = false;
    return split;
  }
  split.tasks_per_panel = split.threads * kTasksPerThread;
  return split;
}

}  // namespace detail

namespace {

template <typename T>
using GemmFn = void (*)(const GemmShape&, const T*, const T*, T*);

constexpr GemmPath kAllPaths[] = {GemmPath::Naive, GemmPath::Scalar, GemmPath::Avx2,
                                  GemmPath::Avx512, GemmPath::Neon};

bool path_available(GemmPath path) {
  switch (path) {
    case GemmPath::Naive:
    case GemmPath::Scalar:
      return true;
#if defined(__x86_64__)
    case GemmPath::Avx2:
      return detail::instruction_set_available(InstructionSet::Avx2);
    case GemmPath::Avx512:
      return detail::instruction_set_available(InstructionSet::Avx512);
#endif
#if defined(__aarch64__)
    case GemmPath::Neon:
      return detail::instruction_set_available(InstructionSet::Neon);
#endif
    default:
      return false;
  }
}

// The function of an available path.
template <typename T>
GemmFn<T> path_function(GemmPath path) {
  switch (path) {
#if defined(__x86_64__)
    case GemmPath::Avx2:
      return detail::gemm_avx2;
    case GemmPath::Avx512:
      return detail::gemm_avx512;
#endif
#if defined(__aarch64__)
    case GemmPath::Neon:
      return detail::gemm_neon;
#endif
    case GemmPath::Scalar:
      return detail::gemm_scalar;
    default:
      return gemm_naive;
  }
}

void check_available(GemmPath path, const char* op) {
  AG_CHECK(path_available(path), op,
           std::string("the ") + gemm_path_name(path) + " kernel is not available on this CPU");
}

template <typename T>
void run_path(GemmPath path, const GemmShape& s, const T* A, const T* B, T* C) {
  check_available(path, "gemm_with_path");
  path_function<T>(path)(s, A, B, C);
}

// The naive path "packs" op(B) as a plain row-major K x N matrix and
// multiplies it with gemm_naive: the reference a packed B is tested against.
template <typename T>
void pack_plain(const GemmShape& s, const T* B, T* dst) {
  for (int64_t k = 0; k < s.K; ++k)
    for (int64_t j = 0; j < s.N; ++j)
      dst[k * s.N + j] = s.trans_b ? B[j * s.ldb + k] : B[k * s.ldb + j];
}
template <typename T>
void gemm_plain(const GemmShape& s, const T* A, const T* packed, T* C) {
  GemmShape plain = s;
  plain.trans_b = false;
  plain.ldb = s.N;
  gemm_naive(plain, A, packed, C);
}

// A packed B's functions on an available path.
template <typename T>
detail::PackedBPath<T> packed_b_functions(GemmPath path) {
  switch (path) {
#if defined(__x86_64__)
    case GemmPath::Avx2:
      return detail::packed_b_avx2<T>();
    case GemmPath::Avx512:
      return detail::packed_b_avx512<T>();
#endif
#if defined(__aarch64__)
    case GemmPath::Neon:
      return detail::packed_b_neon<T>();
#endif
    case GemmPath::Scalar:
      return detail::packed_b_scalar<T>();
    default:
      return {1, pack_plain<T>, gemm_plain<T>};
  }
}

}  // namespace

std::vector<GemmPath> available_gemm_paths() {
  std::vector<GemmPath> paths;
  for (GemmPath path : kAllPaths) {
    if (path_available(path)) paths.push_back(path);
  }
  return paths;
}

// The micro-kernel of the instruction set the kernels run (ATTOGRAD_ISA's).
GemmPath default_gemm_path() {
  switch (instruction_set()) {
    case InstructionSet::Avx2:
      return GemmPath::Avx2;
    case InstructionSet::Avx512:
      return GemmPath::Avx512;
    case InstructionSet::Neon:
      return GemmPath::Neon;
    case InstructionSet::Scalar:
      break;
  }
  return GemmPath::Scalar;
}

const char* gemm_path_name(GemmPath path) {
  switch (path) {
    case GemmPath::Naive:
      return "naive";
    case GemmPath::Scalar:
      return "scalar";
    case GemmPath::Avx2:
      return "avx2";
    case GemmPath::Avx512:
      return "avx512";
    case GemmPath::Neon:
      return "neon";
  }
  return "unknown";
}

const char* gemm_path_name() {
  return gemm_path_name(default_gemm_path());
}

namespace {

// The recording: its switch, read by every call, and its calls by shape.
std::atomic<bool> recording{false};
std::mutex recorded_mutex;
using CallKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, bool>;
std::map<CallKey, GemmCall> recorded;

// Runs the product (multiply()) and, while a recording runs, counts and times
// it as shape s, a float64 one if T is double.
template <typename T, class Multiply>
void run(const GemmShape& s, Multiply&& multiply) {
  if (!recording.load(std::memory_order_relaxed)) return multiply();
  const auto start = std::chrono::steady_clock::now();
  multiply();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  constexpr bool kFloat64 = std::is_same_v<T, double>;
  const std::lock_guard<std::mutex> lock(recorded_mutex);
  GemmCall& call = recorded[CallKey(s.batch, s.M, s.N, s.K, s.trans_a, s.trans_b, kFloat64)];
  if (call.calls == 0) call = {s.batch, s.M, s.N, s.K, s.trans_a, s.trans_b, kFloat64};
  ++call.calls;
  call.seconds += seconds;
}

template <typename T>
void gemm_packed(const GemmShape& s, const T* A, const PackedB<T>& B, T* C) {
  AG_CHECK(s.K == B.K() && s.N == B.N(), "gemm",
           "the product is [" + std::to_string(s.M) + ", " + std::to_string(s.K) + "] @ [" +
               std::to_string(s.K) + ", " + std::to_string(s.N) + "], the packed B [" +
               std::to_string(B.K()) + ", " + std::to_string(B.N()) + "]");
  GemmShape shared = s;  // every batch item reads the one packed B
  shared.trans_b = B.trans_b();
  shared.stride_b = 0;
  run<T>(shared, [&] { packed_b_functions<T>(B.path()).gemm(shared, A, B.data(), C); });
}

}  // namespace

void start_gemm_recording() {
  const std::lock_guard<std::mutex> lock(recorded_mutex);
  recorded.clear();
  recording.store(true);
}

std::vector<GemmCall> stop_gemm_recording() {
  recording.store(false);
  const std::lock_guard<std::mutex> lock(recorded_mutex);
  std::vector<GemmCall> calls;
  for (const auto& [key, call] : recorded) calls.push_back(call);
  std::stable_sort(calls.begin(), calls.end(),
                   [](const GemmCall& a, const GemmCall& b) { return a.seconds > b.seconds; });
  return calls;
}

// In reference mode (attograd/reference_mode.h) every product is the naive
// triple loop, the reference every kernel is tested against.
void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
  static const GemmFn<float> fast = path_function<float>(default_gemm_path());
  const GemmFn<float> fn = reference_mode() ? GemmFn<float>(gemm_naive) : fast;
  run<float>(s, [&] { fn(s, A, B, C); });
}

void gemm(const GemmShape& s, const double* A, const double* B, double* C) {
  static const GemmFn<double> fast = path_function<double>(default_gemm_path());
  const GemmFn<double> fn = reference_mode() ? GemmFn<double>(gemm_naive) : fast;
  run<double>(s, [&] { fn(s, A, B, C); });
}

template <typename T>
int64_t PackedB<T>::elements(const GemmShape& s, GemmPath path) {
  AG_CHECK(s.K >= 0 && s.N >= 0, "PackedB",
           "expected K, N >= 0, got " + std::to_string(s.K) + ", " + std::to_string(s.N));
  check_available(path, "PackedB");
  return s.K * detail::packed_b_width(s.N, packed_b_functions<T>(path).nr);  // whole slivers
}

template <typename T>
PackedB<T>::PackedB(const GemmShape& s, const T* B, T* storage, GemmPath path)
    : K_(s.K), N_(s.N), trans_b_(s.trans_b), path_(path), data_(storage) {
  if (elements(s, path) > 0) packed_b_functions<T>(path).pack(s, B, storage);
}
template class PackedB<float>;
template class PackedB<double>;

void gemm(const GemmShape& s, const float* A, const PackedB<float>& B, float* C) {
  gemm_packed(s, A, B, C);
}

void gemm(const GemmShape& s, const double* A, const PackedB<double>& B, double* C) {
  gemm_packed(s, A, B, C);
}

void gemm_with_path(GemmPath path, const GemmShape& s, const float* A, const float* B, float* C) {
  run_path(path, s, A, B, C);
}

void gemm_with_path(GemmPath path, const GemmShape& s, const double* A, const double* B,
                    double* C) {
  run_path(path, s, A, B, C);
}

}  // namespace ag::kernels
