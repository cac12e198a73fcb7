// One training run on screen, the piece every training scene shares: a
// Trainer (what trains, and what each step shows) stepped while the scene is
// drawn, the last kHistory steps kept to scrub back through, the loss (and
// accuracy) curves since step 0, and the controls: play/pause, step, reset,
// speed, learning rate, seed and the history slider.
//
//   RetrievalTask task;                 // a Trainer
//   TrainingSession session(task);      // step 0
//   session.frame();                    // once a frame: steps_per_frame() steps
//   session.draw_controls();            // in the scene's controls pane
//   draw my maps from session.shown_record();
//   session.draw_curves(size);          // the curves, a line at the step shown
//
// Two ways to step (Stepping):
//   InFrame     frame() takes the steps itself, on the frame's thread:
//               steps_per_frame() of them, fewer when a frame budget is set
//               and spent (at least one). Deterministic: tests count steps
//               by frames. The only way where there are no threads (the
//               browser build).
//   Background  a worker thread steps the trainer as fast as it can (or at
//               most max_steps_per_second()) while the scene is drawn;
//               frame() only tells it the scene is on screen. The frame
//               reads what the worker publishes (the history, the curves,
//               the statistics) under a short lock, and the controls become
//               commands the worker runs between two steps. A slow model
//               then costs the frame nothing.
//
// A Trainer's step records are lists of named tensors of fixed shapes (maps,
// losses, parameters); they live in one block allocated up front, so memory
// does not grow with training. A scene that trains two models side by side
// on the same data (the training scene's retrieval task) is one Trainer with
// a loss series per model.
#pragma once

#include <imgui.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "attograd/attograd.h"
#include "scene.h"

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
    std::string label;  // in the legend (when there are two or more) and errors
    ImU32 color;
    Axis axis = Axis::Loss;
  };

  virtual ~Trainer() = default;
  // Names the trainer in error messages ("Retrieval: additive vs dot product").
  virtual const char* title() const = 0;
  // The fields of each record (the history holds exactly these).
  virtual std::vector<RecordField> fields() const = 0;
  virtual std::vector<Series> series() const = 0;
  // What the Fraction series measure, in the plot's title ("accuracy",
  // "word error rate").
  virtual const char* fraction_name() const { return "accuracy"; }
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
  // The record of the step the trainer is at, made again: after a command
  // changed what a record shows (the translate scene's typed text) while
  // training is paused. Empty (the default): records never change.
  virtual std::map<std::string, Tensor> current_record() { return {}; }
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
  // Overwrites the newest record (the same checks as push). REQUIRES: newest() >= 0.
  void replace_newest(const std::map<std::string, Tensor>& record);
  // The record of step newest() + 1 (or of step 0 after clear()); throws
  // ag::Error when a field is missing or has another shape.
  void push(const std::map<std::string, Tensor>& record);
  // The record of a step the history holds, as float32 tensors.
  std::map<std::string, Tensor> at(int64_t step) const;
  int64_t newest() const { return newest_; }
  int64_t oldest() const { return newest_ - size_ + 1; }

 private:
  void check(const std::map<std::string, Tensor>& record, const char* where) const;
  void write(int64_t step, const std::map<std::string, Tensor>& record);

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

// How a session steps its trainer (see the top of this file).
enum class Stepping { InFrame, Background };

class TrainingSession {
 public:
  static constexpr int64_t kHistory = 300;  // steps the history slider reaches back

  // Starts `trainer` at step 0 with seed 0 and its default learning rate,
  // on the calling thread; with Stepping::Background it then starts the
  // worker (InFrame instead where there are no threads).
  // REQUIRES: `trainer` outlives the session; while a worker runs, only the
  // worker touches the trainer (use post() and call()).
  explicit TrainingSession(Trainer& trainer, int64_t history = kHistory,
                           Stepping stepping = Stepping::InFrame);
  // Stops the worker after the step it is in.
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;
  Trainer& trainer() const { return trainer_; }
  bool background() const { return worker_.joinable(); }

  // ---- the step loop --------------------------------------------------------------
  // Once a frame. InFrame: steps_per_frame() steps (see set_frame_budget).
  // Background: lets the worker step (it waits while no frame comes, as
  // when the scene's tab is hidden). Unless paused or stopped by an error
  // (an ag::Error from the trainer pauses and is shown by error()).
  void frame();
  bool paused() const;
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
  int64_t steps() const;  // training steps taken
  int64_t shown_step() const;
  int64_t oldest_step() const;
  // A copy of the shown step's record (the newest while live).
  std::map<std::string, Tensor> shown_record() const;
  int steps_per_frame() const { return steps_per_frame_; }
  void set_steps_per_frame(int steps) { steps_per_frame_ = steps; }
  // InFrame: a frame stops stepping once its steps took `milliseconds`
  // (it always takes one); 0, the default: no budget.
  void set_frame_budget(double milliseconds) { frame_budget_ms_ = milliseconds; }
  // Background: at most this many steps a second; 0, the default: as fast
  // as the worker can.
  int max_steps_per_second() const;
  void set_max_steps_per_second(int steps);
  // Training steps a second over the last second or so (what the learner sees).
  double measured_steps_per_second() const { return measured_rate_; }
  // A new rate takes effect from the next step (the trainer's optimizers may
  // start over: Adam's rate is fixed at construction).
  void set_learning_rate(double lr);
  double learning_rate() const;
  int seed() const;
  void set_seed(int seed);  // and reset
  std::string error() const;

