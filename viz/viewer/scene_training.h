// Scene "training": small tasks that train while the viewer draws, one Adam
// step (or a few) per frame, with the attention weights, dL/dweights and
// dL/dscores of every step on screen and the loss curve beside them.
//
//   retrieval        (first) a query must find the key it copies among
//                    padded keys: additive and dot-product attention learn
//                    it side by side, from the same data, their losses on
//                    one plot.
//   Nadaraya-Watson  d2l's kernel regression with a learned kernel width:
//                    training inputs are the keys, test inputs the queries;
//                    the weight map sharpens as the width is learned.
//
// The last kHistory steps are kept (a ring buffer allocated up front, so
// memory does not grow with training) and a slider scrubs back through them.
//
// Declared in a header (unlike most scenes) so that the null-backend test can
// press its buttons through the same functions the buttons call.
#pragma once

#include <array>
#include <memory>

#include "scene.h"

namespace ag::viewer {

class TrainingScene : public Scene {
 public:
  enum class Task { Retrieval, NadarayaWatson };
  static constexpr int64_t kHistory = 300;  // steps the history slider reaches back

  TrainingScene();
  ~TrainingScene() override;
  const char* name() const override { return "training"; }
  const char* label() const override { return "Training"; }
  void draw() override;
  // The shown task's data, then what the shown step used and computed: its
  // parameters under their module names ("additive.W_q.weight", "w") and,
  // as "shown.*", its loss, maps and parameter gradients, and its number.
  std::map<std::string, Tensor> inputs() const override;
  // loss_first (step 0) and loss_last (the newest step) of the shown task;
  // for retrieval, the mean of the additive and the dot-product model's loss.
  void print_stats(std::ostream& out) const override;

  // ---- the controls: the buttons and sliders call these ------------------------
  Task task() const { return task_; }
  void set_task(Task task);
  bool paused() const { return paused_; }
  // Play goes live again: the maps follow the newest step.
  void set_paused(bool paused);
  // One step forward: through the history while it shows an older step, else
  // one more training step. Pauses.
  void single_step();
  // The shown task back to step 0: the same seed, data and initial parameters.
  void reset();
  // Shows `step` of the history (clamped to what it holds); an older step
  // than the newest pauses training.
  void show_step(int64_t step);
  int64_t steps() const;              // training steps the shown task has taken
  int64_t shown_step() const;         // the step the maps show
  int64_t oldest_step() const;        // the oldest step the history holds
  void set_learning_rate(double lr);  // Adam's, for the shown task
  double learning_rate() const;
  int steps_per_frame = 1;

  // One task's data, models, Adam and history; defined, with the tasks that
  // derive from it, in scene_training.cpp.
  class Trainer;

 private:
  Trainer& current() const { return *trainers_[static_cast<size_t>(task_)]; }
  void draw_controls();

  std::array<std::unique_ptr<Trainer>, 2> trainers_;
  Task task_ = Task::Retrieval;
  bool paused_ = false;
  int64_t shown_ = -1;  // the step shown; -1: the newest (live)
  int seed_ = 0;
  float lr_slider_ = 0;  // the learning-rate slider's value while it is dragged
  bool lr_dragged_ = false;
  std::string error_;
};

}  // namespace ag::viewer
