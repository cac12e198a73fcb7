// tutorial_16_models.h: the small models tutorial 16 decodes, kept apart
// from its steps: d2l's worked example as a decoder (the figures' conditional
// probabilities), and the shipped letters-to-sounds model wrapped so that
// every decoder call is counted.
#pragma once

#include <attograd/translate/predict.h>
#include <attograd/translate/train.h>

#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tutorial16 {

namespace tr = ag::translate;

// ---- d2l's worked example as a decoder ----------------------------------------------
// The figures' tokens, at the indices the library's Vocab gives them after
// its reserved tokens (<pad> 0, <bos> 1, <eos> 2, <unk> 3).
constexpr int64_t kA = 4, kB = 5, kC = 6, kV = 7;
const char* token_name(int64_t token) {
  static const char* names[] = {"<pad>", "<bos>", "<eos>", "<unk>", "A", "B", "C"};
  return names[token];
}

// P(next token | the tokens so far), in the order A, B, C, <eos>: the six
// distributions d2l's two figures show (each column of a figure is one).
// The figures say nothing about other prefixes ("B", "AA", ...); we give
// them the uniform 1/4, which favours no token, and note which were asked
// (the K = 2 step prints them).
std::set<std::string>& uncovered_prefixes() {
  static std::set<std::string> asked;
  return asked;
}
std::array<double, 4> figure_probs(const std::string& prefix) {
  static const std::map<std::string, std::array<double, 4>> table = {
      {"", {0.5, 0.2, 0.2, 0.1}},     // time step 1 (both figures)
      {"A", {0.1, 0.4, 0.3, 0.2}},    // time step 2 (both figures)
      {"AB", {0.2, 0.2, 0.4, 0.2}},   // step 3 of the first figure (greedy)
      {"ABC", {0.0, 0.2, 0.2, 0.6}},  // step 4 of the first figure
      {"AC", {0.1, 0.6, 0.2, 0.1}},   // step 3 of the second figure (C at step 2)
      {"ACB", {0.1, 0.2, 0.1, 0.6}},  // step 4 of the second figure
  };
  const auto it = table.find(prefix);
  if (it != table.end()) return it->second;
  uncovered_prefixes().insert(prefix);
  return {0.25, 0.25, 0.25, 0.25};
}

// A prefix travels in the decoder's state as one number per row, so that the
// library's select_state (index_select on the rows) can copy and reorder it:
// code = 1, then code * 8 + token for each token.
std::string prefix_of(double code) {
  std::string prefix;
  for (auto c = static_cast<int64_t>(code); c > 1; c /= 8)
    prefix.insert(prefix.begin(), "?...ABC"[c % 8]);
  return prefix;
}

// The encoder has nothing to read: the figures' probabilities do not depend
// on a source. It hands the decoder nothing.
class FigureEncoder : public ag::nn::Encoder {
 public:
  FigureEncoder() : Encoder("FigureEncoder") {}
  std::vector<ag::Tensor> forward(const ag::Tensor& src, const ag::Tensor&) override {
    return {src};
  }
};

// The smallest honest adapter: a Decoder whose logits are log P(token |
// prefix) from the figures (log 0 = -inf for <pad>, <bos>, <unk> and the
// figures' zeros), so that the library's softmax gives back the figures'
// numbers exactly. Its state is each row's prefix code; its "alignment" is
// the one source position with weight 1.
class FigureDecoder : public ag::nn::Decoder {
 public:
  FigureDecoder() : Decoder("FigureDecoder") {}
  ag::nn::DecoderState init_state(const std::vector<ag::Tensor>& enc_outputs,
                                  const ag::Tensor&) override {
    return {{ag::full({enc_outputs[0].size(0)}, 1.0, ag::kFloat64)}, {}};
  }
  ag::Tensor forward(const ag::Tensor& tgt, ag::nn::DecoderState& state) override {
    const int64_t R = tgt.size(0);
    const std::vector<double> tokens = tgt.to_vector();
    std::vector<double> codes = state.tensors[0].to_vector();
    std::vector<double> logits(static_cast<size_t>(R * kV),
                               -std::numeric_limits<double>::infinity());
    for (int64_t r = 0; r < R; ++r) {
      const auto token = static_cast<int64_t>(tokens[r]);
      if (token != tr::Vocab::kBos) codes[r] = codes[r] * 8 + double(token);
      const std::array<double, 4> p = figure_probs(prefix_of(codes[r]));
      const int64_t index[4] = {kA, kB, kC, tr::Vocab::kEos};
      for (int k = 0; k < 4; ++k) logits[r * kV + index[k]] = std::log(p[k]);
    }
    state.tensors[0] = ag::tensor(codes, {R}, ag::kFloat64);
    alignment_ = ag::ones({R, 1, 1}, ag::kFloat64);
    return ag::tensor(logits, {R, 1, kV}, ag::kFloat64);
  }
  ag::Tensor alignment() const override { return alignment_; }
  void select_state(ag::nn::DecoderState& state, const ag::Tensor& rows) const override {
    state.tensors[0] = ag::index_select(state.tensors[0], 0, rows);
  }

