// GEMM speed, attograd against OpenBLAS at its best, side by side in one run.
//
//   peak/fma_<isa>                    the core's float32 FMA peak (GFLOPS), one thread
//   steps/<step>/<N>                  the walk of docs/matmul.md at N = 256 and 1024
//   gemm/<shape>/<t>t/<impl>          every shape attograd serves, on t = 1 and 2
//                                     threads, impl = attograd or openblas
// The shapes: kShapes below (square products; attention's batched Q K^T
// and P V and the A^T B / A B^T forms their backward runs; d2l-sized small
// products; Linear's x W^T; float64), and the products one training step of
// the g2p model and of d2l's Transformer makes (bench/training_steps.h),
// recorded at start-up (kernels::start_gemm_recording) and named
// MODEL_BATCHxMxNxK_NN (NN, TN, NT, TT: which operands are transposed). The
// program prints each step's shapes first, with their calls and share of
// the step's GEMM time, and times those that make up 95% of it. A batched
// shape is one attograd call, and for OpenBLAS a loop of cblas_?gemm over
// the batch items (it has no batched call), each on the same number of
// threads as attograd.
//
// At the end a table gives, for every gemm/ shape and thread count, the
// median time per call of both libraries over the repetitions and their
// ratio OpenBLAS time / attograd time (> 1: attograd is faster), flagging
// any ratio below 1. scripts/bench_gemm_compare.sh runs this with
// repetitions, interleaved.
//
// OpenBLAS at its best: OpenBLAS picks its kernels when the library loads,
// from OPENBLAS_CORETYPE if set, else from the CPU it detects (and Debian's
// 0.3.21 misdetects recent Intel CPUs; an environment may also name a weaker
// core on purpose). So this program re-executes itself once with the core
// the CPU is best served by — SkylakeX (AVX-512 kernels) on a CPU with
// AVX-512, Haswell (AVX2 + FMA) on one with only AVX2 — whatever the
// environment said. The first lines of the output say what ran.
#include <benchmark/benchmark.h>
#if defined(ATTOGRAD_HAVE_OPENBLAS)
#include <cblas.h>
#endif
#if defined(__linux__)
#include <unistd.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attograd/kernels/gemm.h"
#include "attograd/kernels/instruction_set.h"
#include "attograd/tensor.h"
#include "training_steps.h"

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

// ---- the machine's peak -------------------------------------------------------------------------

#if defined(__x86_64__)
// The core's float32 FMA peak: 12 independent chains of fused multiply-adds
// on whole vectors (enough to cover the FMA units' latency), nothing loaded
// or stored. A kernel's GFLOP/s over this is its share of the machine.
// (One function per instruction set: a target attribute does not reach
// into a template's or a lambda's body.)
__attribute__((target("avx512f"))) float fma_peak_avx512(int64_t rounds) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (__m512& v : acc) v = _mm512_fmadd_ps(v, a, b);
  }
  alignas(64) float lanes[16];
  float sum = 0;
  for (const __m512& v : acc) {
    _mm512_store_ps(lanes, v);
    for (float x : lanes) sum += x;
  }
  return sum;
}

__attribute__((target("avx2,fma"))) float fma_peak_avx2(int64_t rounds) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (__m256& v : acc) v = _mm256_fmadd_ps(v, a, b);
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (const __m256& v : acc) {
    _mm256_store_ps(lanes, v);
    for (float x : lanes) sum += x;
  }
  return sum;
}

