// The heatmaps' colour bar (heatmap_internal.h): its frame and tick marks,
// placed with the rest of the Figure, and its labels, added once the data's
// colour scale is known.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "heatmap_internal.h"

namespace ag::viz::detail {

namespace {

constexpr int kColorbarWidth = 18;
constexpr int kColorbarTicks = 5;
// The colour bar's tick labels (colorbar_label) are at most as wide as this
// one (%.3g of a tiny negative number); their column is that wide, whatever
// the data, so that the layout depends on the shape and the options only.
constexpr const char* kWidestColorbarLabel = "-8.88e-08";

// A colour bar label. Fixed decimals, as many as tell the ticks apart plus
// one ("0.00", "0.25", ..., "1.00"; "0.000", "0.020", ..., "0.080"), so that
// the labels line up; %.3g when that would be wider than kWidestColorbarLabel
// at either end of the scale.
std::string colorbar_label(double value, const ColorScale& scale) {
  const double range = scale.hi - scale.lo;
  if (!std::isfinite(range)) return format("%.3g", value);
  const double step = range / (kColorbarTicks - 1);
  const int decimals = std::clamp(1 - static_cast<int>(std::floor(std::log10(step))), 0, 6);
  const auto fixed = [decimals](double v) {
    char buffer[512];  // %f of 1e308 has 309 digits
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
    return std::string(buffer);
  };
  const size_t widest = std::strlen(kWidestColorbarLabel);
  if (fixed(scale.lo).size() > widest || fixed(scale.hi).size() > widest) {
    return format("%.3g", value);
  }
  return fixed(value);
}

}  // namespace

int colorbar_band_width(const LabelFont& font) {
  return kColorbarWidth + kTickLength + kTickLabelGap +
         font.width(kWidestColorbarLabel, kLabelSize);
}

void add_colorbar(Figure& figure, int x, int y, int h) {
  figure.layout.colorbar = {x, y, kColorbarWidth, h};
  add_frame(figure.marks, x, y, kColorbarWidth, h);
  for (int k = 0; k < kColorbarTicks; ++k) {
    const int ty = y + h - 1 - k * (h - 1) / (kColorbarTicks - 1);
    figure.colorbar_tick_y.push_back(ty);
    figure.marks.push_back({x + kColorbarWidth + 1, ty, kTickLength, 1});
  }
}

void add_colorbar_labels(Figure& figure, const ColorScale& scale) {
  const auto [bx, by, bw, bh] = figure.layout.colorbar;
  for (int k = 0; k < kColorbarTicks; ++k) {
    double value = scale.lo + (scale.hi - scale.lo) * k / (kColorbarTicks - 1);
    if (!std::isfinite(value)) {  // hi - lo overflowed (vmin -1e308, vmax 1e308)
      const double t = static_cast<double>(k) / (kColorbarTicks - 1);
      value = (1 - t) * scale.lo + t * scale.hi;
    }
    // No "-0.00" for zero. (Half the range: the range itself may overflow.)
    if (std::abs(value) < 2e-12 * (scale.hi / 2 - scale.lo / 2)) value = 0.0;
    figure.texts.push_back({colorbar_label(value, scale), bx + bw + 1 + kTickLength + kTickLabelGap,
                            figure.colorbar_tick_y[k], Align::Start});
  }
}

}  // namespace ag::viz::detail
