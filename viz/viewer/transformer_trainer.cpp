// The transformer scene's training (see transformer_trainer.h).
#include "transformer_trainer.h"

#include <algorithm>

#include "attograd/translate/report.h"
#include "plot.h"

namespace ag::viewer {

namespace tr = ag::translate;

namespace {

// Each model's loss and its held-out accuracy in two shades of one colour.
const ImU32 kMaskedLossColor = kFitColor, kMaskedAccuracyColor = IM_COL32(120, 220, 120, 255);
const ImU32 kUnmaskedLossColor = IM_COL32(230, 70, 70, 255);
const ImU32 kUnmaskedAccuracyColor = IM_COL32(255, 170, 60, 255);

// The program's Transformer (attograd-translate --model transformer: d 32,
// FFN 64, 4 heads, 2 blocks, Xavier init) for `data`, with or without its
// look-ahead mask, and without dropout: on dates, dropout 0.1 reaches 22%
// held-out exact match after 3,000 steps (lr 0.005, batch 64), dropout 0
// 86%, and streams its attention in training.
tr::Translator make_transformer_translator(const tr::Dataset& data, bool causal) {
  tr::ModelConfig config;
  config.model = "transformer";
  config.causal = causal;
  config.dropout = 0.0;
  return tr::make_translator(config, data);
}

// map [L, H, rows, cols] into out [L, H, tq, tk] (zeros elsewhere), the
// record's slot of one shown input.
void pad_into(const Tensor& map, int64_t tq, int64_t tk, double* out) {
  const Shape& s = map.shape();
  const std::vector<double> values = map.to_vector();
  for (int64_t lh = 0; lh < s[0] * s[1]; ++lh) {
    for (int64_t r = 0; r < s[2]; ++r) {
      std::copy_n(values.begin() + (lh * s[2] + r) * s[3], s[3], out + (lh * tq + r) * tk);
    }
  }
}

}  // namespace

// ---- the trainer ------------------------------------------------------------------------
TransformerTrainer::TransformerTrainer(const std::string& task, bool ablation) {
  configure(task, ablation);
}

void TransformerTrainer::configure(const std::string& task, bool ablation) {
  if (!data_ || task != task_) {
    data_ = std::make_unique<tr::Dataset>(tr::make_dataset({task, kTrain, kHeldout, 0}));
  }
  task_ = task;
  ablation_ = ablation;
  for (auto& trainer : trainers_) trainer.reset();
  for (auto& translator : translators_) translator.model.reset();
}

nn::Transformer& TransformerTrainer::transformer(size_t m) {
  AG_CHECK(m < static_cast<size_t>(models()) && translators_[m].model != nullptr,
           "TransformerTrainer", "no model " + std::to_string(m) + " (start() makes them)");
  return static_cast<nn::Transformer&>(*translators_[m].model);
}

std::vector<RecordField> TransformerTrainer::fields() const {
  const int64_t shown = kShown, tgt = data_->tgt_steps(), src = data_->src_steps();
  std::vector<RecordField> out;
  for (int64_t m = 0; m < models(); ++m) {
    const std::string name = kModels[m];
    out.push_back({name + ".loss", {1}});
    out.push_back({name + ".accuracy", {1}});
    out.push_back({name + ".output", {shown, tgt}});
    out.push_back({name + ".rows", {shown}});
  }
  out.push_back({"masked.enc_self", {shown, blocks(), heads(), src, src}});
  out.push_back({"masked.dec_self", {shown, blocks(), heads(), tgt, tgt}});
  out.push_back({"masked.cross", {shown, blocks(), heads(), tgt, src}});
  return out;
}

std::vector<Trainer::Series> TransformerTrainer::series() const {
  std::vector<Series> out = {
      {"masked.loss", "masked: training loss", kMaskedLossColor, Axis::Loss},
      {"masked.accuracy", "masked: held-out exact match", kMaskedAccuracyColor, Axis::Fraction}};
  if (ablation_) {
    out.insert(out.begin() + 1, {"unmasked.loss", "no look-ahead mask: training loss",
                                 kUnmaskedLossColor, Axis::Loss});
    out.push_back({"unmasked.accuracy", "no look-ahead mask: held-out exact match",
                   kUnmaskedAccuracyColor, Axis::Fraction});
  }
  return out;
}

std::map<std::string, Tensor> TransformerTrainer::start(double lr) {
  // The session has set the seed: the models draw their initial parameters
  // from it, one after the other (so the masked model starts the same with
  // and without its twin); both see the same minibatches.
  tr::TrainOptions options;
  options.lr = lr;
  options.batch_size = kBatchSize;
  for (int64_t m = 0; m < models(); ++m) {
    translators_[m] = make_transformer_translator(*data_, m == 0);
    trainers_[m] = std::make_unique<tr::Seq2SeqTrainer>(translators_[m], *data_, options);
  }
  steps_ = 0;
  double loss[2] = {0, 0};
  for (int64_t m = 0; m < models(); ++m) {
    accuracy_[m] = tr::evaluate(translators_[m], data_->heldout()).accuracy;
    loss[m] = trainers_[m]->next_loss();
  }
  return record(loss);
}

std::map<std::string, Tensor> TransformerTrainer::step() {
  AG_CHECK(trainers_[0] != nullptr, "TransformerTrainer::step", "start() was not called");
  double loss[2] = {0, 0};
  for (int64_t m = 0; m < models(); ++m) loss[m] = trainers_[m]->step();
  ++steps_;
  if (steps_ % kEvalEvery == 0) {
    for (int64_t m = 0; m < models(); ++m) {
      accuracy_[m] = tr::evaluate(translators_[m], data_->heldout()).accuracy;
    }
  }
  return record(loss);
}

void TransformerTrainer::set_learning_rate(double lr) {
  for (auto& trainer : trainers_) {
    if (trainer) trainer->set_learning_rate(lr);
  }
}

std::map<std::string, Tensor> TransformerTrainer::data() const {
  const auto [src, valid_len] =
      tr::encode_sources(data_->heldout_sources(kShown), data_->src_vocab(), data_->src_steps());
  return {{"src", src}, {"src_valid_len", valid_len}};
}

void TransformerTrainer::save(const std::string& prefix) const {
  for (int64_t m = 0; m < models(); ++m) {
    tr::save_translator(prefix + "-" + kModels[m] + ".npz", translators_[m]);
  }
}

std::map<std::string, Tensor> TransformerTrainer::state() const {
  std::map<std::string, Tensor> out;
  for (int64_t m = 0; m < models(); ++m) {
    if (translators_[m].model == nullptr) continue;
    for (auto& [name, t] : translators_[m].model->state_dict()) {
      out[std::string(kModels[m]) + "." + name] = t.clone();
    }
  }
  return out;
}

std::map<std::string, Tensor> TransformerTrainer::record(const double (&loss)[2]) {
  const int64_t tgt = data_->tgt_steps(), src = data_->src_steps();
  const int64_t lh = blocks() * heads();
  const std::vector<std::string> sources = data_->heldout_sources(kShown);
  std::map<std::string, Tensor> out;
  for (int64_t m = 0; m < models(); ++m) {
    // Greedy decoding as the program does it (translate()), and for the
    // masked model every attention map of it (translate::transformer_maps,
    // what attograd-translate --json prints).
    const std::vector<tr::Translation> translations = tr::translate(translators_[m], sources);
    std::vector<double> output(static_cast<size_t>(kShown * tgt), -1.0);
    std::vector<double> rows(static_cast<size_t>(kShown), 0.0);
    std::vector<double> enc, dec, cross;
    if (m == 0) {
      enc.assign(static_cast<size_t>(kShown * lh * src * src), 0.0);
      dec.assign(static_cast<size_t>(kShown * lh * tgt * tgt), 0.0);
      cross.assign(static_cast<size_t>(kShown * lh * tgt * src), 0.0);
    }
    for (int64_t i = 0; i < kShown; ++i) {
      const tr::Translation& t = translations[static_cast<size_t>(i)];
      const auto steps = static_cast<int64_t>(t.output_tokens.size());
      rows[static_cast<size_t>(i)] = static_cast<double>(steps);
      for (int64_t s = 0; s < steps; ++s) {
        const std::string& token = t.output_tokens[static_cast<size_t>(s)];
        if (token == "<eos>") break;
        output[static_cast<size_t>(i * tgt + s)] =
            static_cast<double>(data_->tgt_vocab().index(token));
      }
      if (m != 0) continue;
      const tr::TransformerMaps maps = tr::transformer_maps(translators_[m], t);
      pad_into(maps.encoder, src, src, enc.data() + i * lh * src * src);
      pad_into(maps.decoder, tgt, tgt, dec.data() + i * lh * tgt * tgt);
      pad_into(maps.cross, tgt, src, cross.data() + i * lh * tgt * src);
    }
    const std::string name = kModels[m];
    out[name + ".loss"] = tensor({loss[m]}, {1});
    out[name + ".accuracy"] = tensor({accuracy_[m]}, {1});
    out[name + ".output"] = tensor(std::move(output), {kShown, tgt});
    out[name + ".rows"] = tensor(std::move(rows), {kShown});
    if (m == 0) {
      out["masked.enc_self"] = tensor(std::move(enc), {kShown, blocks(), heads(), src, src});
      out["masked.dec_self"] = tensor(std::move(dec), {kShown, blocks(), heads(), tgt, tgt});
      out["masked.cross"] = tensor(std::move(cross), {kShown, blocks(), heads(), tgt, src});
    }
  }
  return out;
}

}  // namespace ag::viewer