// peak/fma_avx512 (or peak/fma_avx2): GFLOPS of the loop above, one thread,
// in the instruction set the kernels run (ATTOGRAD_ISA=avx2 on an AVX-512
// machine: the AVX2 peak, the one its kernels can reach).
void register_fma_peak() {
  const ag::kernels::InstructionSet set = ag::kernels::instruction_set();
  const bool avx512 = set == ag::kernels::InstructionSet::Avx512;
  if (!avx512 && set != ag::kernels::InstructionSet::Avx2) return;
  benchmark::RegisterBenchmark(
      avx512 ? "peak/fma_avx512" : "peak/fma_avx2",
      [avx512](benchmark::State& state) {
        constexpr int64_t kRounds = 1 << 20;
        for (auto _ : state)
          benchmark::DoNotOptimize(avx512 ? fma_peak_avx512(kRounds) : fma_peak_avx2(kRounds));
        const double flops = 2.0 * 12 * (avx512 ? 16 : 8) * kRounds;
        state.counters["GFLOPS"] =
            benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
      })
      ->Unit(benchmark::kMillisecond);
}
#else
void register_fma_peak() {}
#endif

// ---- operands and timing ---------------------------------------------------------------------

// One product to measure: `batch` items of op(A) [M, K] @ op(B) [K, N].
struct Product {
  std::string name;  // the benchmark's shape key
  std::string what;  // where attograd runs it
  bool float64;
  int64_t batch, M, N, K;
  bool trans_a, trans_b;
};

// Attention (d2l's scoring chapter, 64 heads or batch items, 128 queries and
// keys, d = 64): the forward's S = Q K^T and O = P V, and the backward's
// dQ = dS K and dP = dO V^T (the same forms), dK = dS^T Q and dV = P^T dO.
const Product kShapes[] = {
    {"sq128", "square 128", false, 1, 128, 128, 128, false, false},
    {"sq256", "square 256", false, 1, 256, 256, 256, false, false},
    {"sq512", "square 512", false, 1, 512, 512, 512, false, false},
    {"sq1024", "square 1024", false, 1, 1024, 1024, 1024, false, false},
    {"sq2048", "square 2048", false, 1, 2048, 2048, 2048, false, false},
    {"sq1024_AtB", "1024^3 A^T B", false, 1, 1024, 1024, 1024, true, false},
    {"sq1024_ABt", "1024^3 A B^T", false, 1, 1024, 1024, 1024, false, true},
    {"sq1024_AtBt", "1024^3 A^T B^T", false, 1, 1024, 1024, 1024, true, true},
    {"attn_QKt", "64x[128x64]@[128x64]^T  QK^T dP", false, 64, 128, 128, 64, false, true},
    {"attn_PV", "64x[128x128]@[128x64]   PV dQ", false, 64, 128, 64, 128, false, false},
    {"attn_AtB", "64x[128x128]^T@[128x64] dK dV", false, 64, 128, 64, 128, true, false},
    {"d2l_512", "8x[512x64]@[64x512]", false, 8, 512, 512, 64, false, false},
    {"d2l_512_Bt", "8x[512x64]@[512x64]^T", false, 8, 512, 512, 64, false, true},
    {"d2l_512_AtB", "8x[512x512]^T@[512x64]", false, 8, 512, 64, 512, true, false},
    {"d2l_20x8", "[20x8]@[8x64]", false, 1, 20, 64, 8, false, false},
    {"d2l_mha", "10x[4x20]@[6x20]^T", false, 10, 4, 6, 20, false, true},
    {"linear_4096x512", "[4096x512]@[512x512]^T", false, 1, 4096, 512, 512, false, true},
    {"f64_sq256", "float64 square 256", true, 1, 256, 256, 256, false, false},
    {"f64_sq1024", "float64 square 1024", true, 1, 1024, 1024, 1024, false, false},
    {"f64_attn_QKt", "float64 64x[128x64]@[128x64]^T", true, 64, 128, 128, 64, false, true},
};
constexpr int kThreadCounts[] = {1, 2};

// kShapes, then the shapes recorded from the training steps (register_all).
std::vector<Product>& products() {
  static std::vector<Product> all(std::begin(kShapes), std::end(kShapes));
  return all;
}

template <typename T>
struct Operands {
  GemmShape s;
  std::vector<T> a, b, c;
};

