// One training step of d2l's seq2seq with attention ("Bahdanau Attention"),
// float32, one thread, at two sizes:
//   seq2seq/train_step/additive   d2l's sizes and the shapes of
//                                 attograd-translate's dates task: batch 64,
//                                 embedding 32, hidden 32, 2 GRU layers,
//                                 dropout 0.1, source 30 steps (vocabulary 64),
//                                 target 11 steps (vocabulary 15)
//   seq2seq/train_step/dot        the same with DotProductAttention
//   seq2seq/train_step/g2p        attograd-translate --task g2p's default
//                                 model: Bahdanau et al.'s bidirectional
//                                 encoder, embedding 128, hidden 256, 2 GRU
//                                 layers, dropout 0.1, batch 128, a CMUdict
//                                 batch's shapes (cut to its longest word:
//                                 14 letters and <eos> of 31 symbols, 13
//                                 phonemes and <eos> of 43)
// A step is d2l's train_seq2seq step, as attograd-translate runs it: teacher
// forcing (<bos> + labels[:, :-1]), masked_softmax_ce_loss summed over the
// batch, backward, clip_grad_norm_(1), Adam. Token values are random and
// fixed (the cost does not depend on them); source valid lengths from half
// the source steps to all of them. scripts/bench_seq2seq_torch.py and
// scripts/bench_g2p_torch.py time the same steps with the PyTorch twins
// against attograd-translate; docs/seq2seq.md and docs/g2p.md ("Speed") have
// the figures.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace {

using ag::Tensor;

// A model's sizes and a batch's shapes.
struct StepShape {
  int64_t batch, embed, hidden, layers, src_steps, tgt_steps, src_vocab, tgt_vocab;
  bool bidirectional;
};
constexpr StepShape kDates{64, 32, 32, 2, 30, 11, 64, 15, false};
constexpr StepShape kG2p{128, 128, 256, 2, 15, 14, 31, 43, true};

// Integers drawn uniformly from [low, high) with a fixed seed, as int64 [shape].
Tensor random_ints(const ag::Shape& shape, int64_t low, int64_t high) {
  static std::mt19937_64 generator(0);
  std::uniform_int_distribution<int64_t> draw(low, high - 1);
  std::vector<double> values(static_cast<size_t>(ag::shape_numel(shape)));
  for (double& v : values) v = static_cast<double>(draw(generator));
  return ag::tensor(values, shape, ag::kInt64);
}

void train_step(benchmark::State& state, const StepShape& shape, const std::string& scoring) {
  ag::manual_seed(0);
  auto net =
      ag::nn::make_bahdanau_seq2seq(shape.src_vocab, shape.tgt_vocab, shape.embed, shape.hidden,
                                    shape.layers, 0.1, scoring, shape.bidirectional);
  ag::nn::init_seq2seq(*net);
  net->train();
  const std::vector<Tensor> params = net->parameters();
  ag::optim::Adam optimizer(params, 0.005);
  // The tokens 0-3 are <pad> <bos> <eos> <unk>, as in the Vocab.
  const int64_t B = shape.batch, S = shape.src_steps, T = shape.tgt_steps;
  const Tensor src = random_ints({B, S}, 4, shape.src_vocab);
  const Tensor src_valid_len = random_ints({B}, S / 2, S + 1);
  const Tensor tgt = random_ints({B, T}, 4, shape.tgt_vocab);
  const Tensor tgt_valid_len = ag::full({B}, static_cast<double>(T), ag::kInt64);
  const Tensor bos = ag::full({B, 1}, 1.0, ag::kInt64);
  for (auto _ : state) {
    optimizer.zero_grad();
    const Tensor dec_input = ag::cat({bos, tgt.narrow(1, 0, T - 1)}, 1);
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
  benchmark::RegisterBenchmark("seq2seq/train_step/additive", train_step, kDates,
                               std::string("additive"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("seq2seq/train_step/dot", train_step, kDates, std::string("dot"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("seq2seq/train_step/g2p", train_step, kG2p, std::string("additive"))
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
