// Scene "translate": d2l's seq2seq with attention (section "Bahdanau
// Attention") training live on a generated task of translate/ (dates,
// reverse, sort): two models side by side, from the same data, seed and
// minibatches, differing only in their scoring function (any two of nn's
// table; additive and dot product by default). On the desktop a worker thread trains
// them (training_session.h, Stepping::Background) and the frames only draw.
// On screen: both models' losses and held-out exact match on one plot, and
// for a chosen held-out input, or for text the learner types, each model's
// answer and alignment (rows: the output characters, columns: the source
// characters).
//
// Declared in a header so that the null-backend test can call what the
// controls call. The trainer is translate_trainer.cpp, the scene
// scene_translate.cpp.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "attograd/translate/train.h"
#include "scene.h"
#include "scoring_choice.h"
#include "task_choice.h"
#include "training_session.h"

namespace ag::viewer {

// The two models and their training, as a Trainer of the session. Each
// record holds, per model (by its scoring function's name, e.g. "additive",
// "dot"): loss [1], accuracy [1] (exact
// match on the held-out split, measured every kEvalEvery steps and carried
// in between), and for the kShown held-out inputs the greedy outputs
// (output [kShown, tgt_steps], target indices, -1 past the end), how many
// alignment rows each has (rows [kShown]) and the alignments (alignment
// [kShown, tgt_steps, src_steps], zero outside rows x source length); the
// same for the typed text (typed.output [tgt_steps], typed.rows [1],
// typed.alignment [tgt_steps, src_steps]; no rows while there is none).
// Once for both: the typed text itself (typed.source [src_steps], source
// indices with <eos> and <pad>; typed.length [1], its characters and <eos>,
// 0 for none), so that every record says which text it translated.

// A model's greedy answer to one typed text as a record holds it
// (translate_trainer.cpp): output [tgt] target indices (-1 past the end),
// rows [1] (the alignment's rows; 0 for "", which has none), alignment
// [tgt, src] (0 outside its rows and columns). Both trainers that answer a
// typed text use it (translate, pronounce).
struct PredictedFields {
  std::vector<double> output, rows, alignment;
};
PredictedFields predict_typed(translate::Translator& translator, const std::string& typed,
                              int64_t tgt, int64_t src);

class TranslateTrainer : public Trainer {
 public:
  static constexpr int64_t kShown = 8;       // held-out inputs the slider chooses from
  static constexpr int64_t kEvalEvery = 50;  // steps between held-out measurements
  static constexpr int64_t kHeldout = 300;   // held-out inputs measured
  static constexpr int64_t kTrain = 20000;   // training examples
  static constexpr int64_t kBatchSize = 64;

  explicit TranslateTrainer(const std::string& task);
  // A new task (a name of live_task_names()): new data and models (the
  // session must be reset after).
  void set_task(const std::string& task);
  const std::string& task() const { return task_; }
  // New scoring functions: new models (the session must be reset after).
  void set_models(const ScoringPair& models);
  const std::string& model(size_t m) const { return models_.at(m); }
  const translate::Dataset& data_set() const { return *data_; }
  translate::Translator& translator(size_t model) { return translators_[model]; }
  // The text whose translation every record holds from now on ("" for
  // none). REQUIRES: valid for the task (see check_text).
  void set_typed(const std::string& text) { typed_ = text; }
  // "" when `text` can be translated, else why not (an unknown character,
  // too long, empty), as encode_sources words it.
  std::string check_text(const std::string& text) const;
  // Writes PREFIX-NAME.npz per model, e.g. PREFIX-additive.npz and
  // PREFIX-dot.npz (translate::save_translator).
  void save(const std::string& prefix) const;

