// The training session (see training_session.h): the history ring, the
// curves since step 0 and the step loop, on the frame's thread or on a
// worker. The controls and the plot are in training_session_draw.cpp.
//
// With a worker, one mutex guards everything the two threads share; the
// worker holds it only to pick its next job and to publish a record, never
// while the trainer runs, so a frame waits at most for a copy.
#include "training_session.h"

#include <algorithm>
#include <cmath>
#include <utility>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ag::viewer {
namespace {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

}  // namespace

// ---- the history ------------------------------------------------------------------------
StepHistory::StepHistory(std::vector<RecordField> fields, int64_t capacity)
    : fields_(std::move(fields)), capacity_(capacity) {
  for (const RecordField& field : fields_) {
    offsets_.push_back(record_size_);
    record_size_ += numel_of(field.shape);
  }
  // Filled, not just reserved: the pages are touched now, so the resident
  // set does not creep up while the history fills.
  data_.assign(static_cast<size_t>(capacity_ * record_size_), 0.0f);
}

void StepHistory::check(const std::map<std::string, Tensor>& record, const char* where) const {
  for (const RecordField& field : fields_) {
    const auto found = record.find(field.name);
    AG_CHECK(found != record.end(), where, "the record has no " + field.name);
    AG_CHECK(found->second.shape() == field.shape, where,
             field.name + " is " + shape_str(found->second.shape()) + ", the history holds " +
                 shape_str(field.shape));
  }
}

void StepHistory::write(int64_t step, const std::map<std::string, Tensor>& record) {
  float* slot = data_.data() + (step % capacity_) * record_size_;
  for (size_t f = 0; f < fields_.size(); ++f) {
    const std::vector<double> values = record.at(fields_[f].name).to_vector();
    std::copy(values.begin(), values.end(), slot + offsets_[f]);
  }
}

void StepHistory::push(const std::map<std::string, Tensor>& record) {
  check(record, "StepHistory::push");
  newest_ = size_ == 0 ? 0 : newest_ + 1;
  size_ = std::min(size_ + 1, capacity_);
  write(newest_, record);
}

void StepHistory::replace_newest(const std::map<std::string, Tensor>& record) {
  check(record, "StepHistory::replace_newest");
  AG_CHECK(size_ > 0, "StepHistory::replace_newest", "the history holds no step");
  write(newest_, record);
}

std::map<std::string, Tensor> StepHistory::at(int64_t step) const {
  AG_CHECK(size_ > 0 && step >= oldest() && step <= newest_, "StepHistory::at",
           "step " + std::to_string(step) + " is not held");
  const float* slot = data_.data() + (step % capacity_) * record_size_;
  std::map<std::string, Tensor> record;
  for (size_t f = 0; f < fields_.size(); ++f) {
    const float* first = slot + offsets_[f];
    record[fields_[f].name] =
        tensor(std::vector<double>(first, first + numel_of(fields_[f].shape)), fields_[f].shape);
  }
  return record;
}

// ---- a curve since step 0 ----------------------------------------------------------------
void StepCurve::clear() {
  points_.clear();
  stride_ = 1;
  pending_sum_ = 0;
  pending_ = 0;
}

void StepCurve::add(double value) {
  pending_sum_ += value;
  if (++pending_ < stride_) return;
  points_.push_back(static_cast<float>(pending_sum_ / static_cast<double>(stride_)));
  pending_sum_ = 0;
  pending_ = 0;
  if (points_.size() < kMaxPoints) return;
  for (size_t i = 0; i < kMaxPoints / 2; ++i) {
    points_[i] = (points_[2 * i] + points_[2 * i + 1]) / 2;
  }
  points_.resize(kMaxPoints / 2);
  stride_ *= 2;
}

// ---- the step loop -------------------------------------------------------------------------
TrainingSession::TrainingSession(Trainer& trainer, int64_t history, Stepping stepping)
    : trainer_(trainer),
      series_(trainer.series()),
      history_(trainer.fields(), history),
      curves_(series_.size()),
      lr_(trainer.default_learning_rate()) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    restart(lock);
  }
#if ATTOGRAD_HAS_THREADS
  if (stepping == Stepping::Background) worker_ = std::thread([this] { work(); });
#else
  (void)stepping;  // no threads: the frame steps
#endif
}

TrainingSession::~TrainingSession() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void TrainingSession::record(const std::map<std::string, Tensor>& record) {
  // A step whose curves are not finite is refused whole: the history and
  // the curves end at the last good step.
  std::vector<double> values;
  for (const Trainer::Series& series : series_) {
    values.push_back(record.at(series.field).item());
    AG_CHECK(
        std::isfinite(values.back()), trainer_.title(),
        "the " + series.label + " curve is no longer finite; lower the learning rate and reset");
  }
  history_.push(record);
  last_values_ = values;
  double loss_sum = 0, fraction_sum = 0;
  int losses = 0, fractions = 0;
  for (size_t c = 0; c < series_.size(); ++c) {
    const double value = values[c];
    curves_[c].add(value);
    if (series_[c].axis == Trainer::Axis::Loss) {
      loss_sum += value;
      ++losses;
    } else {
      fraction_sum += value;
      ++fractions;
    }
  }
  last_loss_ = losses > 0 ? loss_sum / losses : 0.0;
  last_fraction_ = fractions > 0 ? fraction_sum / fractions : 0.0;
}

