// A translator (translator.h) saved to and loaded from one .npz file that
// also loads into d2l's PyTorch model (README, scripts/check_translate_torch.py):
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
//   meta.task         the task's name in the task table (tasks.h: "dates",
//                     "g2p", ...), likewise; loading finds it there
//   meta.sizes        int64 [embed_size, num_hiddens, num_layers, src_steps, tgt_steps]
//   meta.dropout      float64 [1]
//   meta.transformer  int64 [num_heads, ffn_num_hiddens, num_blks, causal]
//                     (Transformer files only; since format 2)
//   meta.encoder      "unidirectional" or "bidirectional", as int64 byte
//                     values (bahdanau; since format 3: older files are
//                     unidirectional)
//   meta.src_vocab, meta.tgt_vocab   the tokens in index order, joined by '\n',
//                     as int64 byte values
//   meta.format       int64 [1]: kFormatVersion (files of version 1, which
//                     knew bahdanau only, load too)
//
// Python reads a name back with bytes(a.astype('uint8')).decode().
#pragma once

#include <string>

#include "attograd/translate/translator.h"

namespace ag::translate {

// 2: meta.transformer added (the layout is otherwise version 1's).
// 3: meta.encoder added.
// 4: meta.heads added (bahdanau), for any scoring function of the table.
inline constexpr int64_t kFormatVersion = 4;
void save_translator(const std::string& path, const Translator& translator);

// The shipped letters-to-sounds models (docs/g2p.md), relative to the source
// tree: the default first (the best on dev), then the best of another
// scoring function. The viewer's pronounce scene shows each side by side.
inline constexpr const char* kShippedG2pModels[] = {"translate/models/g2p-cmudict.npz",
                                                    "translate/models/g2p-cmudict-multihead.npz"};
// Throws ag::Error naming the path when the file is not one save_translator
// wrote (no meta.* entries, an unknown model or task, a state dict that does
// not fit the model the meta entries describe).
Translator load_translator(const std::string& path);

}  // namespace ag::translate
