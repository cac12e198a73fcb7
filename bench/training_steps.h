// The training steps the speed figures are about, shared by bench_seq2seq
// (how fast each runs) and bench_gemm (which matrix products each makes).
// A step is d2l's train_seq2seq step, as attograd-translate runs it: teacher
// forcing (<bos> + labels[:, :-1]), masked_softmax_ce_loss summed over the
// batch, backward, clip_grad_norm_(1), Adam. Token values are random and
// fixed (the cost does not depend on them); source valid lengths from half
// the source steps to all of them.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace ag::bench {

// A model's sizes and a batch's shapes.
struct StepShape {
  int64_t batch, embed, hidden, layers, src_steps, tgt_steps, src_vocab, tgt_vocab;
  bool bidirectional;
};
// d2l's sizes and the shapes of attograd-translate's dates task: batch 64,
// embedding 32, hidden 32, 2 GRU layers, source 30 steps (vocabulary 64),
// target 11 steps (vocabulary 15). The Transformer's step uses the same
// batch with d2l's Transformer (d = 32, FFN 64, 4 heads, 2 blocks).
inline constexpr StepShape kDates{64, 32, 32, 2, 30, 11, 64, 15, false};
// attograd-translate --task g2p's default model: Bahdanau et al.'s
// bidirectional encoder, embedding 128, hidden 256, 2 GRU layers, batch 128,
// a CMUdict batch's shapes (cut to its longest word: 14 letters and <eos> of
// 31 symbols, 13 phonemes and <eos> of 43).
inline constexpr StepShape kG2p{128, 128, 256, 2, 15, 14, 31, 43, true};

// Integers drawn uniformly from [low, high) with a fixed seed, as int64 [shape].
inline Tensor random_ints(const Shape& shape, int64_t low, int64_t high) {
  static std::mt19937_64 generator(0);
  std::uniform_int_distribution<int64_t> draw(low, high - 1);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = static_cast<double>(draw(generator));
  return tensor(values, shape, kInt64);
}

// A model, its optimizer and one fixed batch; run() trains one step and
// returns its loss.
class TrainingStep {
 public:
  // d2l's seq2seq with attention of the scoring function `scoring`, dropout 0.1.
  TrainingStep(const StepShape& shape, const std::string& scoring) : shape_(shape) {
    manual_seed(0);
    auto net =
        nn::make_bahdanau_seq2seq(shape.src_vocab, shape.tgt_vocab, shape.embed, shape.hidden,
                                  shape.layers, 0.1, scoring, shape.bidirectional);
    nn::init_seq2seq(*net);
    net_ = std::move(net);
    prepare();
  }
  // d2l's Transformer (make_transformer's defaults) on `shape`'s batch.
  explicit TrainingStep(const StepShape& shape) : shape_(shape) {
    manual_seed(0);
    net_ = nn::make_transformer(shape.src_vocab, shape.tgt_vocab);
    prepare();
  }

  double run() {
    optimizer_->zero_grad();
    const int64_t T = shape_.tgt_steps;
    const Tensor dec_input = cat({bos_, tgt_.narrow(1, 0, T - 1)}, 1);
    const Tensor logits = (*net_)(src_, dec_input, src_valid_len_);  // [B, T, V]
    const Tensor loss = nn::masked_softmax_ce_loss(logits, tgt_, tgt_valid_len_).sum();
    loss.backward();
    nn::clip_grad_norm_(params_, 1.0);
    optimizer_->step();
    return loss.item();
  }

 private:
  void prepare() {
    net_->train();
    params_ = net_->parameters();
    optimizer_ = std::make_unique<optim::Adam>(params_, 0.005);
    // The tokens 0-3 are <pad> <bos> <eos> <unk>, as in the Vocab.
    const int64_t B = shape_.batch, S = shape_.src_steps, T = shape_.tgt_steps;
    src_ = random_ints({B, S}, 4, shape_.src_vocab);
    src_valid_len_ = random_ints({B}, S / 2, S + 1);
    tgt_ = random_ints({B, T}, 4, shape_.tgt_vocab);
    tgt_valid_len_ = full({B}, static_cast<double>(T), kInt64);
    bos_ = full({B, 1}, 1.0, kInt64);
  }

  StepShape shape_;
  std::unique_ptr<nn::EncoderDecoder> net_;
  std::vector<Tensor> params_;
  std::unique_ptr<optim::Adam> optimizer_;
  Tensor src_, src_valid_len_, tgt_, tgt_valid_len_, bos_;
};

}  // namespace ag::bench
