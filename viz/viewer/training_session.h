// One training run on screen, the piece every training scene shares: a
// Trainer (what trains, and what each step shows) stepped a few times a
// frame, the last kHistory steps kept to scrub back through, the loss (and
// accuracy) curves since step 0, and the controls: play/pause, step, reset,
// steps per frame, learning rate, seed and the history slider.
//
//   RetrievalTask task;                 // a Trainer
//   TrainingSession session(task);      // step 0
//   session.frame();                    // once a frame: steps_per_frame() steps
//   session.draw_controls();            // in the scene's controls pane
//   draw my maps from session.shown_record();
//   session.draw_curves(size);          // the curves, a line at the step shown
//
// A Trainer's step records are lists of named tensors of fixed shapes (maps,
// losses, parameters); they live in one block allocated up front, so memory
// does not grow with training. A scene that trains two models side by side
// on the same data (the training scene's retrieval task) is one Trainer with
// a loss series per model.
#pragma once

#include <imgui.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace ag::viewer {

// A field of every step's record: its name and its fixed shape.
struct RecordField {
  std::string name;
  Shape shape;
};

// What trains. The session calls manual_seed before start(), so a trainer
// that draws its data and parameters from the global generator is
// reproducible from the seed.
class Trainer {
 public:
  // A [1] field of every record, drawn as a line since step 0: a loss on the
  // plot's left axis (log scale), or a fraction such as held-out accuracy on
  // its right axis (0 to 1).
  enum class Axis { Loss, Fraction };
  struct Series {
    std::string field;
    std::string label;  // in the legend
    ImU32 color;
    Axis axis = Axis::Loss;
  };

  virtual ~Trainer() = default;
  // Names the trainer in error messages ("Retrieval: additive vs dot product").
  virtual const char* title() const = 0;
  // The fields of each record (the history holds exactly these).
  virtual std::vector<RecordField> fields() const = 0;
  virtual std::vector<Series> series() const = 0;
  virtual double default_learning_rate() const = 0;
  // Step 0: data and initial parameters, fresh optimizers at `lr`; returns
  // step 0's record.
  virtual std::map<std::string, Tensor> start(double lr) = 0;
  // One training step; returns the record of the step it leads to.
  virtual std::map<std::string, Tensor> step() = 0;
  // From the next step on.
  virtual void set_learning_rate(double lr) = 0;
  // The fixed data (inputs, targets, lengths) by name, for --dump-inputs.
  virtual std::map<std::string, Tensor> data() const = 0;
};

// The last `capacity` records, in memory allocated once: step s lives in slot
// s % capacity, so the newest overwrites the oldest. Stored as float32.
class StepHistory {
 public:
  StepHistory(std::vector<RecordField> fields, int64_t capacity);
  void clear() {
    size_ = 0;
    newest_ = -1;
  }
  // The record of step newest() + 1 (or of step 0 after clear()); throws
  // ag::Error when a field is missing or has another shape.
  void push(const std::map<std::string, Tensor>& record);
  // The record of a step the history holds, as float32 tensors.
  std::map<std::string, Tensor> at(int64_t step) const;
  int64_t newest() const { return newest_; }
  int64_t oldest() const { return newest_ - size_ + 1; }

 private:
  std::vector<RecordField> fields_;
  std::vector<int64_t> offsets_;
  int64_t record_size_ = 0, capacity_ = 0;
  std::vector<float> data_;
  int64_t newest_ = -1, size_ = 0;
};

// A value per step since step 0, in bounded memory: at most kMaxPoints
// points; when full, neighbours merge (their mean) and each point stands
// for twice as many steps, so a long run still fits.
class StepCurve {
 public:
  static constexpr size_t kMaxPoints = 256;
  StepCurve() { points_.reserve(kMaxPoints); }
  void clear();
  void add(double value);
  const std::vector<float>& points() const { return points_; }
  int64_t steps_per_point() const { return stride_; }

 private:
  std::vector<float> points_;
  int64_t stride_ = 1;
  double pending_sum_ = 0;
  int64_t pending_ = 0;
};

class TrainingSession {
 public:
  static constexpr int64_t kHistory = 300;  // steps the history slider reaches back

  // Starts `trainer` at step 0 with seed 0 and its default learning rate.
  // REQUIRES: `trainer` outlives the session.
  explicit TrainingSession(Trainer& trainer, int64_t history = kHistory);
  Trainer& trainer() const { return trainer_; }

  // ---- the step loop --------------------------------------------------------------
  // Once a frame: steps_per_frame() steps, unless paused or stopped by an
  // error (an ag::Error from the trainer pauses and is shown by error()).
  void frame();
  bool paused() const { return paused_; }
  // Play goes live again: the shown record follows the newest step.
  void set_paused(bool paused);
  // One step forward: through the history while it shows an older step,
  // else one more training step. Pauses.
  void single_step();
  // Step 0 again: the same seed, data and initial parameters.
  void reset();
  // Shows `step` of the history (clamped to what it holds); an older step
  // than the newest pauses training.
  void show_step(int64_t step);
  int64_t steps() const { return history_.newest(); }  // training steps taken
  int64_t shown_step() const { return shown_ < 0 ? steps() : shown_; }
  int64_t oldest_step() const { return history_.oldest(); }
  std::map<std::string, Tensor> shown_record() const { return history_.at(shown_step()); }
  int steps_per_frame() const { return steps_per_frame_; }
  void set_steps_per_frame(int steps) { steps_per_frame_ = steps; }
  // A new rate takes effect from the next step (the trainer's optimizers may
  // start over: Adam's rate is fixed at construction).
  void set_learning_rate(double lr);
  double learning_rate() const { return lr_; }
  int seed() const { return seed_; }
  void set_seed(int seed);  // and reset
  const std::string& error() const { return error_; }

  // Mean over the loss series of the loss at step 0 and at the newest step.
  double first_loss() const { return first_loss_; }
  double last_loss() const { return last_loss_; }
  // "loss_first X", "loss_last X" and, when the trainer has fraction series,
  // "accuracy X" (their mean at the newest step): the lines --stats prints.
  void print_stats(std::ostream& out) const;

  // ---- drawing ----------------------------------------------------------------------
  // Play/Pause, Step, Reset, steps/frame, learning rate and seed; then the
  // history slider and how many steps it holds.
  void draw_controls();
  // The series since step 0, `size` big: losses on a log axis, fractions on
  // a right axis from 0 to 1; a vertical line marks the step shown.
  void draw_curves(ImVec2 size) const;

 private:
  void advance();  // one training step, recorded; throws ag::Error
  void record(const std::map<std::string, Tensor>& record);

  Trainer& trainer_;
  std::vector<Trainer::Series> series_;
  StepHistory history_;
  std::vector<StepCurve> curves_;  // one per series
  double lr_;
  int seed_ = 0;
  int steps_per_frame_ = 1;
  bool paused_ = false;
  int64_t shown_ = -1;  // the step shown; -1: the newest (live)
  std::string error_;
  double first_loss_ = 0, last_loss_ = 0, last_fraction_ = 0;
  float lr_slider_ = 0;  // the learning-rate slider's value while it is dragged
  bool lr_dragged_ = false;
};

}  // namespace ag::viewer
