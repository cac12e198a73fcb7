// A translation model with everything needed to use it: which model, its
// sizes, its task's format (name, tokenization) and the vocabularies and step
// counts of its data; the one place that maps a model's name to its classes.
// Saving and loading one is model.h's (the file names its task, which the
// task table, tasks.h, resolves).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attograd/nn/encoder_decoder.h"
#include "attograd/translate/data.h"

namespace ag::translate {

// Sizes as d2l names them. Defaults: d2l's (seq2seq: embedding 32, hidden 32,
// 2 GRU layers; Transformer: d 32, FFN 64, 4 heads, 2 blocks; dropout 0.1).
struct ModelConfig {
  std::string model = "bahdanau";  // the kinds make_model knows (model_names())
  // bahdanau: a scoring function's name in nn's table (nn/scoring.h)
  std::string attention = "additive";
  // bahdanau: "unidirectional" (d2l's encoder) or "bidirectional" (Bahdanau
  // et al.'s: a bidirectional GRU, the decoder started from its backward
  // direction; its keys are 2H wide, so dot is refused: general is the
  // dot-product score that maps them).
  std::string encoder = "unidirectional";
  int64_t embed_size = 32;   // bahdanau (the Transformer embeds in num_hiddens)
  int64_t num_hiddens = 32;  // the GRU's hidden size; the Transformer's d
  int64_t num_layers = 2;    // bahdanau: GRU layers
  double dropout = 0.1;
  int64_t num_heads = 4;  // the Transformer's, and bahdanau's with multihead; divides num_hiddens
  // The Transformer's (unused by bahdanau):
  int64_t ffn_num_hiddens = 64;  // PositionWiseFFN's hidden size
  int64_t num_blks = 2;          // encoder and decoder blocks
  bool causal = true;            // the decoder's look-ahead mask (false: the ablation)
};

// "bahdanau", "transformer".
const std::vector<std::string>& model_names();

// The model `config` names, for these vocabulary sizes, initialised as d2l's
// train_seq2seq does (Xavier-uniform Linear and GRU weights; the book's
// edition with these sizes trains its Transformer with it too). The one
// place that maps a name to a model class: "bahdanau" is
// nn::make_bahdanau_seq2seq, "transformer" nn::make_transformer (an
// nn::Transformer, with config.causal set on its decoder).
// Throws ag::Error for an unknown model or scoring function, or bad sizes.
std::unique_ptr<nn::EncoderDecoder> make_model(const ModelConfig& config, int64_t src_vocab_size,
                                               int64_t tgt_vocab_size);
// Whether `config`'s sizes fit together (dot-product scores need keys of the
// queries' width, heads divide the width, ...), asked of the model classes
// themselves: make_model for one-token vocabularies, without drawing initial
// values (the generator does not advance), its ag::Error let through. A
// program checks its flags with it before it reads any data.
void check_model_config(const ModelConfig& config);

struct Translator {
  ModelConfig config;
  TaskFormat task;  // its name, and how inputs are read and outputs written
  Vocab src_vocab, tgt_vocab;
  int64_t src_steps = 0, tgt_steps = 0;
  std::unique_ptr<nn::EncoderDecoder> model;
  // An ensemble's members' configs (load_ensemble, ensemble.h; config is
  // the first's); empty for one model. An ensemble is not saved as one
  // file: its members are its files.
  std::vector<ModelConfig> members;
};

// Whether the model's valid logits do not depend on padding (the
// bidirectional encoder skips it; the decoder is causal), so that a batch may
// be cut to its longest source and target (cut_padding) in training and
// prediction alike.
inline bool skips_padding(const ModelConfig& config) {
  return config.encoder == "bidirectional";
}

// A fresh model for `data`'s vocabularies and step counts.
Translator make_translator(const ModelConfig& config, const Dataset& data);

}  // namespace ag::translate
