// Axes, ticks and legends for the viewer's line plots (see plot.h).
#include "plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ag::viewer {

ImVec2 PlotArea::at(double x, double y) const {
  const double v = log_y ? std::log10(std::max(y, 1e-30)) : y;
  const double u = log2_x ? std::log2(std::max(x, 1e-30)) : x;
  const double tx = (u - x0) / (x1 - x0), ty = (v - y0) / (y1 - y0);
  return ImVec2(min.x + static_cast<float>(std::clamp(tx, 0.0, 1.0)) * (max.x - min.x),
                max.y - static_cast<float>(std::clamp(ty, 0.0, 1.0)) * (max.y - min.y));
}

std::vector<double> linear_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  double step = decade;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * decade;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-6; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-6 ? 0.0 : t);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  for (const bool powers_only : {false, true}) {
    ticks.clear();
    for (double k = std::floor(lo); k <= std::ceil(hi); ++k) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (powers_only && m != 1.0) continue;
        const double v = std::log10(m) + k;
        if (v >= lo - 1e-9 && v <= hi + 1e-9) ticks.push_back(std::pow(10.0, v));
      }
    }
    if (ticks.size() <= 7) break;
  }
  return ticks;
}

std::vector<double> log2_ticks(double lo, double hi) {
  const double first = std::ceil(lo - 1e-9), last = std::floor(hi + 1e-9);
  double stride = 1;
  while ((last - first) / stride + 1 > 6) stride *= 2;
  std::vector<double> ticks;
  for (double k = first; k <= last; k += stride) ticks.push_back(std::exp2(k));
  return ticks;
}

PlotArea draw_axes(const char* title, ImVec2 size, double x0, double x1, double y0, double y1,
                   bool log_y, const char* xlabel, bool log2_x) {
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 cursor = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  PlotArea area;
  area.log_y = log_y;
  area.log2_x = log2_x;
  area.x0 = log2_x ? std::log2(x0) : x0;
  area.x1 = log2_x ? std::log2(x1) : x1;
  if (area.x1 <= area.x0) area.x1 = area.x0 + 1;
  area.y0 = log_y ? std::log10(y0) : y0;
  area.y1 = log_y ? std::log10(y1) : y1;
  if (area.y1 <= area.y0) area.y1 = area.y0 + 1;
  const std::vector<double> x_ticks =
      log2_x ? log2_ticks(area.x0, area.x1) : linear_ticks(area.x0, area.x1);
  char label[32];
  // On the right, room for half the last x label, centred under its tick.
  std::snprintf(label, sizeof label, "%g", x_ticks.empty() ? 0.0 : x_ticks.back());
  const float right_margin = std::max(8.0f, ImGui::CalcTextSize(label).x / 2 + 4);
  area.min = ImVec2(std::floor(cursor.x + 52), std::floor(cursor.y + line + 6));
  area.max = ImVec2(std::floor(cursor.x + size.x - right_margin),
                    std::floor(cursor.y + size.y - 2 * line - 8));
  // The title starts over the box, or as far left as the y labels' column
  // when it would run past the box's right edge.
  const float title_x =
      std::max(cursor.x, std::min(area.min.x, area.max.x - ImGui::CalcTextSize(title).x));
  draw->AddText(ImVec2(title_x, cursor.y), text, title);
  draw->AddRectFilled(area.min, area.max, IM_COL32(20, 22, 28, 255));
  draw->AddRect(area.min, area.max, kAxisColor);
  const std::vector<double> y_ticks =
      log_y ? log_ticks(area.y0, area.y1) : linear_ticks(area.y0, area.y1);
  for (double t : y_ticks) {
    const float y = area.at(x0, t).y;
    draw->AddLine(ImVec2(area.min.x - 4, y), ImVec2(area.min.x, y), kAxisColor);
    draw->AddLine(ImVec2(area.min.x, y), ImVec2(area.max.x, y), IM_COL32(50, 52, 60, 255));
    std::snprintf(label, sizeof label, "%g", t);
    const float w = ImGui::CalcTextSize(label).x;
    draw->AddText(ImVec2(area.min.x - 6 - w, y - line / 2), text, label);
  }
  for (double t : x_ticks) {
    const float x = area.at(t, y_ticks.empty() ? 0.0 : y_ticks.front()).x;
    draw->AddLine(ImVec2(x, area.max.y), ImVec2(x, area.max.y + 4), kAxisColor);
    std::snprintf(label, sizeof label, "%g", t);
    const float w = ImGui::CalcTextSize(label).x;
    draw->AddText(ImVec2(x - w / 2, area.max.y + 4), text, label);
  }
  draw->AddText(ImVec2(area.min.x, area.max.y + line + 6), dim, xlabel);
  ImGui::Dummy(size);
  return area;
}

PlotArea draw_right_axis(const PlotArea& area, double lo, double hi) {
  PlotArea right = area;
  right.log_y = false;
  right.y0 = lo;
  right.y1 = hi > lo ? hi : lo + 1;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  char label[32];
  for (double t : linear_ticks(right.y0, right.y1)) {
    const float y = right.at(right.x0, t).y;
    draw->AddLine(ImVec2(area.max.x, y), ImVec2(area.max.x + 4, y), kAxisColor);
    std::snprintf(label, sizeof label, "%g", t);
    draw->AddText(ImVec2(area.max.x + 6, y - line / 2), ImGui::GetColorU32(ImGuiCol_Text), label);
  }
  return right;
}

void draw_legend(const PlotArea& area, const std::vector<std::pair<std::string, ImU32>>& entries,
                 bool bottom) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  float width = 0;
  for (const auto& [label, color] : entries) {
    width = std::max(width, ImGui::CalcTextSize(label.c_str()).x);
  }
  const float height = line * static_cast<float>(entries.size());
  const ImVec2 corner(area.max.x - width - 40, bottom ? area.max.y - height - 6 : area.min.y + 6);
  draw->AddRectFilled(ImVec2(corner.x - 6, corner.y - 4),
                      ImVec2(area.max.x - 6, corner.y + height + 4), IM_COL32(20, 22, 28, 230));
  for (size_t i = 0; i < entries.size(); ++i) {
    const float y = corner.y + line * (static_cast<float>(i) + 0.5f);
    draw->AddLine(ImVec2(corner.x, y), ImVec2(corner.x + 24, y), entries[i].second, 3.0f);
    draw->AddText(ImVec2(corner.x + 30, y - line / 2), ImGui::GetColorU32(ImGuiCol_Text),
                  entries[i].first.c_str());
  }
}

}  // namespace ag::viewer
