// Attention per call, forward and forward+backward, float32, one thread
// unless the name ends in /2threads:
//   dot       nn::DotProductAttention, d2l's default (weights kept)
//   dot_noweights  the same with need_weights = false (streamed, no T x T)
//   additive  nn::AdditiveAttention
//   sdpa      nn::functional::scaled_dot_product_attention (no weights asked:
//             the streaming ag::flash_attention)
//   sdpa_materialised  scaled_dot_product_attention_with_weights(...).output,
//             the composed reference (scores and weights stored)
// on the shapes
//   toy      d2l's example: queries [2, 1, 20] (additive) or [2, 1, 2] (dot),
//            keys [2, 10, 2], values [2, 10, 4], valid_lens [2, 6]
//            (additive: key_size 2, query_size 20, num_hiddens 8)
//   b8_t128  self-attention q = k = v shapes [8, 128, 64], no mask
//   b8_t512  the same with 512 steps     (additive: num_hiddens 64)
// "forward" runs under NoGradGuard (inference); "forward_backward" makes the
// inputs require grad and runs sum(out).backward(), which also fills the
// parameters' grads. Modules are in eval mode (no dropout).
//
// scripts/bench_attention_torch.py times the same cases with d2l's PyTorch
// modules; scripts/bench_attention_compare.sh runs both and prints ratios.
// Peak memory is measured apart, one call per process:
// bench/bench_attention_memory.cpp and scripts/bench_attention_memory.sh.
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attograd/attograd.h"
#include "attograd/kernels/gemm.h"

namespace {

using ag::Tensor;

struct Case {
  std::string name;  // "dot/toy", "additive/b8_t512", ...
  Tensor queries, keys, values, valid_lens;
  // One attention call on (queries, keys, values, valid_lens).
  std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&)> attend;
  std::shared_ptr<ag::nn::Module> module;  // keeps the module alive (when there is one)
  int threads = 1;                         // ag::set_num_threads while it runs
};

Case make_case(const std::string& kind, const std::string& shape) {
  ag::manual_seed(0);
  Case c;
  c.name = kind + "/" + shape;
  const bool additive = kind == "additive";
  if (shape == "toy") {
    c.queries = ag::randn({2, 1, additive ? 20 : 2});
    c.keys = ag::ones({2, 10, 2});
    c.values = ag::reshape(ag::arange(40), {1, 10, 4}) * ag::ones({2, 1, 1});
    c.valid_lens = ag::tensor({2, 6}, {2}, ag::kInt64);
  } else {
    const int64_t T = shape == "b8_t128" ? 128 : 512;
    c.queries = ag::randn({8, T, 64});
    c.keys = ag::randn({8, T, 64});
    c.values = ag::randn({8, T, 64});
  }
  if (additive) {
    auto m = shape == "toy" ? std::make_shared<ag::nn::AdditiveAttention>(2, 20, 8, 0.1)
                            : std::make_shared<ag::nn::AdditiveAttention>(64, 64, 64, 0.1);
    m->eval();
    c.attend = [m](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lens) {
      return (*m)(q, k, v, lens);
    };
    c.module = m;
  } else if (kind == "dot" || kind == "dot_noweights") {
    auto m = std::make_shared<ag::nn::DotProductAttention>(0.1);
    m->eval();
    m->need_weights = kind == "dot";
    c.attend = [m](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lens) {
      return (*m)(q, k, v, lens);
    };
    c.module = m;
  } else if (kind == "sdpa") {
    c.attend = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
      return ag::nn::functional::scaled_dot_product_attention(q, k, v);
    };
  } else {  // sdpa_materialised
    c.attend = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&) {
      return ag::nn::functional::scaled_dot_product_attention_with_weights(q, k, v).output;
    };
  }
  return c;
}

// Runs with c.threads threads, then puts the count back.
struct Threads {
  explicit Threads(int n) : previous(ag::get_num_threads()) { ag::set_num_threads(n); }
  ~Threads() { ag::set_num_threads(previous); }
  int previous;
};

void forward(benchmark::State& state, const Case& c) {
  const Threads threads(c.threads);
  ag::NoGradGuard no_grad;
  for (auto _ : state) {
    Tensor out = c.attend(c.queries, c.keys, c.values, c.valid_lens);
    benchmark::DoNotOptimize(out.data_ptr<float>());
  }
}

void forward_backward(benchmark::State& state, const Case& c) {
  const Threads threads(c.threads);
  Tensor q = c.queries.clone().requires_grad_();
  Tensor k = c.keys.clone().requires_grad_();
  Tensor v = c.values.clone().requires_grad_();
  for (auto _ : state) {
    if (c.module) c.module->zero_grad();
    q.zero_grad();
    k.zero_grad();
    v.zero_grad();
    ag::sum(c.attend(q, k, v, c.valid_lens)).backward();
    benchmark::DoNotOptimize(q.grad().data_ptr<float>());
  }
}

}  // namespace

int main(int argc, char** argv) {
  ag::set_num_threads(1);
  static std::vector<Case> cases;
  for (const char* kind : {"dot", "additive"})
    for (const char* shape : {"toy", "b8_t128", "b8_t512"}) cases.push_back(make_case(kind, shape));
  for (const char* kind : {"dot_noweights", "sdpa", "sdpa_materialised"})
    cases.push_back(make_case(kind, "b8_t512"));
  for (const char* kind : {"sdpa", "sdpa_materialised", "additive"}) {
    cases.push_back(make_case(kind, "b8_t512"));
    cases.back().threads = 2;
  }
  for (const Case& c : cases) {
    std::string suffix;  // "" or "/2threads" (appended: GCC 12 -Wrestrict on "a" + string)
    if (c.threads != 1) suffix.append("/").append(std::to_string(c.threads)).append("threads");
    benchmark::RegisterBenchmark((c.name + "/forward" + suffix).c_str(), forward, c)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark((c.name + "/forward_backward" + suffix).c_str(), forward_backward,
                                 c)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  benchmark::AddCustomContext("gemm_path", ag::kernels::gemm_path_name());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
