// nn::GRU per call, float32, one thread: d2l's seq2seq encoder size class,
// x [T = 10, B = 64, 64], hidden 32, 2 layers, h0 = zeros.
//   gru/forward            under NoGradGuard (inference)
//   gru/forward_backward   x requires grad; sum(output) + sum(h_n) backward,
//                          which also fills every parameter's grad
// scripts/bench_gru_torch.py times the same with torch.nn.GRU; the figures
// and the commands are in docs/speed.md.
#include <benchmark/benchmark.h>

#include "attograd/attograd.h"

namespace {

using ag::Tensor;

struct Setup {
  Setup() : gru(64, 32, 2) {
    ag::manual_seed(0);
    x = ag::randn({10, 64, 64});
    gru.eval();  // dropout is 0 anyway; eval as the torch side
  }
  ag::nn::GRU gru;
  Tensor x;
};

void forward(benchmark::State& state) {
  Setup s;
  ag::NoGradGuard no_grad;
  for (auto _ : state) {
    auto [output, h_n] = s.gru(s.x);
    benchmark::DoNotOptimize(output.data_ptr<float>());
  }
}

void forward_backward(benchmark::State& state) {
  Setup s;
  Tensor x = s.x.clone().requires_grad_();
  for (auto _ : state) {
    s.gru.zero_grad();
    x.zero_grad();
    auto [output, h_n] = s.gru(x);
    (ag::sum(output) + ag::sum(h_n)).backward();
    benchmark::DoNotOptimize(x.grad().data_ptr<float>());
  }
}

}  // namespace

int main(int argc, char** argv) {
  ag::set_num_threads(1);
  benchmark::RegisterBenchmark("gru/forward", forward)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("gru/forward_backward", forward_backward)
      ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