 private:
  ag::Tensor alignment_;
};

std::string sequence_str(const std::vector<int64_t>& tokens, bool finished) {
  std::string s;
  for (int64_t token : tokens) s += std::string(token_name(token)) + " ";
  return s + (finished ? "<eos>" : "(no <eos>)");
}

// One sequence of exhaustive search: its tokens (without <eos>), whether it
// ended in <eos>, and log P.
struct Sequence {
  std::vector<int64_t> tokens;
  bool finished;
  double log_prob;
};

// Every sequence of at most `steps` tokens over A, B, C, <eos>, with its
// probability: the figures' tree walked to the end.
void enumerate(const std::string& prefix, std::vector<int64_t>& tokens, double log_prob,
               int64_t steps, std::vector<Sequence>& out) {
  const std::array<double, 4> p = figure_probs(prefix);
  const int64_t index[4] = {kA, kB, kC, tr::Vocab::kEos};
  for (int k = 0; k < 4; ++k) {
    const double lp = log_prob + std::log(p[k]);
    if (index[k] == tr::Vocab::kEos) {
      out.push_back({tokens, true, lp});
    } else if (static_cast<int64_t>(tokens.size()) + 1 == steps) {
      tokens.push_back(index[k]);
      out.push_back({tokens, false, lp});
      tokens.pop_back();
    } else {
      tokens.push_back(index[k]);
      enumerate(prefix + token_name(index[k]), tokens, lp, steps, out);
      tokens.pop_back();
    }
  }
}

// ---- the trained model ----------------------------------------------------------------
// A Decoder that passes every call to the model's own and counts what beam
// search asks of it: each row of a call is one kept sequence, scored against
// all V tokens.
class CountingDecoder : public ag::nn::Decoder {
 public:
  explicit CountingDecoder(ag::nn::Decoder& inner) : Decoder("CountingDecoder"), inner_(inner) {}
  ag::nn::DecoderState init_state(const std::vector<ag::Tensor>& enc_outputs,
                                  const ag::Tensor& lens) override {
    return inner_.init_state(enc_outputs, lens);
  }
  ag::Tensor forward(const ag::Tensor& tgt, ag::nn::DecoderState& state) override {
    ag::Tensor logits = inner_.forward(tgt, state);
    scored += logits.size(0) * logits.size(2);
    ++calls;
    return logits;
  }
  ag::Tensor alignment() const override { return inner_.alignment(); }
  void select_state(ag::nn::DecoderState& state, const ag::Tensor& rows) const override {
    inner_.select_state(state, rows);
  }
  int64_t scored = 0, calls = 0;

 private:
  ag::nn::Decoder& inner_;
};

class ForwardingEncoder : public ag::nn::Encoder {
 public:
  explicit ForwardingEncoder(ag::nn::Encoder& inner)
      : Encoder("ForwardingEncoder"), inner_(inner) {}
  std::vector<ag::Tensor> forward(const ag::Tensor& src, const ag::Tensor& lens) override {
    return inner_.forward(src, lens);
  }

 private:
  ag::nn::Encoder& inner_;
};

// The shipped model's encoder and its decoder, the decoder counted.
struct CountedModel {
  CountingDecoder* decoder;
  std::unique_ptr<ag::nn::EncoderDecoder> model;
};
CountedModel counted(tr::Translator& translator) {
  auto decoder = std::make_unique<CountingDecoder>(translator.model->decoder());
  CountingDecoder* raw = decoder.get();
  return {raw, std::make_unique<ag::nn::EncoderDecoder>(
                   std::make_unique<ForwardingEncoder>(translator.model->encoder()),
                   std::move(decoder))};
}

// The words as the model reads them: characters + <eos>, padding cut (the
// bidirectional encoder skips it).
std::pair<ag::Tensor, ag::Tensor> sources(const tr::Translator& translator,
                                          const std::vector<std::string>& words) {
  auto [src, len] = tr::encode_sources(words, translator.src_vocab, translator.src_steps);
  if (tr::skips_padding(translator.config)) src = tr::cut_padding(src, len);
  return {src, len};
}

}  // namespace tutorial16
