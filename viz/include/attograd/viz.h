// attograd viz — colour maps and heatmap export, with no window and no OpenGL.
//
// d2l draws attention weights with show_heatmaps(); this is its counterpart:
//
//   ag::nn::AdditiveAttention attention(2, 20, 8);
//   attention(queries, keys, values, valid_lens);
//   ag::viz::show_heatmaps(ag::reshape(attention.attention_weights(), {1, 1, 2, 10})
//                              .detach(), "weights.png");
//
// `matrices` is [rows, cols, Tq, Tk] as in d2l, or any [..., Tq, Tk]: every
// leading dim but the last two is flattened into one row of maps, except that
// a 4-D input keeps its grid of rows x cols. All maps share one colour scale
// and one colour bar. The file's extension picks the format: .png (RGB,
// written with stb_image_write, its text through stb_truetype) or .svg (each
// cell a <rect> whose <title> holds its value, so a browser shows it on hover).
//
// The same colour maps serve the viewer (viz/viewer), so that a cell's colour
// in a PNG, an SVG and on screen is one function of its value.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attograd/core.h"

namespace ag::viz {

// ---- colour maps --------------------------------------------------------------
// Viridis   perceptually uniform, dark blue (low) to yellow (high): the default
//           for weights, as matplotlib's and d2l's heatmaps use.
// Magma     the alternative sequential map: black through purple to pale yellow.
// Diverging blue (negative) - white (zero) - red (positive), for signed data
//           such as the difference of two weight maps or a gradient; a scale
//           built for it is symmetric around 0 so that white means exactly 0.
enum class Colormap { Viridis, Magma, Diverging };

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// The colour at position t in [0, 1] of the map (t is clamped; NaN gives t=0).
Rgb colormap_rgb(Colormap map, double t);
// "viridis", "magma", "diverging".
const char* colormap_name(Colormap map);
// Inverse of colormap_name; throws ag::Error listing the names otherwise.
Colormap colormap_from_name(const std::string& name);

// A value -> colour function: value lo maps to t=0, hi to t=1 (clamped).
struct ColorScale {
  Colormap map = Colormap::Viridis;
  double lo = 0.0;
  double hi = 1.0;
  double position(double value) const;  // (value - lo) / (hi - lo), clamped to [0, 1]
  Rgb operator()(double value) const { return colormap_rgb(map, position(value)); }
};
// The scale for `values` under `map`: [min, max] for the sequential maps
// ([v - 0.5, v + 0.5] when all values are equal, so that one value is drawn
// mid-map; v -+ |v| 2^-40 past |v| = 2^39, where 0.5 would be lost), [-m, m]
// with m = max |v| for Diverging (m = 1 when all are 0).
// Non-finite values are skipped.
ColorScale fit_scale(const std::vector<double>& values, Colormap map);

// ---- heatmap export --------------------------------------------------------------
struct HeatmapOptions {
  std::string xlabel = "Keys";
  std::string ylabel = "Queries";
  // One title per map, in row-major order of the grid; empty = no titles.
  // When given, there must be exactly one per map.
  std::vector<std::string> titles;
  Colormap colormap = Colormap::Viridis;
  int cell_size = 24;        // pixels (PNG) or user units (SVG) per cell side, 4..256
  bool show_values = false;  // print each cell's value inside it (2 decimals)
  // Optional bool keep mask, broadcastable to the matrices: cells where it is
  // false are drawn hatched (grey with diagonal stripes), never as a colour of
  // the map, so a masked cell is not mistaken for a small weight.
  Tensor keep_mask;
  // Fixed colour scale; by default fit_scale() over the unmasked values.
  std::optional<double> vmin, vmax;
  // Tick labels (e.g. the tokens of a translation), one per key (x) and one
  // per query (y); empty = the indices 0, 1, 2, ... as before. x labels wider
  // than a cell are written vertically (matplotlib's rotation=90).
  std::vector<std::string> xticklabels, yticklabels;
  // The TrueType font of the PNG's text, drawn anti-aliased: DejaVu Sans, the
  // viewer's font (Debian's fonts-dejavu-core; the browser build embeds it at
  // this path). When it cannot be read, the PNG falls back to a bitmap font
  // (printable ASCII only). The layout measures the text with the same font,
  // and the SVG names DejaVu Sans at the same size.
  std::string font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
};

// Writes the heatmaps of `matrices` (float32 or float64, rank >= 2, no empty
// dim, finite values where kept) to `path` (.png or .svg). Throws ag::Error
// naming "show_heatmaps" and the shape for bad rank, empty input, non-finite
// values, a mask that does not broadcast, a title count that does not match,
// an unknown extension, or a file that cannot be written.
void show_heatmaps(const Tensor& matrices, const std::string& path,
                   const HeatmapOptions& options = {});

// Where show_heatmaps() puts things, in pixels of the PNG (and user units of the
// SVG, which uses the same coordinates): tests sample cell centres with it.
struct HeatmapLayout {
  int width = 0, height = 0;              // the whole image
  int64_t grid_rows = 0, grid_cols = 0;   // maps per column and per row of the grid
  int64_t num_queries = 0, num_keys = 0;  // Tq, Tk of every map
  // Top-left corner of map (grid_row, grid_col); cells are cell_size squares.
  std::vector<std::array<int, 2>> map_origin;  // row-major over the grid: {x, y}
  int cell_size = 0;
  std::array<int, 4> colorbar{};  // x, y, width, height of the colour bar's gradient
  // Centre pixel {x, y} of cell (query i, key j) of map m (row-major grid index).
  std::array<int, 2> cell_center(int64_t m, int64_t i, int64_t j) const;
};
// The layout show_heatmaps() uses for `matrices_shape` and `options`.
HeatmapLayout heatmap_layout(const Shape& matrices_shape, const HeatmapOptions& options = {});

// Masked cells are grey with lighter grey diagonal stripes (no colour map
// gives a grey); the centre pixel of a masked cell is always kHatchBase.
inline constexpr Rgb kHatchBase{90, 90, 90};
inline constexpr Rgb kHatchStripe{150, 150, 150};

// ---- images -------------------------------------------------------------------
// An 8-bit RGB image, row-major, 3 bytes a pixel (what the PNGs hold).
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  Rgb at(int x, int y) const;  // throws ag::Error outside the image
};
// PNG files via stb_image_write / stb_image. Both throw ag::Error naming the
// function and the path when the file cannot be written or read.
void write_png(const std::string& path, const Image& image);
Image read_png(const std::string& path);

}  // namespace ag::viz
