// The training session (see training_session.h): the step loop, the history
// ring, the curves since step 0 and the controls.
#include "training_session.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "plot.h"

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

void StepHistory::push(const std::map<std::string, Tensor>& record) {
  for (const RecordField& field : fields_) {
    const auto found = record.find(field.name);
    AG_CHECK(found != record.end(), "StepHistory::push", "the record has no " + field.name);
    AG_CHECK(found->second.shape() == field.shape, "StepHistory::push",
             field.name + " is " + shape_str(found->second.shape()) + ", the history holds " +
                 shape_str(field.shape));
  }
  newest_ = size_ == 0 ? 0 : newest_ + 1;
  size_ = std::min(size_ + 1, capacity_);
  float* slot = data_.data() + (newest_ % capacity_) * record_size_;
  for (size_t f = 0; f < fields_.size(); ++f) {
    const std::vector<double> values = record.at(fields_[f].name).to_vector();
    std::copy(values.begin(), values.end(), slot + offsets_[f]);
  }
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
TrainingSession::TrainingSession(Trainer& trainer, int64_t history)
    : trainer_(trainer),
      series_(trainer.series()),
      history_(trainer.fields(), history),
      curves_(series_.size()),
      lr_(trainer.default_learning_rate()) {
  reset();
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

void TrainingSession::advance() {
  record(trainer_.step());
}

void TrainingSession::frame() {
  if (paused_ || !error_.empty()) return;
  try {
    for (int i = 0; i < steps_per_frame_; ++i) advance();
  } catch (const Error& e) {
    error_ = e.what();
    paused_ = true;
  }
}

void TrainingSession::set_paused(bool paused) {
  paused_ = paused;
  if (!paused_) shown_ = -1;
}

void TrainingSession::single_step() {
  paused_ = true;
  if (shown_ >= 0 && shown_ < steps()) {
    show_step(shown_ + 1);
    return;
  }
  try {
    advance();
  } catch (const Error& e) {
    error_ = e.what();
  }
  shown_ = -1;
}

void TrainingSession::reset() {
  error_.clear();
  shown_ = -1;
  manual_seed(static_cast<uint64_t>(seed_));
  for (StepCurve& curve : curves_) curve.clear();
  history_.clear();
  try {
    record(trainer_.start(lr_));
  } catch (const Error& e) {
    // Nothing to show: the history holds no step, and draw() shows the error.
    error_ = e.what();
  }
  first_loss_ = last_loss_;
}

void TrainingSession::show_step(int64_t step) {
  step = std::clamp(step, oldest_step(), steps());
  if (step < steps()) paused_ = true;
  shown_ = step == steps() ? -1 : step;
}

void TrainingSession::set_learning_rate(double lr) {
  lr_ = lr;
  trainer_.set_learning_rate(lr);
}

void TrainingSession::set_seed(int seed) {
  seed_ = seed;
  reset();
}

void TrainingSession::print_stats(std::ostream& out) const {
  out << "loss_first " << first_loss_ << "\n";
  out << "loss_last " << last_loss_ << "\n";
  for (const Trainer::Series& series : series_) {
    if (series.axis == Trainer::Axis::Fraction) {
      out << "accuracy " << last_fraction_ << "\n";
      break;
    }
  }
}

// ---- drawing ----------------------------------------------------------------------------------
void TrainingSession::draw_controls() {
  if (ImGui::Button(paused_ ? "Play" : "Pause", ImVec2(80, 0))) set_paused(!paused_);
  ImGui::SameLine();
  if (ImGui::Button("Step", ImVec2(80, 0))) single_step();
  ImGui::SameLine();
  if (ImGui::Button("Reset", ImVec2(80, 0))) reset();
  ImGui::SliderInt("steps/frame", &steps_per_frame_, 1, 20);
  // A new rate may mean a new optimizer (Adam's rate is fixed at
  // construction): make it once, when the slider is let go, not on every
  // frame of the drag.
  if (!lr_dragged_) lr_slider_ = static_cast<float>(lr_);
  ImGui::SliderFloat("learning rate", &lr_slider_, 1e-3f, 1.0f, "%.4f",
                     ImGuiSliderFlags_Logarithmic);
  lr_dragged_ = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) set_learning_rate(lr_slider_);
  if (ImGui::SliderInt("seed", &seed_, 0, 99)) reset();
  ImGui::Separator();

  ImGui::TextUnformatted("History: the last steps, kept to look back at");
  int64_t shown = shown_step();
  const int64_t oldest = oldest_step(), newest = steps();
  if (ImGui::SliderScalar("step", ImGuiDataType_S64, &shown, &oldest, &newest)) show_step(shown);
  ImGui::BeginDisabled(shown_ < 0);
  if (ImGui::Button("back to live")) set_paused(false);
  ImGui::EndDisabled();
  ImGui::Text("%lld steps taken; holding %lld to %lld", static_cast<long long>(newest),
              static_cast<long long>(oldest), static_cast<long long>(newest));
}

void TrainingSession::draw_curves(ImVec2 size) const {
  bool has_fractions = false;
  double lo = HUGE_VAL, hi = 0;
  for (size_t c = 0; c < series_.size(); ++c) {
    if (series_[c].axis == Trainer::Axis::Fraction) {
      has_fractions = true;
      continue;
    }
    for (float v : curves_[c].points()) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
  }
  if (lo > hi) lo = hi = 1;  // no loss series: a decade around 1
  lo = std::max(lo, 1e-6);
  const int64_t stride = curves_.front().steps_per_point();
  const double last_x =
      std::max<double>(1, static_cast<double>(curves_.front().points().size()) * stride);
  // A right axis takes room for its tick labels from the plot's width.
  const float right_labels = has_fractions ? ImGui::CalcTextSize("0.8").x + 12 : 0.0f;
  const PlotArea loss_area =
      draw_axes(has_fractions ? "Loss (log scale, left) and accuracy (right) since step 0"
                              : "Loss (log scale) since step 0",
                ImVec2(size.x - right_labels, size.y), 0, last_x, lo / 1.2, hi * 1.2, true, "step");
  const PlotArea fraction_area = has_fractions ? draw_right_axis(loss_area, 0, 1) : loss_area;
  if (has_fractions) {
    ImGui::SameLine(0, 0);
    ImGui::Dummy(ImVec2(right_labels, size.y));
  }
  ImDrawList* draw = ImGui::GetWindowDrawList();
  std::vector<std::pair<std::string, ImU32>> legend;
  for (size_t c = 0; c < series_.size(); ++c) {
    const PlotArea& area = series_[c].axis == Trainer::Axis::Loss ? loss_area : fraction_area;
    std::vector<ImVec2> line;
    const std::vector<float>& points = curves_[c].points();
    for (size_t i = 0; i < points.size(); ++i) {
      line.push_back(area.at(static_cast<double>(static_cast<int64_t>(i) * stride), points[i]));
    }
    draw->AddPolyline(line.data(), static_cast<int>(line.size()), series_[c].color, 0, 2.0f);
    legend.emplace_back(series_[c].label, series_[c].color);
  }
  const float x = loss_area.at(static_cast<double>(shown_step()), 1.0).x;
  draw->AddLine(ImVec2(x, loss_area.min.y), ImVec2(x, loss_area.max.y),
                IM_COL32(255, 255, 255, 120));
  draw_legend(loss_area, legend);
}

}  // namespace ag::viewer
