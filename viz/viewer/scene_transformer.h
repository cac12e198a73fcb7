// Scene "transformer": d2l's Transformer (section "The Transformer
// Architecture"; nn/transformer.h) training live on a generated task of
// translate/ (dates, reverse, sort), a few steps a frame. On screen: the
// loss and held-out exact match since step 0; for a chosen held-out input
// the model's answer, and its attention maps per block and head: the
// encoder's self-attention, the decoder's self-attention (the look-ahead
// mask's cells hatched) and the cross-attention, tokens on the rows and
// columns. The ablation switch trains a twin without the look-ahead mask
// beside it (same seed, data and minibatches): its training loss falls
// faster, its held-out answers fail.
//
// Declared in a header so that the null-backend test can call what the
// controls call.
#pragma once

#include <memory>

#include "scene.h"
#include "training_session.h"
#include "transformer_trainer.h"

namespace ag::viewer {

class TransformerScene : public Scene {
 public:
  // Which attention the maps show.
  enum class Maps { EncoderSelf, DecoderSelf, Cross };
  static constexpr const char* kMapIds[3] = {"enc_self", "dec_self", "cross"};

  // Stepping::Background on the desktop (the viewer's choice: a worker
  // trains, the frames only draw), InFrame in the browser and the
  // null-backend tests.
  explicit TransformerScene(Stepping stepping = Stepping::Background);
  const char* name() const override { return "transformer"; }
  const char* label() const override { return "Transformer"; }
  void draw() override;
  // The shown inputs (src, src_valid_len); the shown step's record as
  // "shown.*", its number as "shown.step", the example as "shown.example";
  // and each model's state dict as "masked.*" (and "unmasked.*"): the
  // parameters of the newest step, which are the shown step's while
  // training is live, so that a test can load them into the program
  // (attograd-translate --load) and recompute the maps.
  std::map<std::string, Tensor> inputs() const override;
  // task, ablation, worker, maps, paused, steps_per_frame (without a worker),
  // max_steps_per_second (with one), lr, seed, example, save_prefix.
  std::vector<Knob> knobs() override;
  // Pauses the worker and waits for it, so that the last frame's
  // screenshot, layout, inputs and saved models (save_prefix) are all the
  // newest step.
  void before_last_frame() override;
  // loss_first, loss_last (mean over the models), accuracy (the masked
  // model's held-out exact match at the shown step), and with the ablation
  // masked_loss, unmasked_loss and unmasked_accuracy; steps, and the frames
  // and steps it took the masked model to reach 95% held-out.
  void print_stats(std::ostream& out) const override;

  void configure(const std::string& task, bool ablation);
  // Background (a worker thread trains) or InFrame (each frame trains, as
  // in the browser); starts over at step 0.
  void set_stepping(Stepping stepping);
  TransformerTrainer& trainer() { return trainer_; }
  TrainingSession& session() { return *session_; }
  int example() const { return example_; }
  void set_example(int example);
  Maps maps() const { return maps_; }
  void set_maps(Maps maps) { maps_ = maps; }

 private:
  void start_session();
  // A new trainer and session at step 0 when anything changed, with the
  // learner's settings (paused, rate, lr, seed) kept.
  void restart(const std::string& task, bool ablation, Stepping stepping);
  void draw_controls();
  void draw_answers(const std::map<std::string, Tensor>& record) const;
  void draw_maps(const std::map<std::string, Tensor>& record) const;
  // The shown example's output tokens of model m, "<eos>" last when it was
  // emitted (as many as the model's decoder steps).
  std::vector<std::string> output_tokens(const std::map<std::string, Tensor>& record,
                                         size_t m) const;

  TransformerTrainer trainer_;
  Stepping stepping_;
  std::unique_ptr<TrainingSession> session_;
  std::string save_prefix_;
  int64_t frames_ = 0, frame_at_95_ = -1, step_at_95_ = -1;
  int example_ = 0;
  Maps maps_ = Maps::DecoderSelf;
};

}  // namespace ag::viewer
