// GEMM GFLOP/s, float32, side by side in one run: the naive loop, the steps
// of docs/matmul.md, each attograd kernel path, and OpenBLAS cblas_sgemm.
//
//   steps/<step>/<N>            the walk of docs/matmul.md at N = 256 and 1024
//   square/<N>/<impl>           naive, attograd, openblas; one thread
//   threads2/<N>/<impl>         attograd and openblas on two threads
//   transposed/<shape>/<impl>   A^T B, A B^T, A^T B^T and Linear's x W^T
//   attention/<shape>/<impl>    batched Q K^T-like products: attograd in one
//                               call, openblas looping over the batch
//   dgemm/<N>/<impl>            float64, one thread
// Everything runs on one thread except threads2 and steps/5_threads2.
// A summary table at the end gives attograd / OpenBLAS for every target of
// the issue (#3).
//
// OpenBLAS at its best: OpenBLAS picks its kernels when the library loads,
// from OPENBLAS_CORETYPE if set; so on a CPU with AVX-512 this program
// re-executes itself with OPENBLAS_CORETYPE=SkylakeX (its AVX-512 SGEMM
// kernel) unless the caller already chose a core type. The first lines of
// the output say which configuration ran.
#include <benchmark/benchmark.h>
#if defined(ATTOGRAD_HAVE_OPENBLAS)
#include <cblas.h>
#endif
#if defined(__linux__)
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attograd/kernels/gemm.h"
#include "attograd/tensor.h"

namespace {

using ag::kernels::GemmPath;
using ag::kernels::GemmShape;

// ---- the steps of docs/matmul.md that are not library paths ---------------------------------

// Step 1, loop order i-k-j: the inner loop runs along a row of B and a row of
// C, both contiguous, so it streams and vectorizes (i-j-k walks a column of B).
void gemm_loop_order(int64_t n, const float* A, const float* B, float* C) {
  std::fill_n(C, n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < n; ++k) {
      const float a = A[i * n + k];
      for (int64_t j = 0; j < n; ++j) C[i * n + j] += a * B[k * n + j];
    }
  }
}

// Step 2, cache blocking: the same loops over a 384 x 512 block of B at a
// time (768 KB, inside L2), so every row of A reuses it from cache.
void gemm_blocked_loops(int64_t n, const float* A, const float* B, float* C) {
  constexpr int64_t kKC = 384, kNC = 512;
  std::fill_n(C, n * n, 0.0f);
  for (int64_t jc = 0; jc < n; jc += kNC) {
    const int64_t j_end = std::min(n, jc + kNC);
    for (int64_t pc = 0; pc < n; pc += kKC) {
      const int64_t k_end = std::min(n, pc + kKC);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = pc; k < k_end; ++k) {
          const float a = A[i * n + k];
          for (int64_t j = jc; j < j_end; ++j) C[i * n + j] += a * B[k * n + j];
        }
      }
    }
  }
}

// ---- operands and timing ---------------------------------------------------------------------

template <typename T>
struct Operands {
  GemmShape s;
  std::vector<T> a, b, c;
};

// `batch` items of op(A) @ op(B), op(A) = [M, K], op(B) = [K, N], each
// item contiguous.
template <typename T>
Operands<T> make_operands(int64_t batch, int64_t M, int64_t N, int64_t K, bool trans_a,
                          bool trans_b) {
  Operands<T> op;
  op.s.batch = batch;
  op.s.M = M;
  op.s.N = N;
  op.s.K = K;
  op.s.trans_a = trans_a;
  op.s.trans_b = trans_b;
  op.s.lda = trans_a ? M : K;
  op.s.ldb = trans_b ? K : N;
  op.s.ldc = N;
  op.s.stride_a = M * K;
  op.s.stride_b = K * N;
  op.s.stride_c = M * N;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  op.a.resize(batch * M * K);
  op.b.resize(batch * K * N);
  op.c.resize(batch * M * N);
  for (T& x : op.a) x = static_cast<T>(uniform(rng));
  for (T& x : op.b) x = static_cast<T>(uniform(rng));
  return op;
}

template <typename T>
double flops(const Operands<T>& op) {
  return 2.0 * op.s.batch * op.s.M * op.s.N * op.s.K;
}