void TrainingSession::advance(std::unique_lock<std::mutex>& lock) {
  busy_ = true;
  lock.unlock();
  std::map<std::string, Tensor> next;
  std::string error;
  try {
    next = trainer_.step();
  } catch (const Error& e) {
    error = e.what();
  }
  lock.lock();
  busy_ = false;
  try {
    if (error.empty()) record(next);
  } catch (const Error& e) {
    error = e.what();
  }
  if (!error.empty()) {
    error_ = error;
    paused_ = true;
  }
}

void TrainingSession::restart(std::unique_lock<std::mutex>& lock) {
  busy_ = true;
  const double lr = lr_;
  const int seed = seed_;
  lock.unlock();
  std::map<std::string, Tensor> first;
  std::string error;
  try {
    manual_seed(static_cast<uint64_t>(seed));
    first = trainer_.start(lr);
  } catch (const Error& e) {
    error = e.what();
  }
  lock.lock();
  busy_ = false;
  // The old run disappears at once, with the first record of the new one.
  error_ = error;
  for (StepCurve& curve : curves_) curve.clear();
  history_.clear();
  try {
    if (error_.empty()) record(first);
  } catch (const Error& e) {
    error_ = e.what();
  }
  // On an error the history holds no step, and the scene shows error() instead.
  first_loss_ = last_loss_;
  first_values_ = last_values_;
}

void TrainingSession::run_command(std::unique_lock<std::mutex>& lock, Command command,
                                  bool rerecord) {
  busy_ = true;
  lock.unlock();
  std::map<std::string, Tensor> again;
  std::string error;
  try {
    command(trainer_);
    if (rerecord) again = trainer_.current_record();
  } catch (const Error& e) {
    error = e.what();
  }
  lock.lock();
  busy_ = false;
  try {
    if (!again.empty() && history_.newest() >= 0) history_.replace_newest(again);
  } catch (const Error& e) {
    error = e.what();
  }
  if (!error.empty()) {
    error_ = error;
    paused_ = true;
  }
}

bool TrainingSession::has_step_to_take(Clock::time_point now) const {
  if (single_steps_ > 0) return true;
  // Frames stop coming when the scene's tab is hidden or the window closes.
  const bool on_screen = now - last_frame_ < std::chrono::milliseconds(500);
  return !paused_ && error_.empty() && on_screen;
}

void TrainingSession::work() {
#ifdef __linux__
  // The frame comes first: on a machine with few cores the worker takes
  // what the drawing (and a software OpenGL's threads) leave. Best effort:
  // a thread's nice value is its own on Linux; failure changes nothing.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5);
#endif
  std::unique_lock<std::mutex> lock(mutex_);
  while (!quit_) {
    if (!commands_.empty()) {
      Pending next = std::move(commands_.front());
      commands_.pop_front();
      if (next.restart) {
        restart(lock);
      } else {
        run_command(lock, std::move(next.command), next.rerecord);
      }
      idle_.notify_all();
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (!has_step_to_take(now)) {
      idle_.notify_all();
      wake_.wait(lock);
      continue;
    }
    if (single_steps_ == 0 && max_steps_per_second_ > 0 && now < next_step_) {
      wake_.wait_until(lock, next_step_);
      continue;
    }
    if (single_steps_ > 0) --single_steps_;
    if (max_steps_per_second_ > 0) {
      next_step_ = std::max(next_step_, now - std::chrono::seconds(1)) +
                   std::chrono::microseconds(1000000 / max_steps_per_second_);
    }
    advance(lock);
    idle_.notify_all();
  }
}

void TrainingSession::post(Command command, bool rerecord) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!background()) {
    run_command(lock, std::move(command), rerecord);
    return;
  }
  commands_.push_back({std::move(command), rerecord, false});
  lock.unlock();
  wake_.notify_all();
}

void TrainingSession::call(Command command, bool rerecord) {
  post(std::move(command), rerecord);
  sync();
}

void TrainingSession::sync() {
  if (!background()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] {
    return quit_ || (commands_.empty() && !busy_ && (single_steps_ == 0 || !error_.empty()));
  });
}

void TrainingSession::frame() {
  measure_rate();
  std::unique_lock<std::mutex> lock(mutex_);
  if (background()) {
    last_frame_ = Clock::now();
    lock.unlock();
    wake_.notify_all();
    return;
  }
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < steps_per_frame_ && !paused_ && error_.empty(); ++i) {
    advance(lock);
    const double spent = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (frame_budget_ms_ > 0 && spent >= frame_budget_ms_) break;
  }
}