// Each batch item contiguous, filled with uniform values in [-1, 1).
template <typename T>
Operands<T> make_operands(const Product& p) {
  Operands<T> op;
  GemmShape& s = op.s;
  s.batch = p.batch;
  s.M = p.M;
  s.N = p.N;
  s.K = p.K;
  s.trans_a = p.trans_a;
  s.trans_b = p.trans_b;
  s.lda = p.trans_a ? p.M : p.K;
  s.ldb = p.trans_b ? p.K : p.N;
  s.ldc = p.N;
  s.stride_a = p.M * p.K;
  s.stride_b = p.K * p.N;
  s.stride_c = p.M * p.N;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  op.a.resize(p.batch * p.M * p.K);
  op.b.resize(p.batch * p.K * p.N);
  op.c.resize(p.batch * p.M * p.N);
  for (T& x : op.a) x = static_cast<T>(uniform(rng));
  for (T& x : op.b) x = static_cast<T>(uniform(rng));
  return op;
}

// Registers `name`: runs `fn` on fresh operands with `threads` threads for
// attograd and OpenBLAS alike, and reports GFLOPS.
template <typename T>
void add(const std::string& name, const Product& p, int threads,
         std::function<void(Operands<T>&)> fn) {
  benchmark::RegisterBenchmark(name.c_str(),
                               [=](benchmark::State& state) {
                                 Operands<T> op = make_operands<T>(p);
                                 ag::set_num_threads(threads);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
                                 openblas_set_num_threads(threads);
                                 if (openblas_get_num_threads() != threads) {
                                   state.SkipWithError("OpenBLAS refused the thread count");
                                   return;
                                 }
#endif
                                 for (auto _ : state) {
                                   fn(op);
                                   benchmark::DoNotOptimize(op.c.data());
                                   benchmark::ClobberMemory();
                                 }
                                 const double flops = 2.0 * p.batch * p.M * p.N * p.K;
                                 state.counters["GFLOPS"] = benchmark::Counter(
                                     flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

template <typename T>
void attograd_gemm(Operands<T>& op) {
  ag::kernels::gemm(op.s, op.a.data(), op.b.data(), op.c.data());
}
void naive_gemm(Operands<float>& op) {
  ag::kernels::gemm_naive(op.s, op.a.data(), op.b.data(), op.c.data());
}

#if defined(ATTOGRAD_HAVE_OPENBLAS)
// OpenBLAS one batch item at a time: it has no batched GEMM.
void openblas_gemm(Operands<float>& op) {
  const GemmShape& s = op.s;
  for (int64_t b = 0; b < s.batch; ++b) {
    cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                s.trans_b ? CblasTrans : CblasNoTrans, s.M, s.N, s.K, 1.0f,
                op.a.data() + b * s.stride_a, s.lda, op.b.data() + b * s.stride_b, s.ldb, 0.0f,
                op.c.data() + b * s.stride_c, s.ldc);
  }
}
void openblas_gemm(Operands<double>& op) {
  const GemmShape& s = op.s;
  for (int64_t b = 0; b < s.batch; ++b) {
    cblas_dgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                s.trans_b ? CblasTrans : CblasNoTrans, s.M, s.N, s.K, 1.0,
                op.a.data() + b * s.stride_a, s.lda, op.b.data() + b * s.stride_b, s.ldb, 0.0,
                op.c.data() + b * s.stride_c, s.ldc);
  }
}
#endif

// ---- what runs ---------------------------------------------------------------------------------

// The OpenBLAS core of the instruction set attograd's kernels run (the best
// this CPU has, or ATTOGRAD_ISA's: then both sides run the same set), or
// nullptr to leave OpenBLAS to its own detection.
const char* best_openblas_core() {
  switch (ag::kernels::instruction_set()) {
    case ag::kernels::InstructionSet::Avx512:
      return "SkylakeX";
    case ag::kernels::InstructionSet::Avx2:
      return "Haswell";
    default:
      return nullptr;
  }
}

// Set in the environment of the re-executed program: it must not re-execute again.
constexpr const char* kReexecMark = "ATTOGRAD_BENCH_GEMM_REEXEC";

// Re-executes this program once with OPENBLAS_CORETYPE set to
// best_openblas_core() when the environment says otherwise (see the file
// comment). Returns when there is nothing to do, or when the exec failed.
void run_openblas_at_its_best(char** argv) {
#if defined(ATTOGRAD_HAVE_OPENBLAS) && defined(__linux__)
  const char* best = best_openblas_core();
  const char* current = std::getenv("OPENBLAS_CORETYPE");
  if (best == nullptr || std::getenv(kReexecMark) != nullptr) return;
  if (current != nullptr && std::strcmp(current, best) == 0) return;
  std::string was = current != nullptr ? current : "(unset)";
  setenv("OPENBLAS_CORETYPE", best, 1);
  setenv(kReexecMark, was.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::perror("bench_gemm: re-exec with the best OPENBLAS_CORETYPE failed");
#else
  (void)argv;
#endif
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

bool stdout_is_terminal() {
#if defined(__linux__)
  return isatty(STDOUT_FILENO) != 0;
#else
  return false;
#endif
}

void print_configuration() {
  std::printf("CPU: %s; features:", cpu_model().c_str());
#if defined(__x86_64__)
  __builtin_cpu_init();
  // __builtin_cpu_supports takes only a literal.
  const std::pair<const char*, bool> features[] = {
      {"avx2", __builtin_cpu_supports("avx2")},
      {"fma", __builtin_cpu_supports("fma")},
      {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")},
      {"avx512dq", __builtin_cpu_supports("avx512dq")},
      {"avx512vl", __builtin_cpu_supports("avx512vl")}};
  for (const auto& [name, present] : features) {
    if (present) std::printf(" %s", name);
  }
#endif
  const char* asked = std::getenv("ATTOGRAD_ISA");
  std::printf(
      "\nattograd: instruction set %s (ATTOGRAD_ISA=%s), gemm kernel %s; default threads %d "
      "(each benchmark sets 1 or 2)\n",
      ag::kernels::instruction_set_name(ag::kernels::instruction_set()),
      asked != nullptr ? asked : "(unset: the best)", ag::kernels::gemm_path_name(),
      ag::get_num_threads());
  benchmark::AddCustomContext("attograd_instruction_set",
                              ag::kernels::instruction_set_name(ag::kernels::instruction_set()));
#if defined(ATTOGRAD_HAVE_OPENBLAS)
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const char* was = std::getenv(kReexecMark);
  std::printf("OpenBLAS: core %s; config: %s\n", openblas_get_corename(), openblas_get_config());
  std::printf("OpenBLAS: OPENBLAS_CORETYPE=%s", coretype ? coretype : "(unset: autodetected)");
  if (was != nullptr) std::printf(" (set by bench_gemm; the environment said %s)", was);
  std::printf("; default threads %d (each benchmark sets the same count as attograd's)\n",
              openblas_get_num_threads());
  const char* best = best_openblas_core();
  if (best != nullptr && std::strcmp(openblas_get_corename(), best) != 0) {
    std::printf("WARNING: OpenBLAS runs core %s, not %s, that of attograd's instruction set\n",
                openblas_get_corename(), best);
  }
#else
  std::printf("OpenBLAS: not found at build time; attograd only\n");
#endif
  std::fflush(stdout);
}

// ---- the products of the training steps ---------------------------------------------------

// "128x[15x256]@[768x256]^T": batch items (when more than one), then A and B
// as stored, ^T where the product reads one transposed (kShapes' notation).
std::string describe(const ag::kernels::GemmCall& c) {
  const auto ll = [](int64_t v) { return static_cast<long long>(v); };
  char batch[24] = "";
  if (c.batch > 1) std::snprintf(batch, sizeof batch, "%lldx", ll(c.batch));
  char text[96];
  std::snprintf(text, sizeof text, "%s%s[%lldx%lld]%s@[%lldx%lld]%s", batch,
                c.float64 ? "f64 " : "", ll(c.trans_a ? c.K : c.M), ll(c.trans_a ? c.M : c.K),
                c.trans_a ? "^T" : "", ll(c.trans_b ? c.N : c.K), ll(c.trans_b ? c.K : c.N),
                c.trans_b ? "^T" : "");
  return text;
}

// Records one training step of each model (bench/training_steps.h, one
// thread, after a step that sizes the buffers), prints every shape its
// products had with their calls and share of the step's GEMM time, and adds
// the shapes that make up 95% of that time to products() as
// <model>_<batch>x<M>x<N>x<K>_<NN|TN|NT|TT> (which operands are transposed),
// so that each is timed beside OpenBLAS like kShapes. The operands are
// contiguous here; in the step some are views (a GRU's gates, a head's
// slice), with the same arithmetic.
void record_step_shapes() {
  struct Model {
    const char* name;
    std::unique_ptr<ag::bench::TrainingStep> step;
  };
  Model models[] = {{"g2p", std::make_unique<ag::bench::TrainingStep>(ag::bench::kG2p, "additive")},
                    {"transformer", std::make_unique<ag::bench::TrainingStep>(ag::bench::kDates)}};
  ag::set_num_threads(1);
  for (Model& m : models) {
    m.step->run();
    const auto start = std::chrono::steady_clock::now();
    ag::kernels::start_gemm_recording();
    m.step->run();
    const std::vector<ag::kernels::GemmCall> calls = ag::kernels::stop_gemm_recording();
    const double step_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double gemm_seconds = 0;
    int64_t call_count = 0;
    for (const auto& c : calls) {
      gemm_seconds += c.seconds;
      call_count += c.calls;
    }
    std::printf("%s step: %.1f ms, of it GEMM %.1f ms (%.0f%%) in %lld calls of %zu shapes\n",
                m.name, 1e3 * step_seconds, 1e3 * gemm_seconds, 100 * gemm_seconds / step_seconds,
                static_cast<long long>(call_count), calls.size());
    double covered = 0;
    for (const ag::kernels::GemmCall& c : calls) {
      const double share = c.seconds / gemm_seconds;
      const bool timed = covered < 0.95;
      // Named by the shape, so that a name means the same product in every
      // run (the shares, and so the order, move from run to run).
      char name[64];
      std::snprintf(name, sizeof name, "%s_%lldx%lldx%lldx%lld_%c%c", m.name,
                    static_cast<long long>(c.batch), static_cast<long long>(c.M),
                    static_cast<long long>(c.N), static_cast<long long>(c.K), c.trans_a ? 'T' : 'N',
                    c.trans_b ? 'T' : 'N');
      std::printf("  %-28s %-36s %5lld calls %6.2f ms %5.1f%%%s\n", timed ? name : "",
                  describe(c).c_str(), static_cast<long long>(c.calls), 1e3 * c.seconds,
                  100 * share, timed ? "" : "  (not timed: past 95%)");
      if (timed) {
        char what[96];
        std::snprintf(what, sizeof what, "%s x%lld %.0f%%", describe(c).c_str(),
                      static_cast<long long>(c.calls), 100 * share);
        products().push_back({name, what, c.float64, c.batch, c.M, c.N, c.K, c.trans_a, c.trans_b});
      }
      covered += share;
    }
  }
  std::fflush(stdout);
}

void register_all() {
  register_fma_peak();
  // The walk of docs/matmul.md.
  for (int64_t n : {256, 1024}) {
    const std::string N = std::to_string(n);
    const Product sq{"", "", false, 1, n, n, n, false, false};
    add<float>("steps/0_naive_ijk/" + N, sq, 1, naive_gemm);
    add<float>("steps/1_loop_order_ikj/" + N, sq, 1, [n](Operands<float>& op) {
      gemm_loop_order(n, op.a.data(), op.b.data(), op.c.data());
    });
    add<float>("steps/2_blocked_loops/" + N, sq, 1, [n](Operands<float>& op) {
      gemm_blocked_loops(n, op.a.data(), op.b.data(), op.c.data());
    });
    for (GemmPath path : ag::kernels::available_gemm_paths()) {
      if (path == GemmPath::Naive) continue;
      const std::string name = path == GemmPath::Scalar
                                   ? "3_packed_scalar"
                                   : std::string("4_simd_") + ag::kernels::gemm_path_name(path);
      add<float>("steps/" + name + "/" + N, sq, 1, [path](Operands<float>& op) {
        ag::kernels::gemm_with_path(path, op.s, op.a.data(), op.b.data(), op.c.data());
      });
    }
    add<float>("steps/5_threads2/" + N, sq, 2, attograd_gemm<float>);
  }

  record_step_shapes();
  for (const Product& p : products()) {
    for (int threads : kThreadCounts) {
      const std::string prefix =
          std::string("gemm/") + p.name + "/" + std::to_string(threads) + "t/";
      if (p.float64) {
        add<double>(prefix + "attograd", p, threads, attograd_gemm<double>);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
        add<double>(prefix + "openblas", p, threads,
                    [](Operands<double>& op) { openblas_gemm(op); });
#endif
      } else {
        add<float>(prefix + "attograd", p, threads, attograd_gemm<float>);
#if defined(ATTOGRAD_HAVE_OPENBLAS)
        add<float>(prefix + "openblas", p, threads, [](Operands<float>& op) { openblas_gemm(op); });
#endif
      }
    }
  }
}

// ---- the comparison table ----------------------------------------------------------------------

// Decimals to print a time in microseconds with: three for the tiny products
// (a tenth of a microsecond), one for the others.
int digits(double us) {
  return us < 10 ? 3 : 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The console output, plus every repetition's time per call, for the table.
class ComparisonReporter : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      // GetAdjustedRealTime is in the benchmark's unit: microseconds (see add()).
      times_[run.run_name.function_name].push_back(run.GetAdjustedRealTime());
    }
  }

  // shape threads ours_us openblas_us ratio: medians over the repetitions,
  // ratio = openblas / ours (> 1: attograd faster); `best` is the same ratio
  // of the fastest repetitions.
  void print_table() const {
    std::printf("\n%-28s %-40s %7s %11s %11s %6s %6s\n", "shape", "what", "threads", "ours_us",
                "openblas_us", "ratio", "best");
    int slower = 0, rows = 0;
    for (const Product& p : products()) {
      for (int threads : kThreadCounts) {
        const std::string key =
            std::string("gemm/") + p.name + "/" + std::to_string(threads) + "t/";
        const auto ours = times_.find(key + "attograd"), blas = times_.find(key + "openblas");
        if (ours == times_.end()) continue;
        std::printf("%-28s %-40s %7d %11.*f", p.name.c_str(), p.what.c_str(), threads,
                    digits(median(ours->second)), median(ours->second));
        if (blas != times_.end()) {
          const double ratio = median(blas->second) / median(ours->second);
          const double best = *std::min_element(blas->second.begin(), blas->second.end()) /
                              *std::min_element(ours->second.begin(), ours->second.end());
          std::printf(" %11.*f %6.2f %6.2f%s", digits(median(blas->second)), median(blas->second),
                      ratio, best, ratio < 1.0 ? "  < 1.0" : "");
          slower += ratio < 1.0;
          ++rows;
        }
        std::printf("\n");
      }
    }
    if (rows > 0) std::printf("%d of %d rows below 1.0\n", slower, rows);
  }

 private:
  std::map<std::string, std::vector<double>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  run_openblas_at_its_best(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  print_configuration();
  register_all();
  // Colours only on a terminal (the compare script filters the output).
  ComparisonReporter reporter(stdout_is_terminal() ? benchmark::ConsoleReporter::OO_Defaults
                                                   : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_table();
  benchmark::Shutdown();
  return 0;
}