// Registers `name`: runs `fn` on fresh operands with `threads` threads (for
// attograd and OpenBLAS alike) and reports GFLOPS.
template <typename T>
void add(const std::string& name, int64_t batch, int64_t M, int64_t N, int64_t K, bool trans_a,
         bool trans_b, int threads, std::function<void(Operands<T>&)> fn) {
  benchmark::RegisterBenchmark(
      name.c_str(),
      [=](benchmark::State& state) {
        Operands<T> op = make_operands<T>(batch, M, N, K, trans_a, trans_b);
        ag::set_num_threads(threads);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
        openblas_set_num_threads(threads);
#endif
        for (auto _ : state) {
          fn(op);
          benchmark::DoNotOptimize(op.c.data());
          benchmark::ClobberMemory();
        }
        state.counters["GFLOPS"] =
            benchmark::Counter(flops(op) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
      })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

void attograd_gemm(Operands<float>& op) {
  ag::kernels::gemm(op.s, op.a.data(), op.b.data(), op.c.data());
}
void attograd_dgemm(Operands<double>& op) {
  ag::kernels::gemm(op.s, op.a.data(), op.b.data(), op.c.data());
}
void naive_gemm(Operands<float>& op) {
  ag::kernels::gemm_naive(op.s, op.a.data(), op.b.data(), op.c.data());
}

#if defined(ATTOGRAD_HAVE_OPENBLAS)
// OpenBLAS one batch item at a time, as a framework without batched GEMM would.
void openblas_gemm(Operands<float>& op) {
  const GemmShape& s = op.s;
  for (int64_t b = 0; b < s.batch; ++b) {
    cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                s.trans_b ? CblasTrans : CblasNoTrans, s.M, s.N, s.K, 1.0f,
                op.a.data() + b * s.stride_a, s.lda, op.b.data() + b * s.stride_b, s.ldb, 0.0f,
                op.c.data() + b * s.stride_c, s.ldc);
  }
}
void openblas_dgemm(Operands<double>& op) {
  const GemmShape& s = op.s;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.M, s.N, s.K, 1.0, op.a.data(), s.lda,
              op.b.data(), s.ldb, 0.0, op.c.data(), s.ldc);
}

// Re-executes this program with OPENBLAS_CORETYPE=SkylakeX on an AVX-512 CPU
// (see the file comment). Returns normally when there is nothing to do or
// the exec failed.
void run_openblas_at_its_best(char** argv) {
#if defined(__linux__) && defined(__x86_64__)
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || !__builtin_cpu_supports("avx512f")) return;
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  setenv("ATTOGRAD_BENCH_SET_CORETYPE", "1", 1);
  execv("/proc/self/exe", argv);
  std::perror("bench_gemm: re-exec with OPENBLAS_CORETYPE=SkylakeX failed");
#else
  (void)argv;
#endif
}
#endif

std::string n_str(int64_t n) {
  return std::to_string(n);
}

void register_all() {
  // The walk of docs/matmul.md.
  for (int64_t n : {256, 1024}) {
    const std::string N = n_str(n);
    add<float>("steps/0_naive_ijk/" + N, 1, n, n, n, false, false, 1, naive_gemm);
    add<float>(
        "steps/1_loop_order_ikj/" + N, 1, n, n, n, false, false, 1,
        [n](Operands<float>& op) { gemm_loop_order(n, op.a.data(), op.b.data(), op.c.data()); });
    add<float>("steps/2_blocked_loops/" + N, 1, n, n, n, false, false, 1, [n](Operands<float>& op) {
      gemm_blocked_loops(n, op.a.data(), op.b.data(), op.c.data());
    });
    for (GemmPath path : ag::kernels::available_gemm_paths()) {
      if (path == GemmPath::Naive) continue;
      const std::string name = path == GemmPath::Scalar
                                   ? "3_packed_scalar"
                                   : std::string("4_simd_") + ag::kernels::gemm_path_name(path);
      add<float>("steps/" + name + "/" + N, 1, n, n, n, false, false, 1,
                 [path](Operands<float>& op) {
                   ag::kernels::gemm_with_path(path, op.s, op.a.data(), op.b.data(), op.c.data());
                 });
    }
    add<float>("steps/5_threads2/" + N, 1, n, n, n, false, false, 2, attograd_gemm);
  }

  for (int64_t n : {64, 128, 256, 512, 1024, 2048}) {
    const std::string prefix = "square/" + n_str(n) + "/";
    if (n <= 512) add<float>(prefix + "naive", 1, n, n, n, false, false, 1, naive_gemm);
    add<float>(prefix + "attograd", 1, n, n, n, false, false, 1, attograd_gemm);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
    add<float>(prefix + "openblas", 1, n, n, n, false, false, 1, openblas_gemm);
#endif
  }

  add<float>("threads2/1024/attograd", 1, 1024, 1024, 1024, false, false, 2, attograd_gemm);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
  add<float>("threads2/1024/openblas", 1, 1024, 1024, 1024, false, false, 2, openblas_gemm);
#endif

  // The backward's A^T G and G B^T, and Linear's x W^T, without transposing.
  struct Transposed {
    const char* name;
    int64_t M, N, K;
    bool trans_a, trans_b;
  };
  for (const Transposed& t : {Transposed{"1024_AtB", 1024, 1024, 1024, true, false},
                              Transposed{"1024_ABt", 1024, 1024, 1024, false, true},
                              Transposed{"1024_AtBt", 1024, 1024, 1024, true, true},
                              Transposed{"linear_4096x512x512", 4096, 512, 512, false, true}}) {
    const std::string prefix = std::string("transposed/") + t.name + "/";
    add<float>(prefix + "attograd", 1, t.M, t.N, t.K, t.trans_a, t.trans_b, 1, attograd_gemm);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
    add<float>(prefix + "openblas", 1, t.M, t.N, t.K, t.trans_a, t.trans_b, 1, openblas_gemm);
#endif
  }

  struct Attention {
    const char* name;
    int64_t batch, T, d;
    bool trans_b;
  };
  for (const Attention& a : {Attention{"64x128x64x128", 64, 128, 64, false},
                             Attention{"64x128x64x128_Bt", 64, 128, 64, true},
                             Attention{"8x512x64x512", 8, 512, 64, false},
                             Attention{"8x512x64x512_Bt", 8, 512, 64, true}}) {
    const std::string prefix = std::string("attention/") + a.name + "/";
    add<float>(prefix + "attograd", a.batch, a.T, a.T, a.d, false, a.trans_b, 1, attograd_gemm);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
    add<float>(prefix + "openblas", a.batch, a.T, a.T, a.d, false, a.trans_b, 1, openblas_gemm);
#endif
  }

  add<double>("dgemm/1024/attograd", 1, 1024, 1024, 1024, false, false, 1, attograd_dgemm);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
  add<double>("dgemm/1024/openblas", 1, 1024, 1024, 1024, false, false, 1, openblas_dgemm);
#endif
}

