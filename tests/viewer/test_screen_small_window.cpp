// Every scene at 1024x700, the smallest window the viewer is laid out for:
// no heatmap is cut by the window's edge (a map is either whole on screen or
// whole below it, in a region that scrolls), none leaves the window on the
// right, and the maps on screen keep cells a learner can read. The training
// scene, which used to squeeze its six maps to 3-pixel cells and cut the
// last one off, shows all of them with cells of at least 10 pixels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

constexpr int kWidth = 1024, kHeight = 700;
constexpr double kMinCell = 5;  // pixels: below this a cell's colour is hard to pick out

// The number of maps wholly on screen; fails on a map cut by an edge.
int check_maps_fit(const SceneRun& run, double min_cell) {
  int on_screen = 0;
  for (const LayoutEntry& map : run.layout) {
    SCOPED_TRACE(map.id);
    const double right = map.x + map.cell * static_cast<double>(map.cols);
    const double bottom = map.y + map.cell * static_cast<double>(map.rows);
    EXPECT_GE(map.x, 0);
    EXPECT_LE(right, kWidth);
    if (map.y >= kHeight) continue;  // below the window: the scene scrolls to it
    EXPECT_LE(bottom, kHeight) << "cut by the window's bottom edge";
    EXPECT_GE(map.cell, min_cell);
    ++on_screen;
  }
  return on_screen;
}

// ---- colour bars, read from the pixels -------------------------------------------------------
// A bar is 14 pixels of colour-map colours; right of it a short grey tick,
// a gap, and white labels on the window's background.

bool near(viz::Rgb a, viz::Rgb b, int tolerance) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance &&
         std::abs(a.b - b.b) <= tolerance;
}

bool in_colormap(viz::Rgb c, viz::Colormap map) {
  for (int i = 0; i <= 256; ++i) {
    if (near(c, viz::colormap_rgb(map, i / 256.0), 3)) return true;
  }
  return false;
}

// The cores of white label glyphs (their anti-aliased edges are darker).
bool is_label_text(viz::Rgb c) {
  const int lo = std::min({c.r, c.g, c.b}), hi = std::max({c.r, c.g, c.b});
  return lo >= 150 && hi - lo <= 24;
}

const viz::Rgb kWindowBackground{15, 15, 15};
constexpr int kBarWidth = 14;
constexpr int kTickRoom = 7;      // right of the bar: the grey tick and the gap, no white
constexpr int kLabelHeight = 17;  // one line of 15-pixel DejaVu Sans, at most
constexpr int kLineSpacing = 15;  // from one label's top to the next
constexpr int kLabelMargin = 10;  // the end labels stand half a line above and below

