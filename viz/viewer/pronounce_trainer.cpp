// The pronounce scene's train mode trainer (see scene_pronounce.h).
//
// Each step trains one minibatch of the dictionary's training words for each
// model (translate::Seq2SeqTrainer), then answers the typed word greedily;
// every kEvalEvery steps both models' WER on the dev sample is measured.
// With a worker thread all of it runs there; the scene reads only records.
#include <utility>

#include "scene_pronounce.h"

namespace ag::viewer {

namespace tr = ag::translate;

PronounceTrainer::PronounceTrainer(const std::string& dict_path) {
  tr::DatasetOptions options;
  options.task = "g2p";
  options.dict_path = dict_path;
  // Words of up to kMaxLetters letters (and sounds): the unidirectional
  // encoder reads every padded step, so the dictionary's longest word (28
  // letters) would make each step nearly three times as slow.
  options.max_length = kMaxLetters;
  data_ = std::make_unique<tr::Dataset>(tr::make_dataset(options));
  // A fixed sample: the dev split's first words, the same at every step.
  const std::vector<tr::Example>& dev = data_->dev();
  dev_sample_.assign(dev.begin(), dev.begin() + std::min<int64_t>(kDevSample, dev.size()));
  AG_CHECK(!dev_sample_.empty(), "pronounce", dict_path + " has no dev words");
}

void PronounceTrainer::set_models(const ScoringPair& models) {
  check_scoring_pair(models, "PronounceTrainer::set_models");
  models_ = models;
  for (auto& trainer : trainers_) trainer.reset();
}

std::vector<RecordField> PronounceTrainer::fields() const {
  const int64_t tgt = data_->tgt_steps(), src = data_->src_steps();
  std::vector<RecordField> out = {{"typed.letters", {src}}, {"typed.length", {1}}};
  for (const std::string& m : models_) {
    out.push_back({m + ".loss", {1}});
    out.push_back({m + ".wer", {1}});
    out.push_back({m + ".typed.output", {tgt}});
    out.push_back({m + ".typed.rows", {1}});
    out.push_back({m + ".typed.alignment", {tgt, src}});
  }
  return out;
}

std::vector<Trainer::Series> PronounceTrainer::series() const {
  std::vector<Series> out;
  for (size_t m = 0; m < 2; ++m) {
    out.push_back({models_[m] + ".loss", models_[m] + " loss", kScoringColors[m], Axis::Loss});
  }
  for (size_t m = 0; m < 2; ++m) {
    out.push_back(
        {models_[m] + ".wer", models_[m] + " dev WER", kScoringHeldOutColors[m], Axis::Fraction});
  }
  return out;
}

std::map<std::string, Tensor> PronounceTrainer::start(double lr) {
  // The session has set the seed: both models draw their initial parameters
  // from it, one after the other; the minibatch order is the same for both.
  // Small sizes (one GRU layer of d2l's 32, no dropout) so that a step takes
  // tens of milliseconds: a smaller model takes more steps in the same
  // frames and its dev WER falls further while you watch (docs/performance.md
  // has the runs that chose 32).
  tr::TrainOptions options;
  options.lr = lr;
  options.batch_size = kBatchSize;
  for (size_t m = 0; m < 2; ++m) {
    tr::ModelConfig config;
    config.attention = models_[m];
    config.encoder = "unidirectional";  // d2l's: the keys have the queries' width (dot needs it)
    config.embed_size = 32;
    config.num_hiddens = 32;
    config.num_layers = 1;
    config.dropout = 0.0;
    translators_[m] = tr::make_translator(config, *data_);
    trainers_[m] = std::make_unique<tr::Seq2SeqTrainer>(translators_[m], *data_, options);
  }
  steps_ = 0;
  for (size_t m = 0; m < 2; ++m) {
    wer_[m] = tr::evaluate(translators_[m], dev_sample_).figure("wer");
    loss_[m] = trainers_[m]->next_loss();
  }
  first_wer_ = wer_[0];
  return record();
}

std::map<std::string, Tensor> PronounceTrainer::step() {
  AG_CHECK(trainers_[0] != nullptr, "PronounceTrainer::step", "start() was not called");
  for (size_t m = 0; m < 2; ++m) loss_[m] = trainers_[m]->step();
  ++steps_;
  if (steps_ % kEvalEvery == 0) {
    for (size_t m = 0; m < 2; ++m) {
      wer_[m] = tr::evaluate(translators_[m], dev_sample_).figure("wer");
    }
  }
  return record();
}

void PronounceTrainer::set_learning_rate(double lr) {
  for (auto& trainer : trainers_) {
    if (trainer) trainer->set_learning_rate(lr);
  }
}

std::map<std::string, Tensor> PronounceTrainer::record() {
  AG_CHECK(trainers_[0] != nullptr, "PronounceTrainer::record", "start() was not called");
  const int64_t tgt = data_->tgt_steps(), src = data_->src_steps();
  std::map<std::string, Tensor> out;
  std::vector<double> letters(static_cast<size_t>(src), 0.0);
  for (size_t i = 0; i < typed_.size() && i < letters.size(); ++i) {
    letters[i] = static_cast<unsigned char>(typed_[i]);
  }
  out["typed.letters"] = tensor(std::move(letters), {src});
  out["typed.length"] =
      tensor({typed_.empty() ? 0.0 : static_cast<double>(typed_.size() + 1)}, {1});
  for (size_t m = 0; m < 2; ++m) {
    const std::string& name = models_[m];
    PredictedFields answer = predict_typed(translators_[m], typed_, tgt, src);
    out[name + ".loss"] = tensor({loss_[m]}, {1});
    out[name + ".wer"] = tensor({wer_[m]}, {1});
    out[name + ".typed.output"] = tensor(std::move(answer.output), {tgt});
    out[name + ".typed.rows"] = tensor(std::move(answer.rows), {1});
    out[name + ".typed.alignment"] = tensor(std::move(answer.alignment), {tgt, src});
  }
  return out;
}

}  // namespace ag::viewer
