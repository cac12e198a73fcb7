// The translate scene's trainer (see scene_translate.h).
//
// Each step trains one minibatch for each model (translate::Seq2SeqTrainer,
// the library's train_seq2seq one step at a time), then predicts the shown
// held-out inputs and the typed text greedily, whose outputs and alignments
// go into the record; every kEvalEvery steps the held-out split is measured.
// With a worker thread all of it runs there; the scene reads only records.
#include <imgui.h>

#include <utility>

#include "attograd/nn/scoring.h"
#include "scene_translate.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

// Greedy predictions of `count` sources as the record's fields: output
// [count, tgt] (-1 past the end), rows [count], alignment [count, tgt, src].
PredictedFields predict(tr::Translator& translator, const std::vector<std::string>& sources,
                        int64_t tgt, int64_t src) {
  const int64_t count = static_cast<int64_t>(sources.size());
  PredictedFields out{std::vector<double>(static_cast<size_t>(count * tgt), -1.0),
                      std::vector<double>(static_cast<size_t>(count), 0.0),
                      std::vector<double>(static_cast<size_t>(count * tgt * src), 0.0)};
  if (count == 0) return out;
  const auto [tokens, valid_len] =
      tr::encode_sources(sources, translator.src_vocab, src, translator.task.source);
  const std::vector<tr::Prediction> predictions =
      tr::predict_seq2seq(*translator.model, tokens, valid_len, tgt);
  for (int64_t i = 0; i < count; ++i) {
    const tr::Prediction& p = predictions[static_cast<size_t>(i)];
    for (size_t t = 0; t < p.output.size(); ++t) {
      out.output[static_cast<size_t>(i * tgt) + t] = static_cast<double>(p.output[t]);
    }
    const int64_t n = p.alignment.shape()[0], cols = p.alignment.shape()[1];
    out.rows[static_cast<size_t>(i)] = static_cast<double>(n);
    const std::vector<double> weights = p.alignment.to_vector();
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        out.alignment[static_cast<size_t>((i * tgt + r) * src + c)] =
            weights[static_cast<size_t>(r * cols + c)];
      }
    }
  }
  return out;
}

}  // namespace

PredictedFields predict_typed(tr::Translator& translator, const std::string& typed, int64_t tgt,
                              int64_t src) {
  if (!typed.empty()) return predict(translator, {typed}, tgt, src);
  // No typed text: no rows.
  return {std::vector<double>(static_cast<size_t>(tgt), -1.0),
          {0.0},
          std::vector<double>(static_cast<size_t>(tgt * src), 0.0)};
}

TranslateTrainer::TranslateTrainer(const std::string& task) {
  set_task(task);
}

void TranslateTrainer::set_task(const std::string& task) {
  task_ = task;
  data_ = std::make_unique<tr::Dataset>(tr::make_dataset({task, kTrain, kHeldout, 0}));
  for (auto& trainer : trainers_) trainer.reset();
  typed_.clear();
}

void TranslateTrainer::set_models(const ScoringPair& models) {
  check_scoring_pair(models, "TranslateTrainer::set_models");
  models_ = models;
  for (auto& trainer : trainers_) trainer.reset();
}

