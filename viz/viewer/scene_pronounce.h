// Scene "pronounce": letters to sounds on CMUdict (translate/'s g2p task).
//
//   ask    the shipped models (translate::kShippedG2pModels) pronounce the word the
//          learner types, side by side: each one's ARPAbet and IPA, which
//          letters each sound looked at (the alignment) and the beam's best
//          K; the dictionary's own pronunciations when the word is in it,
//          and where the answers differ from it and from each other. The
//          models knob names other files; "a.npz+b.npz" is one column, an
//          ensemble (translate/ensemble.h).
//   train  two small models of two scoring functions (additive and dot
//          product by default) learn the dictionary live from the same data,
//          seed and minibatches (as the translate scene does for dates): loss
//          and dev WER on one plot, both models' answer and alignment for the
//          typed word.
//
// Declared in a header so that the null-backend test can call what the
// controls call. The scene is scene_pronounce.cpp (ask mode and the knobs),
// scene_pronounce_train.cpp (train mode's panels), pronounce_trainer.cpp
// (train mode's Trainer) and pronounce_words.cpp (the word's checks, the
// dictionary, IPA).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "attograd/translate/predict.h"
#include "attograd/translate/pronouncer.h"
#include "attograd/translate/train.h"
#include "scene.h"
#include "scene_translate.h"  // the two models' colours
#include "training_session.h"

namespace ag::viewer {

// ---- words, the dictionary and IPA (pronounce_words.cpp) ----------------------------------
// `relative` as found from the working directory, else in the source tree
// this viewer was built from; `relative` itself when neither has it (the
// loader's message then names it).
std::string find_source_file(const std::string& relative);

// The word as the models read it (lowercase), or an ag::Error saying what
// is wrong with it: empty, a character other than a letter or an
// apostrophe, longer than `max_letters`.
std::string checked_word(const std::string& typed, int64_t max_letters);

// "N AY F" -> "naɪf": a fixed table of the 39 ARPAbet phonemes CMUdict uses
// (no stress); an unknown phoneme is kept as it is, in brackets.
std::string arpabet_to_ipa(const std::vector<std::string>& phonemes);

// Which tokens of `a` and of `b` a fewest-edits alignment leaves unmatched
// (substituted, inserted or deleted): true where they differ.
struct PhonemeDiff {
  std::vector<bool> a_differs, b_differs;
};
PhonemeDiff diff_phonemes(const std::vector<std::string>& a, const std::vector<std::string>& b);

// CMUdict by word: its pronunciations ("N AY F"), and the test split's words
// in the file's order (the "random test word" draws from them).
struct PronouncingDictionary {
  std::unordered_map<std::string, std::vector<std::string>> words;
  std::vector<std::string> test_words;
};
PronouncingDictionary load_pronouncing_dictionary(const std::string& path);
const char* split_name(translate::Split split);

// The alignment of one answer: letters (and <eos>) across, the output
// phonemes (and <eos>) down, `alignment` [phonemes, letters]; with its colour
// bar, inside `size`.
void draw_pronounce_alignment(const std::string& id, const std::string& title,
                              const std::vector<std::string>& letters,
                              const std::vector<std::string>& phonemes, const Tensor& alignment,
                              ImVec2 size);

// ---- train mode's trainer (pronounce_trainer.cpp) -------------------------------------------
// Two small unidirectional-encoder models (d2l's encoder, whose keys have
// the queries' width, as dot needs), of two scoring functions, trained on the
// dictionary's training split (words of up to kMaxLetters). Each record holds
// per model (by its scoring function, e.g. "additive", "dot"): loss [1], wer [1] (on kDevSample dev
// words, every kEvalEvery steps and carried in between), and the typed word's greedy answer
// (typed.output [tgt_steps], -1 past the end; typed.rows [1]; typed.alignment [tgt_steps,
// src_steps]); once: the word itself (typed.letters [src_steps], its bytes, 0 past the end) and
// typed.length [1] (its letters and <eos>, 0 for none).
class PronounceTrainer : public Trainer {
 public:
  static constexpr int64_t kDevSample = 300;
  static constexpr int64_t kEvalEvery = 50;
  static constexpr int64_t kBatchSize = 64;
  static constexpr int64_t kMaxLetters = 10;  // longer words are left out