// The colour bar right of heatmap `id`: level with its cells, its labels
// clear of the tick (which must not read as a minus sign), one line apart
// and whole (ending on the window's background, not at its edge or under
// the scroll bar).
::testing::AssertionResult colorbar_readable(const SceneRun& run, const std::string& id) {
  const LayoutEntry& map = find_map(run, id);
  const viz::Image& shot = run.screenshot;
  const int right = static_cast<int>(map.x + map.cell * static_cast<double>(map.cols));
  const int top = static_cast<int>(map.y);
  const int bottom = static_cast<int>(map.y + map.cell * static_cast<double>(map.rows));
  const int middle = (top + bottom) / 2;
  auto bar_colour = [&](int x, int y) { return in_colormap(shot.at(x, y), map.scale.map); };
  int bar = -1;
  for (int x = right + 1; x + kBarWidth < shot.width && bar < 0; ++x) {
    bool run_of_bar = true;
    for (int dx = 0; dx < kBarWidth && run_of_bar; ++dx) run_of_bar = bar_colour(x + dx, middle);
    if (run_of_bar) bar = x;
  }
  if (bar < 0) {
    return ::testing::AssertionFailure() << id << ": no colour bar right of it at y " << middle;
  }
  const int centre = bar + kBarWidth / 2;
  int bar_top = middle, bar_bottom = middle;
  while (bar_top > 0 && bar_colour(centre, bar_top - 1)) --bar_top;
  while (bar_bottom + 1 < shot.height && bar_colour(centre, bar_bottom + 1)) ++bar_bottom;
  if (std::abs(bar_top - top) > 2 || std::abs(bar_bottom + 1 - bottom) > 2) {
    return ::testing::AssertionFailure() << id << ": bar rows " << bar_top << " to " << bar_bottom
                                         << ", cells rows " << top << " to " << bottom - 1;
  }
  const int y0 = std::max(0, top - kLabelMargin), y1 = std::min(shot.height, bottom + kLabelMargin);
  auto text_in_column = [&](int x) {
    for (int y = y0; y < y1; ++y) {
      if (is_label_text(shot.at(x, y))) return true;
    }
    return false;
  };
  const int bar_right = bar + kBarWidth;
  for (int x = bar_right; x < bar_right + kTickRoom && x < shot.width; ++x) {
    if (text_in_column(x)) {
      return ::testing::AssertionFailure()
             << id << ": white pixels " << x - bar_right << " px right of the bar (a white tick "
             << "touching its label reads as a minus sign)";
    }
  }
  int labels_left = -1, labels_right = -1;
  for (int x = bar_right + kTickRoom; x < shot.width; ++x) {
    if (text_in_column(x)) {
      if (labels_left < 0) labels_left = x;
      labels_right = x;
    } else if (labels_left >= 0 && x - labels_right >= 6) {
      break;
    }
  }
  if (labels_left < 0) return ::testing::AssertionFailure() << id << ": no labels beside its bar";
  std::vector<std::pair<int, int>> bands;  // rows [first, last] holding one label each
  for (int y = y0; y < y1; ++y) {
    bool text = false;
    for (int x = labels_left; x <= labels_right && !text; ++x) text = is_label_text(shot.at(x, y));
    if (!text) continue;
    if (!bands.empty() && bands.back().second == y - 1) {
      bands.back().second = y;
    } else {
      bands.emplace_back(y, y);
    }
  }
  for (size_t i = 0; i < bands.size(); ++i) {
    const auto [first, last] = bands[i];
    if (last - first + 1 > kLabelHeight) {
      return ::testing::AssertionFailure()
             << id << ": labels overlap in rows " << first << " to " << last;
    }
    if (i > 0 && first - bands[i - 1].first < kLineSpacing) {
      return ::testing::AssertionFailure() << id << ": labels at rows " << bands[i - 1].first
                                           << " and " << first << ", less than a line apart";
    }
  }
  if (bands.size() < 2) {
    return ::testing::AssertionFailure() << id << ": " << bands.size() << " label(s) by its bar";
  }
  // Right of the labels, in the row below the first (no text there): the
  // window's background, not its edge or the scroll bar that clips them.
  const int gap_row = bands.front().second + 1;
  for (int x = labels_right + 1; x <= labels_right + 4; ++x) {
    if (x >= shot.width || !near(shot.at(x, gap_row), kWindowBackground, 2)) {
      return ::testing::AssertionFailure() << id << ": labels end at x " << labels_right
                                           << ", cut by the window's edge or its scroll bar";
    }
  }
  return ::testing::AssertionSuccess()
         << id << ": " << bands.size() << " labels, x " << labels_left << " to " << labels_right;
}

TEST(SmallWindow, EverySceneFitsItsMapsAt1024x700) {
  for (const char* scene : {"compare", "playground", "masks", "scaling", "multihead", "file",
                            "step", "graph", "translate", "transformer", "pronounce"}) {
    SCOPED_TRACE(scene);
    const SceneRun run = run_scene(scene, 4, {"--size", "1024x700"});
    ASSERT_EQ(run.exit_code, 0);
    EXPECT_EQ(run.screenshot.width, kWidth);
    EXPECT_EQ(run.screenshot.height, kHeight);
    EXPECT_GE(check_maps_fit(run, kMinCell), 1);
  }
}

