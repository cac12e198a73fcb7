// Scene "translate": d2l's seq2seq with attention (section "Bahdanau
// Attention") training live on a generated task of translate/ (dates,
// reverse, sort): an additive and a dot-product model side by side, from the
// same data, seed and minibatches, a few steps a frame. On screen: both
// models' losses and held-out exact match on one plot, and for a chosen
// held-out input each model's answer and alignment (rows: the output
// characters, columns: the source characters).
//
// Declared in a header so that the null-backend test can call what the
// controls call.
#pragma once

#include <memory>

#include "attograd/translate/train.h"
#include "scene.h"
#include "training_session.h"

namespace ag::viewer {

// The two models and their training, as a Trainer of the session. Each
// record holds, per model ("additive", "dot"): loss [1], accuracy [1] (exact
// match on the held-out split, measured every kEvalEvery steps and carried
// in between), and for the kShown held-out inputs the greedy outputs
// (output [kShown, tgt_steps], target indices, -1 past the end), how many
// alignment rows each has (rows [kShown]) and the alignments (alignment
// [kShown, tgt_steps, src_steps], zero outside rows x source length).
class TranslateTrainer : public Trainer {
 public:
  static constexpr int64_t kShown = 8;       // held-out inputs the slider chooses from
  static constexpr int64_t kEvalEvery = 50;  // steps between held-out measurements
  static constexpr int64_t kHeldout = 300;   // held-out inputs measured
  static constexpr int64_t kTrain = 20000;   // training examples
  static constexpr int64_t kBatchSize = 64;

  explicit TranslateTrainer(translate::Task task);
  // A new task: new data and models (the session must be reset after).
  void set_task(translate::Task task);
  translate::Task task() const { return task_; }
  const translate::Dataset& data_set() const { return *data_; }
  translate::Translator& translator(size_t model) { return translators_[model]; }

  const char* title() const override { return "Translate: additive vs dot product"; }
  std::vector<RecordField> fields() const override;
  std::vector<Series> series() const override;
  double default_learning_rate() const override { return 0.005; }
  std::map<std::string, Tensor> start(double lr) override;
  std::map<std::string, Tensor> step() override;
  void set_learning_rate(double lr) override;
  std::map<std::string, Tensor> data() const override;

  static constexpr const char* kModels[2] = {"additive", "dot"};

 private:
  std::map<std::string, Tensor> record(const double (&loss)[2]);

  translate::Task task_;
  std::unique_ptr<translate::Dataset> data_;
  translate::Translator translators_[2];
  std::unique_ptr<translate::Seq2SeqTrainer> trainers_[2];
  double accuracy_[2] = {0, 0};
  int64_t steps_ = 0;
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
  // "shown.*" and its number as "shown.step".
  std::map<std::string, Tensor> inputs() const override;
  // task, paused, steps_per_frame (without a worker), max_steps_per_second
  // (with one), lr, seed, example.
  std::vector<Knob> knobs() override;
  // loss_first, loss_last (mean of the two models) and accuracy (the
  // additive model's held-out exact match at the newest step).
  void print_stats(std::ostream& out) const override;
  // Pauses training and waits for the step under way: the last frame, its
  // inputs and the saved models are all the newest step.
  void before_last_frame() override;

  void set_task(translate::Task task);
  TranslateTrainer& trainer() { return trainer_; }
  TrainingSession& session() { return *session_; }
  int example() const { return example_; }
  void set_example(int example);

 private:
  void draw_controls();
  void draw_model(size_t model, const std::map<std::string, Tensor>& record, ImVec2 size) const;

  // A session for the trainer as it is now, with the scene's speed settings.
  void start_session();

  TranslateTrainer trainer_;
  Stepping stepping_;
  std::unique_ptr<TrainingSession> session_;
  int example_ = 0;
};

}  // namespace ag::viewer
