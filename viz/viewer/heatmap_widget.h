// The viewer's heatmap: a [rows, cols] matrix drawn with ImDrawList, one
// filled square per cell in the colour attograd_viz gives its value, with
// tick labels, axis labels, hatched masked cells and a hover tooltip that
// shows the exact value and the (query, key) indices.
//
// Every heatmap drawn in a frame is also recorded (drawn_heatmaps()), with
// where its cells landed on screen: the --layout report writes that list, so
// that tests can sample each cell's centre in a screenshot and compare it with
// the colour of the value the library computes.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "attograd/viz.h"

namespace ag::viewer {

struct HeatmapView {
  std::string id;     // unique in the frame, e.g. "compare/additive"; names it in --layout
  std::string title;  // drawn above the map
  Tensor matrix;      // [rows, cols], float32 or float64
  Tensor keep;        // optional bool [rows, cols]: false cells are drawn hatched
  viz::ColorScale scale;
  std::string xlabel = "Keys";
  std::string ylabel = "Queries";
  std::string row_name = "query";  // names the indices in the tooltip
  std::string col_name = "key";
  float max_cell = 40.0f;  // cell side in pixels at most; less when space is short
  bool show_values = false;
  // For maps drawn side by side one item spacing apart: when the axis label
  // would run into the next map's cells, its "(ylabel ↓)" part is left out.
  bool fit_axis_label = false;
  // Optional tick labels, one per row / column (e.g. the output and source
  // characters of an alignment), drawn in place of the indices and named
  // in the tooltip; empty: the indices.
  std::vector<std::string> row_labels = {}, col_labels = {};
};

// What the mouse is over after draw_heatmap() (active = false when nothing).
struct HeatmapHover {
  bool active = false;
  int64_t row = -1, col = -1;
  double value = 0.0;
  bool masked = false;
  std::string text;  // the tooltip's text
};

// Draws the heatmap at the cursor, inside at most `size` (0 = what is left
// of the window in that direction), and returns what the mouse hovers.
HeatmapHover draw_heatmap(const HeatmapView& view, ImVec2 size = ImVec2(0, 0));

// A vertical colour bar for `scale`, `height` pixels tall, with tick labels
// (five, or fewer where they would not stand a line apart).
void draw_colorbar(const char* id, const viz::ColorScale& scale, float height);
// The width draw_colorbar takes for `scale`, labels included: what a scene
// leaves free beside a map for its bar.
float colorbar_width(const viz::ColorScale& scale);
// The colour bar on the same line as the heatmap drawn last, level with its
// cells and as tall as they are; no further left than `min_x` (a cursor
// position in the window, as ImGui::SetCursorPosX takes).
void colorbar_beside_last_map(const char* id, const viz::ColorScale& scale, float min_x = 0.0f);
// One scale of colour map `map` that fits every value of `maps`
// (viz::fit_scale over all of them), so that maps drawn with it can be
// compared cell by cell.
viz::ColorScale fit_scale_over(const std::vector<Tensor>& maps, viz::Colormap map);
// The one for gradient maps: diverging, symmetric around 0 (blue negative,
// white zero, red positive).
viz::ColorScale gradient_scale(const std::vector<Tensor>& maps);

// Where a heatmap's cells landed in this frame, in ImGui coordinates (times
// io.DisplayFramebufferScale for framebuffer pixels).
struct DrawnHeatmap {
  std::string id;
  float x = 0, y = 0;  // top-left corner of cell (0, 0)
  float cell = 0;      // side of a cell
  int64_t rows = 0, cols = 0;
  viz::ColorScale scale;
};
// The heatmaps drawn since the last clear, in drawing order.
std::vector<DrawnHeatmap>& drawn_heatmaps();

ImU32 to_imgui_color(viz::Rgb rgb);

// Builds the font atlas with the hatch pattern of masked cells in it: after
// the fonts are added, before the renderer uploads the atlas (the viewer's
// main, the tests' null backend).
void build_font_atlas(ImFontAtlas& atlas);

}  // namespace ag::viewer
