// An ensemble of translation models (ensemble.h).
//
// Legend: N members, B batch, Tout target steps, V target vocabulary, T
// source steps.
#include "attograd/translate/ensemble.h"

#include <utility>

#include "attograd/attograd.h"

namespace ag::translate {

namespace {

// The members, and where each one's tensors sit in the ensemble's state:
// the encoder returns every member's outputs one after another, and the
// decoder's state holds every member's state likewise. How many tensors a
// member's encoder returns and its state holds is fixed by its kind
// (seq2seq: 3 outputs, 3 state tensors; Transformer: 2 and 2, one key_values
// entry per block), recorded when they are made.
struct Members {
  std::vector<std::unique_ptr<nn::EncoderDecoder>> models;
  std::vector<size_t> outputs, tensors, key_values;  // per member
};

template <typename T>
std::vector<T> slice(const std::vector<T>& all, size_t begin, size_t count) {
  return {all.begin() + static_cast<std::ptrdiff_t>(begin),
          all.begin() + static_cast<std::ptrdiff_t>(begin + count)};
}

class EnsembleEncoder : public nn::Encoder {
 public:
  explicit EnsembleEncoder(std::shared_ptr<Members> members)
      : Encoder("EnsembleEncoder"), members_(std::move(members)) {
    // Registered here (once) so that train() and eval() reach every member.
    for (size_t k = 0; k < members_->models.size(); ++k)
      register_module("member" + std::to_string(k), members_->models[k].get());
  }

  // Every member's outputs, member 0's first.
  std::vector<Tensor> forward(const Tensor& src, const Tensor& src_valid_lens) override {
    std::vector<Tensor> all;
    members_->outputs.clear();
    for (const auto& model : members_->models) {
      std::vector<Tensor> outputs = model->encoder().forward(src, src_valid_lens);
      members_->outputs.push_back(outputs.size());
      all.insert(all.end(), outputs.begin(), outputs.end());
    }
    return all;
  }

 private:
  std::shared_ptr<Members> members_;
};

class EnsembleDecoder : public nn::Decoder {
 public:
  explicit EnsembleDecoder(std::shared_ptr<Members> members)
      : Decoder("EnsembleDecoder"), members_(std::move(members)) {}

  // Each member's state from its own outputs, one after another.
  nn::DecoderState init_state(const std::vector<Tensor>& enc_outputs,
                              const Tensor& src_valid_lens) override {
    nn::DecoderState all;
    members_->tensors.clear();
    members_->key_values.clear();
    size_t begin = 0;
    for (size_t k = 0; k < members_->models.size(); ++k) {
      const std::vector<Tensor> outputs = slice(enc_outputs, begin, members_->outputs.at(k));
      begin += members_->outputs[k];
      nn::DecoderState state = members_->models[k]->decoder().init_state(outputs, src_valid_lens);
      members_->tensors.push_back(state.tensors.size());
      members_->key_values.push_back(state.key_values.size());
      append(all, state);
    }
    return all;
  }

  // tgt [B, Tout] -> log P(y_t | y_<t, x) [B, Tout, V]: the log of the mean
  // of the members' softmaxes. The mean of probabilities, not of logits: a
  // member sure of a token it alone proposes moves the average by 1/N at
  // most.
  Tensor forward(const Tensor& tgt, nn::DecoderState& state) override {
    const auto count = static_cast<double>(members_->models.size());
    Tensor total;  // sum_k P_k [B, Tout, V]
    std::vector<Tensor> alignments;
    nn::DecoderState updated;
    for (size_t k = 0; k < members_->models.size(); ++k) {
      nn::DecoderState mine = member_state(state, k);
      nn::Decoder& decoder = members_->models[k]->decoder();
      const Tensor probs = softmax(decoder.forward(tgt, mine), 2);
      total = total.defined() ? total + probs : probs;
      alignments.push_back(decoder.alignment());
      append(updated, mine);
    }
    state = std::move(updated);
    // The alignment: the members' mean [B, Tout, T].
    const bool all_defined = std::all_of(alignments.begin(), alignments.end(),
                                         [](const Tensor& a) { return a.defined(); });
    alignment_ = all_defined ? mean(stack(alignments, 0), 0) : Tensor();
    return log(total * (1.0 / count));
  }

  Tensor alignment() const override { return alignment_; }

  void select_state(nn::DecoderState& state, const Tensor& rows) const override {
    nn::DecoderState selected;
    for (size_t k = 0; k < members_->models.size(); ++k) {
      nn::DecoderState mine = member_state(state, k);
      members_->models[k]->decoder().select_state(mine, rows);
      append(selected, mine);
    }
    state = std::move(selected);
  }

