// Training and prediction as d2l's "Sequence to Sequence Learning" does them,
// for any model of nn/encoder_decoder.h:
//
//   train_seq2seq    teacher forcing (decoder input = <bos> + labels[:, :-1]),
//                    masked_softmax_ce_loss summed over the batch, backward,
//                    clip_grad_norm_(1), Adam
//   (greedy decoding and beam search: predict.h)
//   (evaluate, exact match, BLEU and each task's own figures: tasks.h,
//   included here: whoever trains, scores)
//   BestParameters   the parameters at the best dev score (model selection)
//   CheckpointAverage  the mean of the last few checkpoints' parameters
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attograd/nn/optim.h"
#include "attograd/translate/model.h"
#include "attograd/translate/predict.h"
#include "attograd/translate/tasks.h"

namespace ag::translate {

struct TrainOptions {
  int64_t steps = 1000;
  int64_t batch_size = 64;
  double lr = 0.005;
  // false: Adam at lr throughout (d2l's). true: step s (1-based) trains at
  // lr (1 + cos(pi (s - 1) / steps)) / 2, half a cosine from lr down towards
  // 0 over the run (CosineAnnealingLR's curve, T_max = steps): the late
  // updates shrink, and the held-out accuracy settles instead of swinging.
  bool cosine_lr = false;
  // 0: no warm-up. w > 0: the Transformer's schedule (Vaswani et al. 2017;
  // tensor2tensor's linear_warmup*rsqrt_decay), step s at
  // lr min(s / w, sqrt(w / s)): up a straight line from lr / w to lr at step
  // w, then down as 1 / sqrt(s). lr is the peak. With cosine_lr, the same
  // line up, then half a cosine from lr down to 0 over the steps after w:
  // lr (1 + cos(pi (s - w) / (steps - w))) / 2 (the curve of transformers'
  // get_cosine_schedule_with_warmup), so the late updates shrink to nothing
  // where 1 / sqrt(s) keeps them large.
  int64_t warmup_steps = 0;
  double max_grad_norm = 1.0;
  // nn::masked_softmax_ce_loss's label_smoothing: 0 (d2l's) trains towards
  // the label alone; e > 0 keeps e of the target spread over every token, so
  // the model is not pushed to certainty on each training word.
  double label_smoothing = 0;
  uint64_t seed = 0;  // the minibatch order
  // Data-parallel training: each minibatch is split along the batch into
  // `threads` shards (sizes differing by at most one) that run forward and
  // backward at the same time, each on its own copy of the model and its own
  // thread; their gradients are summed into the model's, then one clipping
  // and one Adam step follow, so the update is the whole batch's (to float
  // rounding). 1 (the default) trains on the calling thread alone. Must not
  // exceed batch_size (ag::Error). While threads > 1 trains, the kernels'
  // own threads (ag::set_num_threads) are held at 1.
  int64_t threads = 1;
};

// The learning rate of step `step` (1-based) under the options' schedule:
// constant, cosine_lr's, warmup_steps' or both's. ag::Error for step < 1 or a
// schedule that needs the run's length (cosine) without it.
double scheduled_lr(const TrainOptions& options, int64_t step);

struct StepInfo {
  int64_t step = 0;    // 1-based
  int64_t steps = 0;   // TrainOptions::steps
  double loss = 0;     // this batch's loss per target token (d2l's figure)
  double seconds = 0;  // since training started
};
// Called after every step; it may evaluate the model (prediction leaves the
// training mode as it found it).
using StepCallback = std::function<void(const StepInfo&)>;

// Trains translator.model on data's training set; returns the last step's
// loss per token. REQUIRES: data's vocabularies and step counts are the
// translator's (throws ag::Error otherwise).
double train_seq2seq(Translator& translator, const Dataset& data, const TrainOptions& options,
                     const StepCallback& on_step = {});

// train_seq2seq one step at a time, for a caller that interleaves steps with
// other work (the viewer's translate scene steps a few times a frame): the
// same minibatches, loss and updates, so n step() calls leave the model as
// train_seq2seq with steps = n does (options.steps is used by cosine_lr only).
// REQUIRES: translator and data outlive the trainer; as train_seq2seq, their
// vocabularies and step counts agree (throws ag::Error otherwise).
class Seq2SeqTrainer {
 public:
  Seq2SeqTrainer(Translator& translator, const Dataset& data, const TrainOptions& options);
  ~Seq2SeqTrainer();  // stops the worker threads (options.threads > 1)
  Seq2SeqTrainer(const Seq2SeqTrainer&) = delete;
  Seq2SeqTrainer& operator=(const Seq2SeqTrainer&) = delete;
  // One minibatch: forward, backward, clipping, Adam; returns its loss per
  // target token. Puts the model in training mode, its attention weights off
  // (set_need_weights(false): nothing is drawn from a training step). With
  // options.threads = T > 1, dropout draws come from one generator per shard,
  // seeded from one draw of the global generator per step: ag::manual_seed
  // and T fix them.
  double step();
  // The loss per target token of the minibatch the next step() trains on,
  // at the current parameters, without training (no gradients, no update):
  // a curve's value at step 0.
  double next_loss() const;
  int64_t steps_taken() const { return steps_taken_; }
  // What a checkpoint keeps of the trainer: Adam's state ("optimizer.*",
  // optim.h's names), the minibatch order ("batches.*", BatchIterator's) and
  // "steps_taken". With the model's parameters and the global generator
  // (get_rng_state: the dropout masks, and the shards' seeds with threads >
  // 1) put back too, a trainer given this state takes the steps the one that
  // wrote it would have taken next, to the bit. ag::Error naming the entry
  // when the state is not of this trainer's model and data.
  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state);
  // From the next step on. Adam's rate is fixed at construction (as in
  // PyTorch's constructor), so its moments start over.
  void set_learning_rate(double lr);

