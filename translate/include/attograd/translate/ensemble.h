// An ensemble of translation models: several models trained apart (other
// seeds, other recipes, other scoring functions) decode together. At every
// output step each member reads the same source and the same output so far,
// and their next-token distributions are averaged:
//
//   P(y_t | y_<t, x) = (1/N) sum_k P_k(y_t | y_<t, x)
//
// The ensemble is an nn::EncoderDecoder like any model, so greedy search,
// beam search, the n best with posteriors and the Pronouncer decode it
// unchanged: its decoder's "logits" are log P(y_t | y_<t, x), whose
// log_softmax is themselves. Its alignment is the members' mean. Members
// disagree where a word is hard; the average is more often right than any
// one of them (docs/g2p.md, "An ensemble of three").
//
//   Translator t = load_ensemble({"a.npz", "b.npz", "c.npz"});
//   attograd-translate --load a.npz --load b.npz --load c.npz --predict-file words.txt
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attograd/nn/encoder_decoder.h"
#include "attograd/translate/model.h"

namespace ag::translate {

// The best shipped letters-to-sounds model (docs/g2p.md, "An ensemble of
// three"), relative to the source tree: three additive models of the
// shipped recipe (seed 0, the default model; seed 1; seed 0 without
// dropout), decoded as one.
inline constexpr const char* kShippedG2pEnsemble[] = {"translate/models/g2p-cmudict.npz",
                                                      "translate/models/g2p-cmudict-seed1.npz",
                                                      "translate/models/g2p-cmudict-nodropout.npz"};

// The members, decoding as one model (at least one; each keeps its own
// encoder, decoder and state). Their vocabularies must agree; the caller
// checks that (load_ensemble does).
std::unique_ptr<nn::EncoderDecoder> make_ensemble(
    std::vector<std::unique_ptr<nn::EncoderDecoder>> members);

// A fresh model of `t`'s kind and sizes: make_model(t.config, ...), or for
// an ensemble (t.members) an ensemble of fresh members, whose state dict
// then has the same names as t.model's (a replica for another thread).
std::unique_ptr<nn::EncoderDecoder> make_translator_model(const Translator& t);

// The models saved at `paths` (load_translator each), as one Translator whose
// model is their ensemble (one path: that model, as load_translator gives
// it). Its config is the first file's; translator.members holds each
// file's. Throws ag::Error naming both files when two differ in
// task, vocabularies, step counts or whether they skip padding.
Translator load_ensemble(const std::vector<std::string>& paths);

}  // namespace ag::translate