  // ---- commands ---------------------------------------------------------------------
  // Runs `command` on the trainer between two steps: on the worker, or at
  // once without one. With `rerecord`, the newest record is then made again
  // (Trainer::current_record), so a paused session shows what it changed.
  // An ag::Error it throws is shown by error() and pauses.
  using Command = std::function<void(Trainer&)>;
  void post(Command command, bool rerecord = false);
  // post(), then waits until it (and every command before it) has run.
  void call(Command command, bool rerecord = false);
  // Waits until every posted command has run and no step is under way.
  void sync();

  // Mean over the loss series of the loss at step 0 and at the newest step.
  double first_loss() const;
  double last_loss() const;
  // "loss_first X", "loss_last X"; with two or more series, each loss
  // series' own ("loss_first_LABEL X", "loss_last_LABEL X": labels of one
  // word, such as the retrieval task's function names); and, when the
  // trainer has fraction series, "accuracy X" (their mean at the newest
  // step): the lines --stats prints.
  void print_stats(std::ostream& out) const;

  // ---- drawing ----------------------------------------------------------------------
  // Play/Pause, Step, Reset, the speed (steps/frame, or steps/s with a
  // worker), learning rate and seed; then the history slider and how many
  // steps it holds.
  void draw_controls();
  // The series since step 0, `size` big: losses on a log axis, fractions on
  // a right axis from 0 to 1; a vertical line marks the step shown.
  void draw_curves(ImVec2 size) const;

 private:
  using Clock = std::chrono::steady_clock;
  // What the worker is asked to do next. REQUIRES: mutex_ held.
  bool has_step_to_take(Clock::time_point now) const;
  // The worker's loop: commands first, then steps while it may.
  void work();
  // One command; returns with mutex_ held, as it was called.
  void run_command(std::unique_lock<std::mutex>& lock, Command command, bool rerecord);
  // One training step, recorded; an ag::Error pauses. Called with `lock`
  // held; the trainer runs with it released.
  void advance(std::unique_lock<std::mutex>& lock);
  // Step 0 of the trainer. Called with `lock` held, released while it runs.
  void restart(std::unique_lock<std::mutex>& lock);
  // REQUIRES: mutex_ held.
  void record(const std::map<std::string, Tensor>& record);
  int64_t shown_step_locked() const;
  void measure_rate();

  Trainer& trainer_;
  std::vector<Trainer::Series> series_;

  // Guarded by mutex_: what the worker writes and the frame reads.
  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the worker waits on it for work
  std::condition_variable idle_;  // sync() waits on it for the worker
  StepHistory history_;
  std::vector<StepCurve> curves_;  // one per series
  double lr_;
  int seed_ = 0;
  bool paused_ = false;
  std::string error_;
  double first_loss_ = 0, last_loss_ = 0, last_fraction_ = 0;
  std::vector<double> first_values_, last_values_;  // each series' at step 0 and the newest
  struct Pending {
    Command command;
    bool rerecord = false;
    bool restart = false;  // reset(): step 0 again (no command)
  };
  std::deque<Pending> commands_;
  int64_t single_steps_ = 0;  // Step presses the worker has not taken yet
  bool busy_ = false;         // the worker is running a command or a step
  bool quit_ = false;
  Clock::time_point last_frame_{};  // the worker steps only while frames come
  Clock::time_point next_step_{};   // with a rate limit: the earliest next step
  int max_steps_per_second_ = 0;
  std::thread worker_;

  // The frame's own.
  int steps_per_frame_ = 1;
  double frame_budget_ms_ = 0;
  int64_t shown_ = -1;   // the step shown; -1: the newest (live)
  float lr_slider_ = 0;  // the learning-rate slider's value while it is dragged
  bool lr_dragged_ = false;
  Clock::time_point rate_since_{};
  int64_t rate_steps_ = 0;
  double measured_rate_ = 0;
};

// The knobs every live-training scene shares: paused, steps_per_frame,
// max_steps_per_second, lr, seed. `session` is the scene's member, read when a
// knob is set (a scene may replace its session when it starts over).
std::vector<Knob> training_session_knobs(const std::unique_ptr<TrainingSession>& session);

// The "worker" knob of a scene that trains on a worker thread: yes (the
// desktop's default) or no (each frame trains, as the browser does).
// `set_stepping` starts the scene's training over in that stepping.
Knob stepping_knob(std::function<void(Stepping)> set_stepping);

}  // namespace ag::viewer
