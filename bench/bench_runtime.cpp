// The runtime's per-call costs that are not arithmetic: where the memory of
// a call comes from, and what recording the graph costs (issue 14).
//
//   sdpa/b8_t512/no_grad   nn::functional::scaled_dot_product_attention on
//                          q = k = v [8, 512, 64] float32 under NoGradGuard
//   sdpa/b8_t512/no_cache  the same with the allocator's cache switched off
//                          (set_allocator_cache_limit(0)): every buffer comes
//                          fresh from malloc, as before the caching allocator
//   dot/toy/*              d2l's DotProductAttention on the toy shapes (queries
//                          [2, 1, 2], keys [2, 10, 2], values [2, 10, 4],
//                          valid_lens [2, 6]), also with and without the cache
// Counters: minor_faults per call (getrusage ru_minflt: pages the kernel had
// to map and zero for us), and the allocator's hit rate.
//
//   build-x/bench_runtime                        (one thread, as bench_attention)
//   build-x/bench_runtime --benchmark_repetitions=5 --benchmark_report_aggregates_only
// Compare the rows of one run (ratios), not absolute times across machines.
//
// Instruction counts, which other processes on the machine do not disturb:
//   build-x/bench_runtime --toy_calls=forward|forward_backward N
// runs the toy call N times without Google Benchmark, for valgrind's
// callgrind; scripts/bench_runtime_instructions.sh turns two such runs into
// instructions per call.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "attograd/allocator.h"
#include "attograd/attograd.h"

namespace {

using ag::Tensor;

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Runs `call` per iteration with the cache limited to `cache_limit` bytes and
// reports faults per call and the allocator's hit rate.
template <typename Call>
void run(benchmark::State& state, size_t cache_limit, Call call) {
  const size_t previous = ag::allocator_stats().cache_limit;
  ag::set_allocator_cache_limit(cache_limit);
  call();  // warm up: the first call fills the cache
  const ag::AllocatorStats before = ag::allocator_stats();
  const long faults_before = minor_faults();
  for (auto _ : state) call();
  const ag::AllocatorStats after = ag::allocator_stats();
  const double calls = static_cast<double>(state.iterations());
  state.counters["minor_faults"] = static_cast<double>(minor_faults() - faults_before) / calls;
  const double hits = static_cast<double>(after.hits - before.hits);
  const double misses = static_cast<double>(after.misses - before.misses);
  state.counters["hit_rate"] = hits / std::max(hits + misses, 1.0);
  ag::set_allocator_cache_limit(previous);
}

void sdpa(benchmark::State& state, bool cache) {
  ag::manual_seed(0);
  const Tensor q = ag::randn({8, 512, 64}), k = ag::randn({8, 512, 64}),
               v = ag::randn({8, 512, 64});
  ag::NoGradGuard no_grad;
  run(state, cache ? ag::allocator_stats().cache_limit : 0, [&] {
    Tensor out = ag::nn::functional::scaled_dot_product_attention(q, k, v);
    benchmark::DoNotOptimize(out.data_ptr<float>());
  });
}

struct Toy {
  Tensor queries = ag::tensor({0.3, -1.2, 0.5, 0.8}, {2, 1, 2});
  Tensor keys = ag::ones({2, 10, 2});
  Tensor values = ag::reshape(ag::arange(40), {1, 10, 4}) * ag::ones({2, 1, 1});
  Tensor valid_lens = ag::tensor({2, 6}, {2}, ag::kInt64);
  ag::nn::DotProductAttention attention{0.1};
  Toy() { attention.eval(); }
};

// One no-grad forward call of the toy.
float toy_forward_call(Toy& toy) {
  ag::NoGradGuard no_grad;
  Tensor out = toy.attention(toy.queries, toy.keys, toy.values, toy.valid_lens);
  return out.data_ptr<float>()[0];
}

// The toy with q, k and v requiring grad: sum(attention(q, k, v)).backward().
struct ToyWithGrad : Toy {
  Tensor q = queries.clone().requires_grad_();
  Tensor k = keys.clone().requires_grad_();
  Tensor v = values.clone().requires_grad_();
  float call() {
    q.zero_grad();
    k.zero_grad();
    v.zero_grad();
    ag::sum(attention(q, k, v, valid_lens)).backward();
    return q.grad().data_ptr<float>()[0];
  }
};

void toy_forward(benchmark::State& state, bool cache) {
  Toy toy;
  run(state, cache ? ag::allocator_stats().cache_limit : 0,
      [&] { benchmark::DoNotOptimize(toy_forward_call(toy)); });
}

void toy_forward_backward(benchmark::State& state, bool cache) {
  ToyWithGrad toy;
  run(state, cache ? ag::allocator_stats().cache_limit : 0,
      [&] { benchmark::DoNotOptimize(toy.call()); });
}

// --toy_calls=forward|forward_backward N: N calls, nothing else (see the top).
int toy_calls(const std::string& which, long calls) {
  Toy toy;
  ToyWithGrad toy_grad;
  float sink = 0;
  for (long i = 0; i < calls; ++i)
    sink += which == "forward" ? toy_forward_call(toy) : toy_grad.call();
  std::printf("%s x %ld (checksum %g)\n", which.c_str(), calls, static_cast<double>(sink));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ag::set_num_threads(1);
  const std::string calls_flag = "--toy_calls=";
  if (argc == 3 && std::string(argv[1]).starts_with(calls_flag))
    return toy_calls(std::string(argv[1]).substr(calls_flag.size()), std::atol(argv[2]));
  for (bool cache : {true, false}) {
    const std::string suffix = cache ? "" : "/no_cache";
    benchmark::RegisterBenchmark(("sdpa/b8_t512/no_grad" + suffix).c_str(), sdpa, cache)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("dot/toy/forward" + suffix).c_str(), toy_forward, cache)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("dot/toy/forward_backward" + suffix).c_str(),
                                 toy_forward_backward, cache)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("threads", std::to_string(ag::get_num_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