  // Reads the dictionary (ag::Error when it cannot).
  explicit PronounceTrainer(const std::string& dict_path);
  const translate::Dataset& data_set() const { return *data_; }
  translate::Translator& translator(size_t model) { return translators_[model]; }
  // New scoring functions: new models (the session must be reset after).
  void set_models(const ScoringPair& models);
  const std::string& model(size_t m) const { return models_.at(m); }
  // The word every record answers from now on ("" for none); REQUIRES:
  // checked_word accepted it for data_set().src_steps() - 1 letters.
  void set_typed(const std::string& word) { typed_ = word; }
  const std::vector<translate::Example>& dev_sample() const { return dev_sample_; }
  // The first model's dev WER at step 0 of the newest start (written by
  // start(), which may run on the worker; read by the scene's --stats).
  double first_wer() const { return first_wer_.load(); }

  const char* title() const override { return "Pronounce: two scoring functions"; }
  std::vector<RecordField> fields() const override;
  std::vector<Series> series() const override;
  const char* fraction_name() const override { return "dev word error rate"; }
  // On a quiet 2-core machine, 5,000 frames at 1600x1000 (about 10,000
  // steps): the additive model's dev WER 0.67 at 0.005, 0.70 at 0.01, 0.81
  // at 0.02.
  double default_learning_rate() const override { return 0.005; }
  std::map<std::string, Tensor> start(double lr) override;
  std::map<std::string, Tensor> step() override;
  void set_learning_rate(double lr) override;
  std::map<std::string, Tensor> data() const override { return {}; }
  std::map<std::string, Tensor> current_record() override { return record(); }

 private:
  std::map<std::string, Tensor> record();

  std::unique_ptr<translate::Dataset> data_;
  std::vector<translate::Example> dev_sample_;
  ScoringPair models_ = kDefaultScoringPair;
  translate::Translator translators_[2];
  std::unique_ptr<translate::Seq2SeqTrainer> trainers_[2];
  double loss_[2] = {0, 0}, wer_[2] = {1, 1};
  std::atomic<double> first_wer_{1.0};
  int64_t steps_ = 0;
  std::string typed_;
};

// ---- the scene --------------------------------------------------------------------------------
// One model of ask mode: its file, its name, and its answers to the shown
// word, as the library's Pronouncer gives them (attograd-translate's).
struct AskedModel {
  std::string path;        // a file, or files joined by '+' (an ensemble)
  std::string file_names;  // the file's name, or the files' joined by " + " (the panel's)
  // Its scoring function ("additive", "general", ...) or "transformer":
  // the column's title and --stats' pronounce_output_NAME.
  std::string name;
  std::optional<translate::Pronouncer> pronouncer;  // loaded once; empty if it did not load
  std::string load_error;                           // why the file did not load ("" when it did)
  bool has_answer = false;
  translate::PronunciationVariant answer;  // greedy search's
  // The beam's K candidates, most probable first, each with its posterior
  // over the K (--nbest K --beam K); empty with K = 1 and while typing.
  std::vector<translate::PronunciationVariant> beam;
  int shown_candidate = -1;  // which beam candidate's alignment is drawn (-1: greedy)
};

class PronounceScene : public Scene {
 public:
  enum class Mode { Ask, Train };
  explicit PronounceScene(Stepping stepping = Stepping::Background);
  ~PronounceScene() override;
  const char* name() const override { return "pronounce"; }
  const char* label() const override { return "Pronounce"; }
  void draw() override;
  // Ask: per model NAME, the word's NAME.src [1, src_steps] and
  // NAME.src_valid_len [1], the greedy NAME.output [phonemes] (target
  // indices) and NAME.alignment [rows, letters + 1].
  // Train: the shown step's record as "shown.*".
  std::map<std::string, Tensor> inputs() const override;
  // mode, word, beam, models (ask mode's files), scoring (train mode's two
  // scoring functions), dict; in train mode also the session's.
  std::vector<Knob> knobs() override;
  // pronounce_models (ask mode: the names, comma-separated),
  // pronounce_output_NAME for each, pronounce_output (the first model's);
  // train mode: dev_wer_first, dev_wer_last (the first model), loss_first,
  // loss_last, steps.
  void print_stats(std::ostream& out) const override;
  void before_last_frame() override;

