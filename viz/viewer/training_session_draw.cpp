// The training session's controls and its plot (see training_session.h).
// Both run on the frame's thread and read what the worker publishes through
// the session's locked accessors, or under its lock for the curves.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "plot.h"
#include "training_session.h"

namespace ag::viewer {

void TrainingSession::draw_controls() {
  // 1. Play/Pause, Step, Reset.
  const bool is_paused = paused();
  if (ImGui::Button(is_paused ? "Play" : "Pause", ImVec2(80, 0))) set_paused(!is_paused);
  ImGui::SameLine();
  if (ImGui::Button("Step", ImVec2(80, 0))) single_step();
  ImGui::SameLine();
  if (ImGui::Button("Reset", ImVec2(80, 0))) reset();

  // 2. The speed: steps a frame, or with a worker steps a second (0: as
  //    fast as it goes), and how fast it goes.
  if (background()) {
    int rate = max_steps_per_second();
    if (ImGui::SliderInt("max steps/s", &rate, 0, 200, rate == 0 ? "no limit" : "%d")) {
      set_max_steps_per_second(rate);
    }
  } else {
    ImGui::SliderInt("steps/frame", &steps_per_frame_, 1, 20);
  }
  ImGui::Text("training at %.1f steps/s", measured_steps_per_second());

  // 3. The learning rate. A new rate may mean a new optimizer (Adam's rate
  //    is fixed at construction): make it once, when the slider is let go,
  //    not on every frame of the drag.
  if (!lr_dragged_) lr_slider_ = static_cast<float>(learning_rate());
  ImGui::SliderFloat("learning rate", &lr_slider_, 1e-3f, 1.0f, "%.4f",
                     ImGuiSliderFlags_Logarithmic);
  lr_dragged_ = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) set_learning_rate(lr_slider_);
  int new_seed = seed();
  if (ImGui::SliderInt("seed", &new_seed, 0, 99)) set_seed(new_seed);
  ImGui::Separator();

  // 4. The history slider.
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
  // The curves as the worker left them, and the step shown.
  std::vector<std::vector<float>> points;
  int64_t stride = 1, shown = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const StepCurve& curve : curves_) points.push_back(curve.points());
    stride = curves_.front().steps_per_point();
    shown = shown_step_locked();
  }

  // 1. The axes: the loss range on the left (log scale), fractions on the right.
  bool has_fractions = false;
  double lo = HUGE_VAL, hi = 0;
  for (size_t c = 0; c < series_.size(); ++c) {
    if (series_[c].axis == Trainer::Axis::Fraction) {
      has_fractions = true;
      continue;
    }
    for (float v : points[c]) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
  }
  if (lo > hi) lo = hi = 1;  // no loss series: a decade around 1
  lo = std::max(lo, 1e-6);
  const double last_x = std::max<double>(1, static_cast<double>(points.front().size()) * stride);
  // A right axis takes room for its tick labels from the plot's width.
  const float right_labels = has_fractions ? ImGui::CalcTextSize("0.8").x + 12 : 0.0f;
  const std::string title = has_fractions ? std::string("Loss (log scale, left) and ") +
                                                trainer_.fraction_name() + " (right) since step 0"
                                          : "Loss (log scale) since step 0";
  const PlotArea loss_area = draw_axes(title.c_str(), ImVec2(size.x - right_labels, size.y), 0,
                                       last_x, lo / 1.2, hi * 1.2, true, "step");
  const PlotArea fraction_area = has_fractions ? draw_right_axis(loss_area, 0, 1) : loss_area;
  if (has_fractions) {
    ImGui::SameLine(0, 0);
    ImGui::Dummy(ImVec2(right_labels, size.y));
  }

  // 2. The lines, the legend and the step shown.
  ImDrawList* draw = ImGui::GetWindowDrawList();
  std::vector<std::pair<std::string, ImU32>> legend;
  for (size_t c = 0; c < series_.size(); ++c) {
    const PlotArea& area = series_[c].axis == Trainer::Axis::Loss ? loss_area : fraction_area;
    std::vector<ImVec2> line;
    for (size_t i = 0; i < points[c].size(); ++i) {
      line.push_back(area.at(static_cast<double>(static_cast<int64_t>(i) * stride), points[c][i]));
    }
    draw->AddPolyline(line.data(), static_cast<int>(line.size()), series_[c].color, 0, 2.0f);
    legend.emplace_back(series_[c].label, series_[c].color);
  }
  const float x = loss_area.at(static_cast<double>(shown), 1.0).x;
  draw->AddLine(ImVec2(x, loss_area.min.y), ImVec2(x, loss_area.max.y),
                IM_COL32(255, 255, 255, 120));
  // One line needs no legend (the title names it), and a narrow plot has no
  // room for one (the Nadaraya-Watson task's, in a 1024-pixel window).
  if (legend.size() > 1) draw_legend(loss_area, legend);
}

}  // namespace ag::viewer