 private:
  static void append(nn::DecoderState& all, const nn::DecoderState& member) {
    all.tensors.insert(all.tensors.end(), member.tensors.begin(), member.tensors.end());
    all.key_values.insert(all.key_values.end(), member.key_values.begin(), member.key_values.end());
  }

  // Member k's part of the ensemble's state (Tensors share their storage).
  nn::DecoderState member_state(const nn::DecoderState& all, size_t k) const {
    size_t tensors = 0, key_values = 0;
    for (size_t j = 0; j < k; ++j) {
      tensors += members_->tensors[j];
      key_values += members_->key_values[j];
    }
    AG_CHECK(k < members_->tensors.size() && all.tensors.size() >= tensors + members_->tensors[k] &&
                 all.key_values.size() >= key_values + members_->key_values[k],
             "ensemble",
             "the decoder state does not hold member " + std::to_string(k) +
                 "'s tensors: call init_state first");
    return {slice(all.tensors, tensors, members_->tensors[k]),
            slice(all.key_values, key_values, members_->key_values[k])};
  }

  std::shared_ptr<Members> members_;
  Tensor alignment_;
};

class Ensemble : public nn::EncoderDecoder {
 public:
  explicit Ensemble(const std::shared_ptr<Members>& members)
      : EncoderDecoder(std::make_unique<EnsembleEncoder>(members),
                       std::make_unique<EnsembleDecoder>(members)),
        members_(members) {}

  void set_need_weights(bool need_weights) override {
    for (const auto& model : members_->models) model->set_need_weights(need_weights);
  }

 private:
  std::shared_ptr<Members> members_;
};

}  // namespace

std::unique_ptr<nn::EncoderDecoder> make_ensemble(
    std::vector<std::unique_ptr<nn::EncoderDecoder>> members) {
  AG_CHECK(!members.empty(), "make_ensemble", "an ensemble needs at least one model");
  for (size_t k = 0; k < members.size(); ++k)
    AG_CHECK(members[k] != nullptr, "make_ensemble", "member " + std::to_string(k) + " is null");
  auto shared = std::make_shared<Members>();
  shared->models = std::move(members);
  return std::make_unique<Ensemble>(shared);
}

std::unique_ptr<nn::EncoderDecoder> make_translator_model(const Translator& t) {
  if (t.members.empty()) return make_model(t.config, t.src_vocab.size(), t.tgt_vocab.size());
  std::vector<std::unique_ptr<nn::EncoderDecoder>> models;
  for (const ModelConfig& config : t.members)
    models.push_back(make_model(config, t.src_vocab.size(), t.tgt_vocab.size()));
  return make_ensemble(std::move(models));
}

Translator load_ensemble(const std::vector<std::string>& paths) {
  AG_CHECK(!paths.empty(), "load_ensemble", "no model file given");
  Translator first = load_translator(paths[0]);
  if (paths.size() == 1) return first;
  std::vector<std::unique_ptr<nn::EncoderDecoder>> models;
  models.push_back(std::move(first.model));
  std::vector<ModelConfig> configs{first.config};
  for (size_t k = 1; k < paths.size(); ++k) {
    Translator other = load_translator(paths[k]);
    const auto differ = [&](const std::string& what) {
      return Error("load_ensemble: " + paths[0] + " and " + paths[k] + " differ in " + what +
                   ": an ensemble's models must read and write the same tokens");
    };
    if (other.task.name != first.task.name)
      throw differ("task ('" + first.task.name + "' and '" + other.task.name + "')");
    if (other.src_vocab.idx_to_token() != first.src_vocab.idx_to_token())
      throw differ("source vocabulary");
    if (other.tgt_vocab.idx_to_token() != first.tgt_vocab.idx_to_token())
      throw differ("target vocabulary");
    if (other.src_steps != first.src_steps || other.tgt_steps != first.tgt_steps)
      throw differ("step counts (" + std::to_string(first.src_steps) + "/" +
                   std::to_string(first.tgt_steps) + " and " + std::to_string(other.src_steps) +
                   "/" + std::to_string(other.tgt_steps) + ")");
    if (skips_padding(other.config) != skips_padding(first.config))
      throw differ("whether they skip padding (the encoders '" + first.config.encoder + "' and '" +
                   other.config.encoder + "')");
    models.push_back(std::move(other.model));
    configs.push_back(other.config);
  }
  first.model = make_ensemble(std::move(models));
  first.model->eval();
  first.members = std::move(configs);
  return first;
}

}  // namespace ag::translate