  Mode mode() const { return mode_; }
  void set_mode(Mode mode);
  // The knob's and the gallery's word: the field keeps `text`; the answers
  // are recomputed at once and the beam's candidates in the next frame, or
  // word_error() says why they cannot be.
  void set_word(const std::string& text);
  // What the text field calls at each keystroke: set_word, but the beam's
  // candidates wait for the first frame without one (beam_pending()).
  void type_word(const std::string& text);
  bool beam_pending() const { return beam_pending_; }
  void set_beam(int beam);
  // Ask mode's model files (the shipped ones by default).
  void set_model_paths(const std::vector<std::string>& paths);
  // Train mode's two scoring functions (new models, training starts over).
  void set_train_models(const ScoringPair& models);
  void set_dict_path(const std::string& path);
  // Loads the models and the dictionary if not yet done (the first frame
  // does): their errors are each model's load_error, load_error() when none
  // loaded, and dict_error().
  void load();
  const char* field() const { return field_; }       // what the text field holds
  const std::string& word() const { return word_; }  // the word shown (the last good one)
  const std::string& word_error() const { return word_error_; }
  const std::string& load_error() const { return load_error_; }
  const std::string& dict_error() const { return dict_error_; }
  const std::vector<AskedModel>& models() const { return models_; }
  // Ask mode's answer of model `model` for the shown word (greedy), or null.
  const translate::PronunciationVariant* answer(size_t model = 0) const;
  const std::vector<translate::PronunciationVariant>& beam(size_t model = 0) const {
    return models_.at(model).beam;
  }
  translate::Pronouncer& pronouncer(size_t model = 0) { return *models_.at(model).pronouncer; }
  void set_shown_candidate(size_t model, int candidate) {
    models_.at(model).shown_candidate = candidate;
  }
  // A "random test word" press; the running count of those each model got right.
  void ask_random_test_word();
  int random_asked() const { return random_asked_; }
  int random_right(size_t model = 0) const { return random_right_.at(model); }
  PronounceTrainer* trainer() { return trainer_.get(); }
  TrainingSession* session() { return session_.get(); }

 private:
  // Ask mode (scene_pronounce.cpp).
  void answer_word();
  void search_beam();
  void draw_mode_choice();
  void draw_controls();
  void draw_word_field();
  void draw_gallery();
  void draw_answers();
  void draw_dictionary();
  void draw_model(AskedModel& model, size_t index, ImVec2 size);
  void draw_candidates(AskedModel& model, ImVec2 size);
  // Train mode (scene_pronounce_train.cpp).
  void start_training();
  void draw_train_controls();
  void draw_train();
  void draw_train_model(size_t model, const std::map<std::string, Tensor>& record,
                        ImVec2 size) const;
  void post_typed_word();

  Mode mode_ = Mode::Ask;
  Stepping stepping_;
  std::vector<std::string> model_paths_;
  std::string dict_path_;
  bool loaded_ = false;
  std::vector<AskedModel> models_;  // those of model_paths_, in order
  PronouncingDictionary dict_;
  std::string load_error_, dict_error_;
  // The text field and the word it holds (as checked), and why it cannot be
  // answered; the answers are the last word's that could.
  char field_[256] = "knife";
  std::string word_, word_error_;
  int beam_ = 5;
  // A change answers greedily at once (a few milliseconds a word and model);
  // the beam's search runs to the longest output and costs more, so it waits
  // for the first frame without a keystroke: typing stays within a frame's
  // budget and the candidates appear as soon as it pauses.
  bool beam_pending_ = false;
  bool typed_this_frame_ = false;
  // The random test words asked so far, and how many each model got right.
  std::mt19937 random_{0};
  int random_asked_ = 0;
  std::vector<int> random_right_;
  std::vector<bool> last_random_right_;
  // Train mode: made when first shown.
  ScoringPair train_models_ = kDefaultScoringPair;
  std::unique_ptr<PronounceTrainer> trainer_;
  std::unique_ptr<TrainingSession> session_;
  std::string train_error_;
};

}  // namespace ag::viewer