  const char* title() const override { return "Translate: two scoring functions"; }
  std::vector<RecordField> fields() const override;
  std::vector<Series> series() const override;
  // Twice d2l's 0.005: on dates it reaches 95% held-out in ~250 steps
  // instead of ~350 (attograd-translate --eval-every 50), so a learner sees
  // the alignment form within a minute on a slow machine.
  double default_learning_rate() const override { return 0.01; }
  std::map<std::string, Tensor> start(double lr) override;
  std::map<std::string, Tensor> step() override;
  void set_learning_rate(double lr) override;
  std::map<std::string, Tensor> data() const override;
  // The newest step's record again, for the text typed since.
  std::map<std::string, Tensor> current_record() override { return record(); }

 private:
  std::map<std::string, Tensor> record();

  std::string task_;
  ScoringPair models_ = kDefaultScoringPair;
  std::unique_ptr<translate::Dataset> data_;
  translate::Translator translators_[2];
  std::unique_ptr<translate::Seq2SeqTrainer> trainers_[2];
  double loss_[2] = {0, 0};
  double accuracy_[2] = {0, 0};
  int64_t steps_ = 0;
  std::string typed_;
};

class TranslateScene : public Scene {
 public:
  // Stepping::Background on the desktop (the viewer's choice), InFrame in
  // tests that count steps by frames.
  explicit TranslateScene(Stepping stepping = Stepping::Background);
  const char* name() const override { return "translate"; }
  const char* label() const override { return "Translate"; }
  void draw() override;
  // The shown inputs (src, src_valid_len), then the shown step's record as
  // "shown.*", its number as "shown.step" and the example shown
  // ("shown.example": 0 .. kShown - 1, or -1 for the typed text).
  std::map<std::string, Tensor> inputs() const override;
  // task, scoring, worker, paused, steps_per_frame (without a worker),
  // max_steps_per_second (with one), lr, seed, example, text, save_prefix.
  std::vector<Knob> knobs() override;
  // loss_first, loss_last (mean of the two models), accuracy (the first
  // model's held-out exact match at the newest step) and, once it reached
  // 0.95, frames_to_accuracy_95 and steps_to_accuracy_95.
  void print_stats(std::ostream& out) const override;
  // Pauses training and waits for the step under way: the last frame, its
  // inputs and the saved models (save_prefix) are all the newest step.
  void before_last_frame() override;

  void set_task(const std::string& task);
  // The two scoring functions (new models, the session starts over).
  void set_models(const ScoringPair& models);
  // Background: a worker trains; InFrame: the frames do (as in the browser).
  // Starts the session over at step 0.
  void set_stepping(Stepping stepping);
  TranslateTrainer& trainer() { return trainer_; }
  TrainingSession& session() { return *session_; }
  int example() const { return example_; }
  void set_example(int example);
  // Shows the translation of `text` from now on (what the text box calls at
  // each edit). Text the models cannot take is not an error: typed_error()
  // says why, and the maps keep the last text they could take.
  void set_text(const std::string& text);
  bool shows_typed_text() const { return show_typed_; }
  const std::string& typed_error() const { return typed_error_; }
  // Saves both models now (after the step under way), as before_last_frame.
  void save(const std::string& prefix);

 private:
  // A session for the trainer as it is now, with the scene's speed settings.
  void start_session();
  // Stops the session, changes the trainer (new data or models), and starts
  // a new session at step 0 that keeps the pause and the speed limit.
  void change_trainer(const std::function<void()>& change);
  void draw_controls();
  void draw_input_choice();
  void draw_model(size_t model, const std::map<std::string, Tensor>& record, ImVec2 size) const;
  void note_progress(const std::map<std::string, Tensor>& record);

  TranslateTrainer trainer_;
  Stepping stepping_;
  std::unique_ptr<TrainingSession> session_;
  int example_ = 0;
  // The text box: what is in it, whether it is shown, the text the maps
  // show (the last one that could be translated) and why the box's text
  // cannot be.
  char text_box_[64] = "";
  bool show_typed_ = false;
  std::string typed_, typed_error_;
  std::string save_prefix_;  // save_prefix knob: saved before the last frame
  // When the first model first reached 95% held-out (--stats).
  int64_t frames_ = 0, frame_at_95_ = -1, step_at_95_ = -1;
};

}  // namespace ag::viewer
