// Letters to sounds as a library call: load a g2p model once, then pronounce
// many words, each answered from a lexicon when it is listed there and by the
// model otherwise, with the n best pronunciations, their posteriors and
// confidences. attograd-translate --predict-file, the viewer's pronounce
// scene and tutorial 17 use it; examples/pronounce/ is a program of a few
// lines built against the installed package. It answers the inputs of a
// model of any task the same way (the task table, tasks.h): a variant's
// `phonemes` are then that task's output ("1979-05-03" for dates); a lexicon
// needs a task that reads a dictionary.
//
//   ag::translate::Pronouncer g2p("translate/models/g2p-cmudict.npz");
//   g2p.add_lexicon("my-words.dict");                    // optional
//   for (const auto& p : g2p.pronounce({"knife", "Attograd"}, {.nbest = 3}))
//     std::cout << p.word << '\t' << p.variants[0].phonemes << '\n';
//
// The figures of a model's variant (beam search over the decoder's
// probabilities P(y_t | y_<t, word)):
//   log_prob       log P(y_1 .. y_L <eos> | word), the sum of its steps' log P
//   confidence     exp(log_prob): the probability of the whole sequence
//                  (DeepPhonemizer's product of token probabilities)
//   phoneme_probs  P(y_t | y_<t, word) of each phoneme; end_prob is that of
//                  the <eos> after them (confidence = their product)
//   score          d2l's length-normalised log_prob / L^0.75, the beam's ranking
//   posterior      exp(log_prob) renormalised over the n-best variants the
//                  beam returned (Sequitur's and Phonetisaurus's n-best
//                  posteriors): they sum to 1 over those N
// The n best (nbest > 1) are the beam's K candidates' N most probable, most
// probable first: their posteriors descend. One answer (nbest = 1) is the
// beam's best by score, as --beam answers. pmass Q keeps the fewest leading
// variants whose posteriors sum to at least Q, each posterior as it was over
// the N.
//
// A lexicon (CMUdict's format, read_cmudict) answers the words it lists with
// every pronunciation it gives, in its order: confidence 1, posterior an
// equal share (a dictionary states pronunciations; it does not weigh them).
// Lexicons added later override earlier ones word by word.
//
// Words are read as users type them, as the model's task reads its inputs
// (g2p: surrounding spaces and a trailing '\r' are dropped and ASCII upper
// case folds to lower case, "Knife" is "knife"). problem() says why a word
// cannot be pronounced (empty, a character the model has not seen, longer
// than the model reads); pronounce() throws that as an ag::Error.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attograd/tensor.h"
#include "attograd/translate/cmudict.h"
#include "attograd/translate/model.h"
#include "attograd/translate/tasks.h"

namespace ag::translate {

struct PronounceOptions {
  int64_t nbest = 1;   // variants per word (at most beam)
  int64_t beam = 0;    // beam width; 0: nbest (1 is greedy search)
  double pmass = 1.0;  // keep the fewest variants whose posteriors sum to >= pmass
  // Words per decoder batch. The words are sorted by length first, so a
  // batch's words are decoded for about as many steps as each needs.
  int64_t batch_size = 500;
};

enum class PronunciationSource { Lexicon, Model };
const char* source_name(PronunciationSource source);  // "lexicon", "model"

struct PronunciationVariant {
  std::string phonemes;  // "N AY F"
  double log_prob = 0;   // lexicon: 0
  double confidence = 1;
  double score = 0;
  double posterior = 1;
  std::vector<double> phoneme_probs;  // one per phoneme (lexicon: 1)
  double end_prob = 1;                // P(<eos> | the phonemes) (lexicon: 1)
  bool finished = true;               // false: no <eos> within the model's steps
  // The model's: its phonemes and <eos> if emitted, and [output_tokens,
  // letters + 1] float64, how each output step looked at the word's letters
  // and its <eos>. Lexicon: empty, undefined.
  std::vector<std::string> output_tokens;
  Tensor alignment;
};

struct Pronunciation {
  std::string word;  // as the model reads it (folded to lower case)
  PronunciationSource source = PronunciationSource::Model;
  // The model's: the word's tokens and <eos>, the variants' alignment
  // columns (alignment_columns, predict.h). Lexicon: empty.
  std::vector<std::string> source_tokens;
  std::vector<PronunciationVariant> variants;  // best first; variants[0] is the answer
};

class Pronouncer {
 public:
  // Loads a g2p model (load_translator), or a model of another task.
  explicit Pronouncer(const std::string& model_path);
  // Several files: their ensemble (load_ensemble; one file: that model).
  explicit Pronouncer(const std::vector<std::string>& model_paths);
  explicit Pronouncer(Translator translator);

  // Adds a lexicon in CMUdict's format, read as the model's task reads one
  // (Task::lexicon: g2p's words with their pronunciations); its entries
  // override earlier lexicons'. ag::Error for a task that reads no dictionary.
  void add_lexicon(const std::string& path);
  void add_lexicon(const Cmudict& dict);
  size_t lexicon_size() const { return lexicon_.size(); }

  // A g2p word as it is read: spaces and '\r' around it dropped, A-Z folded
  // (normalize_word, cmudict.h).
  static std::string normalize(const std::string& word);
  // `text` as the model's task reads it (Task::read_input; g2p: normalize).
  std::string read(const std::string& text) const;
  // Why the word (as read() gives it) cannot be pronounced, or nothing: a
  // lexicon word always can; otherwise empty, too long for the model (its
  // length and the limit) or a token the model has not seen (named, with the
  // ones it has).
  std::optional<std::string> problem(const std::string& word) const;

  // One Pronunciation per word, in the words' order. Throws ag::Error for bad
  // options or for a word with a problem() (the first such word's).
  std::vector<Pronunciation> pronounce(const std::vector<std::string>& words,
                                       const PronounceOptions& options = {});

  Translator& translator() { return translator_; }
  const Translator& translator() const { return translator_; }

 private:
  Translator translator_;
  const Task* task_ = nullptr;                               // the model's, in the task table
  std::map<std::string, std::vector<std::string>> lexicon_;  // word -> pronunciations
};

}  // namespace ag::translate
