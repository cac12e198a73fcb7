// One training step of d2l's seq2seq with attention ("Bahdanau Attention"),
// float32, one thread, at d2l's sizes and the shapes of attograd-translate's
// dates task: batch 64, embedding 32, hidden 32, 2 GRU layers, dropout 0.1,
// source 30 steps (vocabulary 64), target 11 steps (vocabulary 15).
//   seq2seq/train_step/additive   d2l's AdditiveAttention (the default model)
//   seq2seq/train_step/dot        DotProductAttention
// A step is d2l's train_seq2seq step, as attograd-translate runs it: teacher
// forcing (<bos> + labels[:, :-1]), masked_softmax_ce_loss summed over the
// batch, backward, clip_grad_norm_(1), Adam (lr 0.005). Token values are
// random and fixed (the cost does not depend on them); source valid lengths
// from 15 to 30. scripts/bench_seq2seq_torch.py times the same step with
// d2l's PyTorch code against attograd-translate; docs/seq2seq.md ("Speed")
// has the figures.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "attograd/attograd.h"

namespace {

using ag::Tensor;

constexpr int64_t kBatch = 64, kEmbed = 32, kHidden = 32, kLayers = 2;
constexpr int64_t kSrcSteps = 30, kTgtSteps = 11, kSrcVocab = 64, kTgtVocab = 15;

// Integers drawn uniformly from [low, high) with a fixed seed, as int64 [shape].
Tensor random_ints(const ag::Shape& shape, int64_t low, int64_t high) {
  static std::mt19937_64 generator(0);
  std::uniform_int_distribution<int64_t> draw(low, high - 1);
  std::vector<double> values(static_cast<size_t>(ag::shape_numel(shape)));
  for (double& v : values) v = static_cast<double>(draw(generator));
  return ag::tensor(values, shape, ag::kInt64);
}

void train_step(benchmark::State& state, ag::nn::AttentionKind kind) {
  ag::manual_seed(0);
  auto net =
      ag::nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, kEmbed, kHidden, kLayers, 0.1, kind);
  ag::nn::init_seq2seq(*net);
  net->train();
  const std::vector<Tensor> params = net->parameters();
  ag::optim::Adam optimizer(params, 0.005);
  // The tokens 0-3 are <pad> <bos> <eos> <unk>, as in the Vocab.
  const Tensor src = random_ints({kBatch, kSrcSteps}, 4, kSrcVocab);
  const Tensor src_valid_len = random_ints({kBatch}, kSrcSteps / 2, kSrcSteps + 1);
  const Tensor tgt = random_ints({kBatch, kTgtSteps}, 4, kTgtVocab);
  const Tensor tgt_valid_len = ag::full({kBatch}, static_cast<double>(kTgtSteps), ag::kInt64);
  const Tensor bos = ag::full({kBatch, 1}, 1.0, ag::kInt64);
  for (auto _ : state) {
    optimizer.zero_grad();
    const Tensor dec_input = ag::cat({bos, tgt.narrow(1, 0, kTgtSteps - 1)}, 1);
    const Tensor logits = (*net)(src, dec_input, src_valid_len);  // [B, Tout, V]
    const Tensor loss = ag::nn::masked_softmax_ce_loss(logits, tgt, tgt_valid_len).sum();
    loss.backward();
    ag::nn::clip_grad_norm_(params, 1.0);
    optimizer.step();
    benchmark::DoNotOptimize(loss.item());
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  ag::set_num_threads(1);
  benchmark::RegisterBenchmark("seq2seq/train_step/additive", train_step,
                               ag::nn::AttentionKind::Additive)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("seq2seq/train_step/dot", train_step, ag::nn::AttentionKind::Dot)
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
