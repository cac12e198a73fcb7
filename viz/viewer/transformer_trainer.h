// The transformer scene's training (see scene_transformer.h): d2l's
// Transformer (nn/transformer.h, docs/transformer.md) learning a generated
// task of translate/, and, with the ablation on, a twin trained without the
// decoder's look-ahead mask from the same seed, data and minibatches.
//
// Each step's record holds, per model ("masked", and "unmasked" with the
// ablation): loss [1], accuracy [1] (exact match on kHeldout held-out
// inputs, measured every kEvalEvery steps and carried in between), and for
// the kShown held-out inputs the greedy outputs (output [kShown, tgt_steps],
// target indices, -1 past the end) and how many decoder steps each took
// (rows [kShown]: the outputs and the step that wrote <eos>). The masked
// model's record also holds every attention map of those predictions, per
// block and head (L blocks, H heads):
//   masked.enc_self  [kShown, L, H, src_steps, src_steps]  encoder self-attention
//   masked.dec_self  [kShown, L, H, tgt_steps, tgt_steps]  decoder self-attention
//   masked.cross     [kShown, L, H, tgt_steps, src_steps]  cross-attention
// as translate::transformer_maps gives them (what attograd-translate --json
// prints): the weights the step-by-step greedy decoding used. Zero past a
// prediction's steps and past the source's valid length.
#pragma once

#include <memory>

#include "attograd/nn/transformer.h"
#include "attograd/translate/train.h"
#include "training_session.h"

namespace ag::viewer {

class TransformerTrainer : public Trainer {
 public:
  static constexpr int64_t kShown = 4;       // held-out inputs the scene chooses from
  static constexpr int64_t kEvalEvery = 50;  // steps between held-out measurements
  static constexpr int64_t kHeldout = 300;   // held-out inputs measured
  static constexpr int64_t kTrain = 20000;   // training examples
  static constexpr int64_t kBatchSize = 64;
  static constexpr const char* kModels[2] = {"masked", "unmasked"};

  TransformerTrainer(const std::string& task, bool ablation);
  // New data and models (`task`: a name of live_task_names(),
  // scene_translate.h), or a twin more or less (the session must be remade
  // after: the record's fields change).
  void configure(const std::string& task, bool ablation);
  const std::string& task() const { return task_; }
  bool ablation() const { return ablation_; }
  int64_t models() const { return ablation_ ? 2 : 1; }
  const translate::Dataset& data_set() const { return *data_; }
  // The model `m` (0: masked, 1: the unmasked twin); start() made it.
  translate::Translator& translator(size_t m) { return translators_[m]; }
  nn::Transformer& transformer(size_t m);
  // The program's default sizes (translate::ModelConfig).
  static int64_t blocks() { return translate::ModelConfig{}.num_blks; }
  static int64_t heads() { return translate::ModelConfig{}.num_heads; }

  const char* title() const override { return "Transformer"; }
  std::vector<RecordField> fields() const override;
  std::vector<Series> series() const override;
  double default_learning_rate() const override { return 0.005; }
  std::map<std::string, Tensor> start(double lr) override;
  std::map<std::string, Tensor> step() override;
  void set_learning_rate(double lr) override;
  // The shown inputs: src [kShown, src_steps], src_valid_len [kShown].
  std::map<std::string, Tensor> data() const override;
  // Saves each model as the program does (translate::save_translator) to
  // PREFIX-masked.npz (and PREFIX-unmasked.npz): attograd-translate --load
  // reads them. Run on the session's worker (TrainingSession::call).
  void save(const std::string& prefix) const;
  // Each model's state dict, its names prefixed "masked." ("unmasked.").
  std::map<std::string, Tensor> state() const;

 private:
  std::map<std::string, Tensor> record(const double (&loss)[2]);

  std::string task_;
  bool ablation_;
  std::unique_ptr<translate::Dataset> data_;
  translate::Translator translators_[2];
  std::unique_ptr<translate::Seq2SeqTrainer> trainers_[2];
  double accuracy_[2] = {0, 0};
  int64_t steps_ = 0;
};

}  // namespace ag::viewer
