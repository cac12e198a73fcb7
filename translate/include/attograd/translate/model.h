// A translation model with everything needed to use it: which model, its
// sizes, the vocabularies and step counts of its data. Saved to and loaded
// from one .npz file that also loads into d2l's PyTorch model (README,
// scripts/check_translate_torch.py):
//
//   encoder.embedding.weight, encoder.rnn.weight_ih_l0, ..., decoder.dense.bias
//                     the state dict, with d2l's names and shapes (Transformer:
//                     encoder.blks.block0.attention.W_q.weight, ...)
//   meta.model        the model's name ("bahdanau" or "transformer"), as int64
//                     byte values
//   meta.attention    the scoring function's name in nn's table
//                     (nn::scoring_functions(): "additive", "dot", "general",
//                     "multihead", ...), likewise (bahdanau's; the
//                     Transformer's files hold "additive", unused)
//   meta.heads        int64 [1]: multihead's heads (bahdanau files; since
//                     format 4: older files have 1)
//   meta.task         "dates", "reverse" or "sort", likewise
//   meta.sizes        int64 [embed_size, num_hiddens, num_layers, src_steps, tgt_steps]
//   meta.dropout      float64 [1]
//   meta.transformer  int64 [num_heads, ffn_num_hiddens, num_blks, causal]
//                     (Transformer files only; since format 2)
//   meta.encoder      "unidirectional" or "bidirectional", as int64 byte
//                     values (bahdanau; since format 3: older files are
//                     unidirectional)
//   meta.encoder_hiddens  int64 [1]: the bidirectional encoder's hidden size
//                     per direction, when not num_hiddens (since format 5)
//   meta.norm_first   int64 [1]: 1 for pre-LN Transformer blocks (since format 5)
//   meta.src_vocab, meta.tgt_vocab   the tokens in index order, joined by '\n',
//                     as int64 byte values
//   meta.format       int64 [1]: kFormatVersion (files of version 1, which
//                     knew bahdanau only, load too)
//
// Python reads a name back with bytes(a.astype('uint8')).decode().
#pragma once

#include <memory>
#include <string>

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
  // dot-product score that maps them, or see encoder_hiddens).
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
  bool norm_first = false;       // pre-LN blocks (nn/transformer.h); false: d2l's post-LN
  // bahdanau, bidirectional encoder: its hidden size per direction (0: as
  // num_hiddens). num_hiddens / 2 makes its keys num_hiddens wide, the
  // queries' width, so that dot reads it (nn/seq2seq.h). The one-way
  // encoder's is num_hiddens (make_model refuses another).
  int64_t encoder_hiddens = 0;
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

struct Translator {
  ModelConfig config;
  Task task = Task::Dates;
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

// 2: meta.transformer added (the layout is otherwise version 1's).
// 3: meta.encoder added.
// 4: meta.heads added (bahdanau), for any scoring function of the table.
// 5: meta.encoder_hiddens and meta.norm_first, written only by a model that
//    has them; any other model is written as version 4, as before, so that
//    a program that reads 4 refuses exactly the files it would misread.
inline constexpr int64_t kFormatVersion = 5;
void save_translator(const std::string& path, const Translator& translator);
// What save_translator writes to `path` (named in its errors): the state
// dict and the meta.* entries above.
std::map<std::string, Tensor> translator_entries(const Translator& translator,
                                                 const std::string& path);

// The shipped letters-to-sounds models (docs/g2p.md), relative to the source
// tree: the default first (the best on dev), then the best of another
// scoring function. The viewer's pronounce scene shows each side by side.
inline constexpr const char* kShippedG2pModels[] = {"translate/models/g2p-cmudict.npz",
                                                    "translate/models/g2p-cmudict-multihead.npz"};
// Throws ag::Error naming the path when the file is not one save_translator
// wrote (no meta.* entries, an unknown model, a state dict that does not fit
// the model the meta entries describe).
Translator load_translator(const std::string& path);

}  // namespace ag::translate
