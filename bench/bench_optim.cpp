// The optimizer's part of a training step, over the parameters of
// attograd-translate's Transformer (d 32, FFN 64, 4 heads, 2 blocks,
// vocabularies 64 and 15: 64 tensors, 45,007 values), float32, one thread.
// Each kernel runs beside the plain loop it replaced, in the same run:
//   optim/adam_step/kernel        optim::Adam::step (kernels::adam_update: SIMD clones)
//   optim/adam_step/plain_loop    the same update as the scalar loop Adam::step had
//   optim/grad_norm/kernel        nn::clip_grad_norm_ with nothing to clip
//   (kernels::sum_of_squares) optim/grad_norm/to_vector     the sum it had: each gradient copied
//   out with to_vector()
// With two threads (attograd-translate --threads 2) this part runs on one
// thread while the other waits; docs/transformer.md ("Two threads") has the
// figures.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "attograd/attograd.h"

namespace {

using ag::Tensor;

// The Transformer's parameters, each with a random gradient.
std::vector<Tensor> transformer_params_with_grads() {
  static const auto model = [] {
    ag::manual_seed(0);
    auto net = ag::nn::make_transformer(64, 15);
    for (Tensor p : net->parameters()) p.set_grad(ag::uniform(p.shape(), -1, 1));
    return net;
  }();
  return model->parameters();
}

void adam_kernel(benchmark::State& state) {
  const std::vector<Tensor> params = transformer_params_with_grads();
  ag::optim::Adam optimizer(params, 0.005);
  for (auto _ : state) optimizer.step();
}

// Adam::step's loop before the kernel: per tensor, the scalars in double
// rounded to float, then one element at a time (std::sqrt keeps errno, so
// GCC does not vectorise it).
void adam_plain_loop(benchmark::State& state) {
  const std::vector<Tensor> params = transformer_params_with_grads();
  std::vector<std::vector<float>> exp_avg, exp_avg_sq;
  for (const Tensor& p : params) {
    exp_avg.emplace_back(static_cast<size_t>(p.numel()));
    exp_avg_sq.emplace_back(static_cast<size_t>(p.numel()));
  }
  const double lr = 0.005, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int64_t t = 0;
  for (auto _ : state) {
    ++t;
    const double step_size = lr / (1 - std::pow(beta1, static_cast<double>(t)));
    const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(t)));
    for (size_t i = 0; i < params.size(); ++i) {
      float* w = params[i].data_ptr<float>();
      const float* d = params[i].grad().data_ptr<float>();
      float *m = exp_avg[i].data(), *v = exp_avg_sq[i].data();
      const float b1 = static_cast<float>(beta1), one_minus_b1 = static_cast<float>(1 - beta1);
      const float b2 = static_cast<float>(beta2), one_minus_b2 = static_cast<float>(1 - beta2);
      const float c2 = static_cast<float>(bias_correction2_sqrt), e = static_cast<float>(eps);
      const float neg_step = static_cast<float>(-step_size);
      for (int64_t j = 0; j < params[i].numel(); ++j) {
        m[j] = m[j] * b1 + one_minus_b1 * d[j];
        v[j] = v[j] * b2 + one_minus_b2 * d[j] * d[j];
        const float denom = std::sqrt(v[j]) / c2 + e;
        w[j] += neg_step * (m[j] / denom);
      }
    }
    benchmark::ClobberMemory();
  }
}

void grad_norm_kernel(benchmark::State& state) {
  const std::vector<Tensor> params = transformer_params_with_grads();
  for (auto _ : state) benchmark::DoNotOptimize(ag::nn::clip_grad_norm_(params, 1e30));
}

void grad_norm_to_vector(benchmark::State& state) {
  const std::vector<Tensor> params = transformer_params_with_grads();
  for (auto _ : state) {
    double squares = 0;
    for (const Tensor& p : params)
      for (double v : p.grad().to_vector()) squares += v * v;
    benchmark::DoNotOptimize(std::sqrt(squares));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ag::set_num_threads(1);
  benchmark::RegisterBenchmark("optim/adam_step/kernel", adam_kernel)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("optim/adam_step/plain_loop", adam_plain_loop)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("optim/grad_norm/kernel", grad_norm_kernel)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("optim/grad_norm/to_vector", grad_norm_to_vector)
      ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
