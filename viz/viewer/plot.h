// Line plots with ImDrawList: axes with ticks, a legend, colours. Every plot
// of the viewer's training scenes is drawn through here, so that their axes
// look and read the same.
//
//   const PlotArea area = draw_axes("Loss", size, 0, steps, 1e-3, 2, true, "step");
//   draw->AddPolyline(...area.at(x, y)...);
//   draw_legend(area, {{"fit", kFitColor}});
#pragma once

#include <imgui.h>

#include <string>
#include <utility>
#include <vector>

namespace ag::viewer {

// Colours the plots share: one per model or quantity, the same wherever it appears.
inline const ImU32 kTruthColor = IM_COL32(200, 200, 200, 255);
inline const ImU32 kPointColor = IM_COL32(255, 170, 60, 255);
inline const ImU32 kFitColor = IM_COL32(90, 170, 255, 255);
inline const ImU32 kScaledColor = IM_COL32(90, 170, 255, 255);    // scores / sqrt(d)
inline const ImU32 kUnscaledColor = IM_COL32(255, 150, 60, 255);  // scores as they are
inline const ImU32 kAxisColor = IM_COL32(140, 140, 150, 255);

// Data (x, y) to screen pixels inside a plot's box; y is log10 when log_y
// (y0, y1 are then log10 of the range), x is log2 when log2_x (x0, x1 then
// log2 of the range). Points outside the range are clamped to the box's edge.
struct PlotArea {
  ImVec2 min, max;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log_y = false, log2_x = false;
  ImVec2 at(double x, double y) const;
};

// Tick positions for [lo, hi]: multiples of 1, 2 or 5 times a power of ten,
// at most about six of them.
std::vector<double> linear_ticks(double lo, double hi);
// Log-axis ticks for [10^lo, 10^hi]: 1, 2 and 5 times each power of ten, or
// only the powers when that would be too many.
std::vector<double> log_ticks(double lo, double hi);
// Ticks for [2^lo, 2^hi]: the powers of two, every 2nd or 4th ... one when
// there would be more than six.
std::vector<double> log2_ticks(double lo, double hi);

// Draws a plot's title, box, y ticks (with grid lines), x ticks and x label
// at the cursor, `size` big; reserves the space and returns where data goes.
// With log_y, y0 and y1 are data values (> 0), not their logarithms; so are
// x0 and x1 with log2_x (an axis of sizes 2, 4, ..., 512).
PlotArea draw_axes(const char* title, ImVec2 size, double x0, double x1, double y0, double y1,
                   bool log_y, const char* xlabel, bool log2_x = false);

// A second y axis on the box's right edge, linear from lo to hi (tick labels
// only, no grid lines: the left axis owns those). Returns the same box
// mapping data on [lo, hi].
PlotArea draw_right_axis(const PlotArea& area, double lo, double hi);

// One entry per line of the legend, in the plot's top-right corner (or the
// bottom-right one, where the data leaves room).
void draw_legend(const PlotArea& area, const std::vector<std::pair<std::string, ImU32>>& entries,
                 bool bottom = false);

}  // namespace ag::viewer