TEST(SmallWindow, TrainingShowsAllSixMapsWithReadableCells) {
  const SceneRun run = run_scene("training", 4, {"--size", "1024x700"});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(check_maps_fit(run, 10.0), 6);
  for (const char* model : {"additive", "general_scaled"}) {
    for (const char* field : {"weights", "grad_weights", "grad_scores"}) {
      EXPECT_EQ(find_map(run, std::string("training/") + model + "_" + field).rows, 16);
    }
  }
}

// Its 40 x 40 kernel maps are read as pictures (a band that narrows): 3-pixel
// cells, all four maps on screen.
TEST(SmallWindow, NadarayaWatsonShowsAllFourMaps) {
  const SceneRun run =
      run_scene("training", 4, {"--size", "1024x700", "--set", "training.task=nadaraya-watson"});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(check_maps_fit(run, 3.0), 4);
}

// Compare's colour bars (the difference bar's labels were cut off by the
// scroll bar at 1024x700) and the masks scene's bars beside two-row maps
// (their five labels overlapped), at both window sizes.
TEST(SmallWindow, ColourBarsBesideTheirMapsWithWholeLabelsALineApart) {
  for (const char* size : {"1024x700", "1600x1000"}) {
    SCOPED_TRACE(size);
    // The score maps share one bar by default (beside the second), or have
    // one each.
    const SceneRun compare = run_scene("compare", 4, {"--size", size});
    ASSERT_EQ(compare.exit_code, 0);
    for (const char* map : {"dot_scores", "dot", "difference", "dot_output"}) {
      EXPECT_TRUE(colorbar_readable(compare, std::string("compare/") + map));
    }
    const SceneRun each =
        run_scene("compare", 4, {"--size", size, "--set", "compare.scores_scale=each"});
    ASSERT_EQ(each.exit_code, 0);
    for (const char* map : {"additive_scores", "dot_scores"}) {
      EXPECT_TRUE(colorbar_readable(each, std::string("compare/") + map));
    }
    const SceneRun masks =
        run_scene("masks", 4, {"--size", size, "--set", "masks.mode=fully-masked"});
    ASSERT_EQ(masks.exit_code, 0);
    for (const char* map : {"scores", "weights", "zero_weights", "output", "zero_output"}) {
      EXPECT_TRUE(colorbar_readable(masks, std::string("masks/") + map + "/1"));
    }
  }
}

// Whether text runs into the window's right edge in rows [y0, y1): text
// pixels (grey, r = g = b, dim ones included; not the separators' blue grey
// nor the scroll bar's grab) in the last 2 columns the scenes draw in (their
// content is clipped 9 pixels from the edge: the window's padding and a
// border's width).
bool text_cut_at_right_edge(const viz::Image& shot, int y0, int y1) {
  const viz::Rgb scrollbar_grab{79, 79, 79};
  for (int y = y0; y < y1; ++y) {
    for (int x = shot.width - 11; x < shot.width - 9; ++x) {
      const viz::Rgb c = shot.at(x, y);
      const int lo = std::min({c.r, c.g, c.b}), hi = std::max({c.r, c.g, c.b});
      if (lo >= 60 && hi - lo <= 2 && !near(c, scrollbar_grab, 2)) return true;
    }
  }
  return false;
}

// The scaling scene's curves are drawn by the plot piece, whose titles and
// last x label stay inside the plot; the weights map's note wraps below its
// heading instead of running off the window (at 1024x700 the note and the
// third curve's title were cut at the window's edge).
TEST(SmallWindow, ScalingTextStaysInsideTheWindow) {
  for (const char* size : {"1024x700", "1600x1000"}) {
    SCOPED_TRACE(size);
    const SceneRun run = run_scene("scaling", 4, {"--size", size});
    ASSERT_EQ(run.exit_code, 0);
    const LayoutEntry& weights = find_map(run, "scaling/weights");
    const int bottom =
        static_cast<int>(weights.y + weights.cell * static_cast<double>(weights.rows));
    EXPECT_FALSE(text_cut_at_right_edge(run.screenshot, 30, bottom + 40));
  }
}

}  // namespace
}  // namespace ag::viewer_test
