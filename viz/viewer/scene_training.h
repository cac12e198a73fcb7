// Scene "training": small tasks that train while the viewer draws, one Adam
// step (or a few) per frame, with the attention weights, dL/dweights and
// dL/dscores of every step on screen and the loss curve beside them.
//
//   retrieval        (first) a query must find the key it copies among
//                    padded keys: two scoring functions of nn's table
//                    (additive and general_scaled by default; the knob
//                    `scoring` or the combos choose any two) learn it side
//                    by side, from the same data, their losses on one plot.
//   Nadaraya-Watson  d2l's kernel regression with a learned kernel width:
//                    training inputs are the keys, test inputs the queries;
//                    the weight map sharpens as the width is learned.
//
// Each task has its own training session (training_session.h: the step
// loop, the history of the last kHistory steps a slider scrubs back
// through, the loss curves, the controls); the scene shows one of them.
//
// Declared in a header (unlike most scenes) so that the null-backend test can
// press its buttons through the same functions the buttons call.
#pragma once

#include <array>
#include <memory>

#include "scene.h"
#include "training_tasks.h"

namespace ag::viewer {

class TrainingScene : public Scene {
 public:
  enum class Task { Retrieval, NadarayaWatson };
  static constexpr int64_t kHistory = TrainingSession::kHistory;

  TrainingScene();
  const char* name() const override { return "training"; }
  const char* label() const override { return "Training"; }
  void draw() override;
  // The shown task's data, then what the shown step used and computed: its
  // parameters under their functions' names ("additive.W_q.weight", "w")
  // and, as "shown.*", its loss, maps and parameter gradients, and its number.
  std::map<std::string, Tensor> inputs() const override;
  // task, scoring, paused, steps_per_frame, lr, seed.
  std::vector<Knob> knobs() override;
  // loss_first (step 0) and loss_last (the newest step) of the shown task;
  // for retrieval, the mean of its two models' losses, then each model's
  // (loss_first_NAME, loss_last_NAME).
  void print_stats(std::ostream& out) const override;

  // ---- the controls: the buttons and sliders call these ------------------------
  // The other task, as it was left (each task keeps its own progress); the
  // maps show its newest step, and training stays paused or running.
  void set_task(Task task);
  Task task() const { return task_; }
  // The shown task's session: play, pause, step, reset, history, rates.
  TrainingSession& session() { return *sessions_[static_cast<size_t>(task_)]; }
  const TrainingSession& session() const { return *sessions_[static_cast<size_t>(task_)]; }
  // For every task.
  void set_steps_per_frame(int steps);
  // The retrieval task's two scoring functions: new models, its training
  // starts over (paused or running as it was, at its seed and learning rate).
  void set_retrieval_pair(const ScoringPair& pair);
  const ScoringPair& retrieval_pair() const { return retrieval_pair_; }

 private:
  TrainingTask& current_task() const { return *tasks_[static_cast<size_t>(task_)]; }
  void draw_controls();

  ScoringPair retrieval_pair_ = kRetrievalDefaultPair;
  std::array<std::unique_ptr<TrainingTask>, 2> tasks_;
  std::array<std::unique_ptr<TrainingSession>, 2> sessions_;
  Task task_ = Task::Retrieval;
};

}  // namespace ag::viewer
