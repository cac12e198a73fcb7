// nn::GRU per call, float32, one thread: d2l's seq2seq encoder size class,
// x [T = 10, B = 64, 64], hidden 32, 2 layers, h0 = zeros.
//   gru/forward            under NoGradGuard (inference)
//   gru/forward_backward   x requires grad; sum(output) + sum(h_n) backward,
//                          which also fills every parameter's grad
//   gru/g2p_encoder/...    the same two at the letters-to-sounds encoder's size
//                          (one thread's shard of a batch): bidirectional,
//                          x [T = 12, B = 64, 128], hidden 256, 2 layers
// scripts/bench_gru_torch.py times the same with torch.nn.GRU; the figures
// and the commands are in docs/speed.md.
#include <benchmark/benchmark.h>

#include <string>
#include <utility>

#include "attograd/attograd.h"

namespace {

using ag::Tensor;

struct Size {
  int64_t steps, batch, input, hidden;
  bool bidirectional;
};
constexpr Size kD2l{10, 64, 64, 32, false}, kG2pEncoder{12, 64, 128, 256, true};

struct Setup {
  explicit Setup(const Size& size)
      : gru(size.input, size.hidden, 2, /*dropout=*/0, size.bidirectional) {
    ag::manual_seed(0);
    x = ag::randn({size.steps, size.batch, size.input});
    gru.eval();  // dropout is 0 anyway; eval as the torch side
  }
  ag::nn::GRU gru;
  Tensor x;
};

void forward(benchmark::State& state, const Size& size) {
  Setup s(size);
  ag::NoGradGuard no_grad;
  for (auto _ : state) {
    auto [output, h_n] = s.gru(s.x);
    benchmark::DoNotOptimize(output.data_ptr<float>());
  }
}

void forward_backward(benchmark::State& state, const Size& size) {
  Setup s(size);
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
  for (const auto& [prefix, size] : {std::pair{"gru/", kD2l}, {"gru/g2p_encoder/", kG2pEncoder}}) {
    benchmark::RegisterBenchmark((std::string(prefix) + "forward").c_str(), forward, size)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string(prefix) + "forward_backward").c_str(),
                                 forward_backward, size)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