 private:
  nn::EncoderDecoder& model_;
  const Dataset& data_;
  TrainOptions options_;
  std::vector<Tensor> params_;
  std::unique_ptr<optim::Adam> optimizer_;
  BatchIterator batches_;
  Tensor bos_;  // [batch_size, 1]: the decoder's first input
  // Whether a batch is cut to its longest source and target (a model whose
  // valid logits do not depend on padding: the bidirectional encoder's).
  bool trim_ = false;
  class DataParallel;                       // the replicas and worker threads (train.cpp)
  std::unique_ptr<DataParallel> parallel_;  // null when options.threads == 1
  // The summed loss of `batch` through `model` (graph recorded unless under
  // NoGradGuard) and its target token count.
  Tensor summed_loss(nn::EncoderDecoder& model, const Batch& batch, double* tokens) const;
  // The parts of a batch a step trains on, part k, k + T, ... on thread k
  // of T, one after the other. A batch cut to its longest words (trim_) is
  // cut by length (length_parts) into T parts, and into kLengthParts on
  // fewer threads: on one thread, two parts that each run only their own
  // words' steps beat the whole batch, and a third part gained nothing more
  // (docs/performance.md). Else each thread gets one part, in batch order.
  static constexpr int64_t kLengthParts = 2;
  std::vector<std::vector<int64_t>> batch_parts(const Batch& batch) const;
  // Forward and backward of parts first, first + stride, ... through
  // `model`, their gradients summed into its parameters'; returns their
  // summed loss and adds their target tokens to *tokens.
  double train_parts(nn::EncoderDecoder& model, const Batch& batch,
                     const std::vector<std::vector<int64_t>>& parts, size_t first, size_t stride,
                     double* tokens) const;
  // Every thread's parts on its replica, their gradients summed into
  // params_; returns the summed loss and sets *tokens.
  double parallel_step(const Batch& batch, const std::vector<std::vector<int64_t>>& parts,
                       double* tokens);
  int64_t steps_taken_ = 0;
};

// A batch cut into `parts` by length, for a training step that trains on
// each part cut to its own longest words (Seq2SeqTrainer::batch_parts):
// given each row's source and target length, the rows of each part. A
// part's work is about its rows times the steps its longest words need. Cut
// in batch order, each half of a batch of 128 words held a word about as
// long as the batch's longest, so each half ran nearly all of the batch's
// steps. Here the rows are ordered longest first and cut into runs so that
// the largest part's rows x (longest source + longest target) is as small
// as it can be: the long words' part gets fewer rows, the short words' more,
// and neither runs the other's padding. Each part's rows are in batch order;
// every row is in one part. ag::Error unless there are as many target as
// source lengths and 1 <= parts <= rows.
std::vector<std::vector<int64_t>> length_parts(const std::vector<int64_t>& src_len,
                                               const std::vector<int64_t>& tgt_len, int64_t parts);

// Model selection: a copy of the model's state dict at the best (lowest)
// score offered so far, e.g. the dev WER every N steps; restore() writes it
// back in place (the optimizer's tensors stay the model's). Among equal
// scores the first is kept. REQUIRES: the model outlives this object.
class BestParameters {
 public:
  explicit BestParameters(nn::Module& model);
  // Keeps a copy when `score` beats every score before; returns whether it did.
  bool offer(double score, int64_t step);
  // ag::Error when nothing was offered.
  void restore() const;
  double score() const { return score_; }
  int64_t step() const { return step_; }  // -1 before the first offer
  // For a checkpoint: "score", "step" and the kept "parameters.<name>"
  // (none before the first offer). ag::Error naming the entry when the state
  // is not of this model.
  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state);

 private:
  nn::Module& model_;
  std::map<std::string, Tensor> best_;
  double score_ = 0;
  int64_t step_ = -1;
};

// Checkpoint averaging (fairseq's scripts/average_checkpoints.py, as NMT and
// G2P recipes use it): the mean of the parameters at the last `count`
// snapshots, e.g. the last few evaluations of a run. Late in training the
// parameters move around a minimum; their mean tends to sit nearer its
// middle than any one of them, and may generalise better. Whether it does is
// for the dev split to say (offer it to BestParameters). Floating entries of
// the state dict are averaged; any other entry is taken from the newest
// snapshot. REQUIRES: the model outlives this object.
class CheckpointAverage {
 public:
  CheckpointAverage(nn::Module& model, int64_t count);  // count >= 1, else ag::Error
  // A copy of the model's state dict now; the oldest goes beyond `count`.
  void add();
  int64_t size() const { return static_cast<int64_t>(snapshots_.size()); }
  // Loads the mean of the snapshots into the model, in place (strict: the
  // same names and shapes). ag::Error when nothing was added.
  void load_into_model() const;
  // For a checkpoint: "<k>.<name>", snapshot k (0 the oldest). ag::Error
  // naming the entry when the state is not of this model or holds more than
  // `count` snapshots.
  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state);

 private:
  nn::Module& model_;
  int64_t count_;
  std::deque<std::map<std::string, Tensor>> snapshots_;  // oldest first
};

}  // namespace ag::translate