// The console output, plus the best GFLOPS of every benchmark for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const auto counter = run.counters.find("GFLOPS");
      if (run.run_type != Run::RT_Iteration || run.error_occurred || counter == run.counters.end())
        continue;
      double& best = gflops_[run.run_name.function_name];
      best = std::max(best, counter->second.value);
    }
  }

  // attograd / OpenBLAS for every target of issue #3 (and the other shapes).
  void print_summary() const {
    std::printf("\n%-32s %8s %9s %9s %7s %7s  %s\n", "float32 unless noted", "naive", "attograd",
                "openblas", "ratio", "target", "met");
    // target 0: no target, the ratio is for information.
    auto row = [&](const std::string& label, const std::string& key, double target,
                   const std::string& naive_key) {
      const double ours = get(key + "/attograd"), blas = get(key + "/openblas");
      if (ours == 0) return;
      const double naive = get(naive_key);
      std::printf("%-32s %8s %9.1f %9s", label.c_str(), naive > 0 ? fmt(naive).c_str() : "-", ours,
                  blas > 0 ? fmt(blas).c_str() : "-");
      if (blas > 0) std::printf(" %6.2fx", ours / blas);
      if (blas > 0 && target > 0) {
        std::printf(" %6.2fx  %s", target, ours / blas >= target ? "yes" : "NO");
      }
      std::printf("\n");
    };
    for (int64_t n : {64, 128, 256, 512, 1024, 2048}) {
      const std::string N = n_str(n);
      row("square N=" + N, "square/" + N, n <= 128 ? 0.75 : 0.9,
          n <= 512 ? "square/" + N + "/naive" : "steps/0_naive_ijk/" + N);
    }
    for (const char* shape :
         {"64x128x64x128", "64x128x64x128_Bt", "8x512x64x512", "8x512x64x512_Bt"}) {
      row(std::string("attention ") + shape, std::string("attention/") + shape, 0.9, "");
    }
    for (const char* shape : {"1024_AtB", "1024_ABt", "1024_AtBt", "linear_4096x512x512"}) {
      row(std::string("transposed ") + shape, std::string("transposed/") + shape, 0, "");
    }
    row("float64 N=1024", "dgemm/1024", 0, "");
    row("2 threads N=1024", "threads2/1024", 0, "");
    const double one = get("square/1024/attograd"), two = get("threads2/1024/attograd");
    if (one > 0 && two > 0) {
      std::printf("%-32s %8s %8.2fx %9s %7s %6.2fx  %s\n", "2 threads / 1 thread N=1024", "",
                  two / one, "", "", 1.8, two / one >= 1.8 ? "yes" : "NO");
    }
  }

 private:
  double get(const std::string& name) const {
    const auto it = gflops_.find(name);
    return it == gflops_.end() ? 0.0 : it->second;
  }
  static std::string fmt(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    return buf;
  }
  std::map<std::string, double> gflops_;
};

}  // namespace

int main(int argc, char** argv) {
#if defined(ATTOGRAD_HAVE_OPENBLAS)
  run_openblas_at_its_best(argv);
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::printf("attograd gemm path: %s (threads default %d)\n", ag::kernels::gemm_path_name(),
              ag::get_num_threads());
#if defined(ATTOGRAD_HAVE_OPENBLAS)
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OpenBLAS: %s; core %s; OPENBLAS_CORETYPE=%s%s\n", openblas_get_config(),
              openblas_get_corename(), coretype ? coretype : "(unset: autodetected)",
              std::getenv("ATTOGRAD_BENCH_SET_CORETYPE") ? " (set by bench_gemm)" : "");
#else
  std::printf("OpenBLAS: not found at build time; attograd and naive only\n");
#endif

  register_all();
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