void TrainingSession::measure_rate() {
  const Clock::time_point now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - rate_since_).count();
  if (seconds < 1.0) return;
  const int64_t taken = steps();
  measured_rate_ = rate_steps_ <= taken && seconds < 5.0
                       ? static_cast<double>(taken - rate_steps_) / seconds
                       : 0.0;
  rate_since_ = now;
  rate_steps_ = taken;
}

bool TrainingSession::paused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paused_;
}

void TrainingSession::set_paused(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = paused;
  }
  if (!paused) shown_ = -1;
  wake_.notify_all();
}

void TrainingSession::single_step() {
  std::unique_lock<std::mutex> lock(mutex_);
  paused_ = true;
  if (shown_ >= 0 && shown_ < history_.newest()) {
    ++shown_;
    if (shown_ == history_.newest()) shown_ = -1;
    return;
  }
  shown_ = -1;
  if (!background()) {
    if (error_.empty()) advance(lock);
    return;
  }
  ++single_steps_;
  lock.unlock();
  wake_.notify_all();
}

void TrainingSession::reset() {
  shown_ = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!background()) {
    restart(lock);
    return;
  }
  // After the commands posted before it; the steps not yet taken are dropped.
  single_steps_ = 0;
  commands_.push_back({Command(), false, /*restart=*/true});
  lock.unlock();
  wake_.notify_all();
}

int64_t TrainingSession::shown_step_locked() const {
  const int64_t newest = history_.newest();
  return shown_ < 0 ? newest : std::clamp(shown_, history_.oldest(), newest);
}

int64_t TrainingSession::steps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_.newest();
}

int64_t TrainingSession::shown_step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shown_step_locked();
}

int64_t TrainingSession::oldest_step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_.oldest();
}

std::map<std::string, Tensor> TrainingSession::shown_record() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_.at(shown_step_locked());
}

void TrainingSession::show_step(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t newest = history_.newest();
  step = std::clamp(step, history_.oldest(), newest);
  if (step < newest) paused_ = true;
  shown_ = step == newest ? -1 : step;
}

int TrainingSession::max_steps_per_second() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_steps_per_second_;
}

void TrainingSession::set_max_steps_per_second(int steps) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    max_steps_per_second_ = std::max(0, steps);
  }
  wake_.notify_all();
}

void TrainingSession::set_learning_rate(double lr) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lr_ = lr;
  }
  post([lr](Trainer& trainer) { trainer.set_learning_rate(lr); });
}

double TrainingSession::learning_rate() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lr_;
}

int TrainingSession::seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

void TrainingSession::set_seed(int seed) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
  }
  reset();
}

std::string TrainingSession::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

double TrainingSession::first_loss() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_loss_;
}

double TrainingSession::last_loss() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_loss_;
}

void TrainingSession::print_stats(std::ostream& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out << "loss_first " << first_loss_ << "\n";
  out << "loss_last " << last_loss_ << "\n";
  for (size_t c = 0; series_.size() > 1 && c < last_values_.size(); ++c) {
    if (series_[c].axis != Trainer::Axis::Loss) continue;
    out << "loss_first_" << series_[c].label << " " << first_values_[c] << "\n";
    out << "loss_last_" << series_[c].label << " " << last_values_[c] << "\n";
  }
  for (const Trainer::Series& series : series_) {
    if (series.axis == Trainer::Axis::Fraction) {
      out << "accuracy " << last_fraction_ << "\n";
      break;
    }
  }
}

std::vector<Knob> training_session_knobs(const std::unique_ptr<TrainingSession>& session) {
  return {
      choice_knob("paused", "yes: training waits at its step 0 until Play (or Step)", {"no", "yes"},
                  [&session](int paused) { session->set_paused(paused == 1); }),
      number_knob("steps_per_frame",
                  "without a worker thread (the browser, tests): training steps each frame, at "
                  "most (each steps every model); sets no frame budget",
                  1, 20, true,
                  [&session](double steps) {
                    session->set_steps_per_frame(static_cast<int>(steps));
                    session->set_frame_budget(0);
                  }),
      number_knob(
          "max_steps_per_second",
          "with a worker thread (the desktop): training steps a second at most; 0: as "
          "fast as it can",
          0, 1000, true,
          [&session](double steps) { session->set_max_steps_per_second(static_cast<int>(steps)); }),
      number_knob("lr", "the learning rate (Adam's) of the models", 1e-4, 0.1, false,
                  [&session](double lr) { session->set_learning_rate(lr); }),
      number_knob("seed", "the models' initial parameters", 0, 99, true,
                  [&session](double seed) { session->set_seed(static_cast<int>(seed)); }),
  };
}

Knob stepping_knob(std::function<void(Stepping)> set_stepping) {
  return choice_knob("worker",
                     "yes: a worker thread trains (the desktop's default); no: each frame trains "
                     "(steps_per_frame steps), as the browser does; starts over at step 0",
                     {"yes", "no"}, [set_stepping = std::move(set_stepping)](int no) {
                       set_stepping(no == 1 ? Stepping::InFrame : Stepping::Background);
                     });
}

}  // namespace ag::viewer