std::string TranslateTrainer::check_text(const std::string& text) const {
  try {
    tr::encode_sources({text}, data_->src_vocab(), data_->src_steps());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void TranslateTrainer::save(const std::string& prefix) const {
  for (size_t m = 0; m < 2; ++m) {
    tr::save_translator(prefix + "-" + models_[m] + ".npz", translators_[m]);
  }
}

std::vector<RecordField> TranslateTrainer::fields() const {
  const int64_t shown = kShown, tgt = data_->tgt_steps(), src = data_->src_steps();
  std::vector<RecordField> out;
  for (const std::string& m : models_) {
    out.push_back({m + ".loss", {1}});
    out.push_back({m + ".accuracy", {1}});
    out.push_back({m + ".output", {shown, tgt}});
    out.push_back({m + ".rows", {shown}});
    out.push_back({m + ".alignment", {shown, tgt, src}});
    if (out.size() == 5) {  // once, for both models: the typed text itself
      out.push_back({"typed.source", {src}});
      out.push_back({"typed.length", {1}});
    }
    out.push_back({m + ".typed.output", {tgt}});
    out.push_back({m + ".typed.rows", {1}});
    out.push_back({m + ".typed.alignment", {tgt, src}});
  }
  return out;
}

std::vector<Trainer::Series> TranslateTrainer::series() const {
  std::vector<Series> out;
  for (size_t m = 0; m < 2; ++m) {
    out.push_back({models_[m] + ".loss", models_[m] + " loss", kScoringColors[m], Axis::Loss});
  }
  for (size_t m = 0; m < 2; ++m) {
    out.push_back({models_[m] + ".accuracy", models_[m] + " held-out", kScoringHeldOutColors[m],
                   Axis::Fraction});
  }
  return out;
}

std::map<std::string, Tensor> TranslateTrainer::start(double lr) {
  // The session has set the seed: both models draw their initial parameters
  // from it, one after the other; the minibatch order is the same for both.
  tr::TrainOptions options;
  options.lr = lr;
  options.batch_size = kBatchSize;
  for (size_t m = 0; m < 2; ++m) {
    tr::ModelConfig config;
    config.attention = models_[m];
    translators_[m] = tr::make_translator(config, *data_);
    trainers_[m] = std::make_unique<tr::Seq2SeqTrainer>(translators_[m], *data_, options);
  }
  steps_ = 0;
  for (size_t m = 0; m < 2; ++m) {
    accuracy_[m] = tr::evaluate(translators_[m], data_->heldout()).accuracy;
    loss_[m] = trainers_[m]->next_loss();
  }
  return record();
}

std::map<std::string, Tensor> TranslateTrainer::step() {
  AG_CHECK(trainers_[0] != nullptr, "TranslateTrainer::step", "start() was not called");
  for (size_t m = 0; m < 2; ++m) loss_[m] = trainers_[m]->step();
  ++steps_;
  if (steps_ % kEvalEvery == 0) {
    for (size_t m = 0; m < 2; ++m) {
      accuracy_[m] = tr::evaluate(translators_[m], data_->heldout()).accuracy;
    }
  }
  return record();
}

void TranslateTrainer::set_learning_rate(double lr) {
  for (auto& trainer : trainers_) {
    if (trainer) trainer->set_learning_rate(lr);
  }
}

std::map<std::string, Tensor> TranslateTrainer::data() const {
  const auto [src, valid_len] =
      tr::encode_sources(data_->heldout_sources(kShown), data_->src_vocab(), data_->src_steps());
  return {{"src", src}, {"src_valid_len", valid_len}};
}

std::map<std::string, Tensor> TranslateTrainer::record() {
  AG_CHECK(trainers_[0] != nullptr, "TranslateTrainer::record", "start() was not called");
  const int64_t tgt = data_->tgt_steps(), src = data_->src_steps();
  const std::vector<std::string> sources = data_->heldout_sources(kShown);
  std::map<std::string, Tensor> out;
  // The typed text as source indices (<eos> and <pad> included), and how
  // many of them are its characters and <eos>; 0: none.
  if (typed_.empty()) {
    out["typed.source"] = full({src}, static_cast<double>(tr::Vocab::kPad));
    out["typed.length"] = zeros({1});
  } else {
    const auto [tokens, valid_len] = tr::encode_sources({typed_}, data_->src_vocab(), src);
    out["typed.source"] = tensor(tokens.to_vector(), {src});
    out["typed.length"] = tensor(valid_len.to_vector(), {1});
  }
  for (size_t m = 0; m < 2; ++m) {
    PredictedFields shown = predict(translators_[m], sources, tgt, src);
    PredictedFields text = predict_typed(translators_[m], typed_, tgt, src);
    const std::string& name = models_[m];
    out[name + ".loss"] = tensor({loss_[m]}, {1});
    out[name + ".accuracy"] = tensor({accuracy_[m]}, {1});
    out[name + ".output"] = tensor(std::move(shown.output), {kShown, tgt});
    out[name + ".rows"] = tensor(std::move(shown.rows), {kShown});
    out[name + ".alignment"] = tensor(std::move(shown.alignment), {kShown, tgt, src});
    out[name + ".typed.output"] = tensor(std::move(text.output), {tgt});
    out[name + ".typed.rows"] = tensor(std::move(text.rows), {1});
    out[name + ".typed.alignment"] = tensor(std::move(text.alignment), {tgt, src});
  }
  return out;
}

}  // namespace ag::viewer
