// show_heatmaps(): d2l's attention heatmaps as a PNG or an SVG.
//
// One Figure (where every map, cell, label, tick and the colour bar go) is
// computed from the shape and the options alone, then drawn twice over:
// raster_png() fills pixels (text from stb_easy_font's quads), svg_text()
// writes the same coordinates as SVG elements. heatmap_layout() is the public
// part of that Figure, so tests can find each cell's centre in either file.
#include <stb_easy_font.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "attograd/viz.h"

namespace ag::viz {

namespace {

constexpr const char* kOp = "show_heatmaps";

constexpr int kMinCellSize = 4;
constexpr int kMaxCellSize = 256;
constexpr int64_t kMaxImageSide = 16384;

// stb_easy_font draws 1-pixel strokes with a 7-pixel cap height; labels use
// it at 2x so that they stay readable next to 24-pixel cells.
constexpr int kTextScale = 2;
constexpr int kGlyphHeight = 7;
constexpr int kTextHeight = kGlyphHeight * kTextScale;
constexpr int kTextDescent = 2 * kTextScale;  // how far g, p, q, y and Q reach below

constexpr int kMargin = 12;       // around the whole figure
constexpr int kLabelGap = 6;      // between an axis label and its tick labels
constexpr int kTickLength = 4;    // tick marks stick out of the frame this far
constexpr int kTickLabelGap = 3;  // between a tick mark and its label
constexpr int kMapGap = 24;       // between neighbouring maps (and their titles)
constexpr int kColorbarGap = 24;  // between the grid and the colour bar
constexpr int kColorbarWidth = 18;
constexpr int kMinColorbarHeight = 100;  // room for its tick labels under one-row maps
constexpr int kColorbarTicks = 5;
// The colour bar's tick labels (colorbar_label) are at most as wide as this
// one (%.3g of a tiny negative number); their column is that wide, whatever
// the data, so that the layout depends on the shape and the options only.
constexpr const char* kWidestColorbarLabel = "-8.88e-08";

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kBlack{0, 0, 0};
// Hatch stripes run diagonally ("/"), about kHatchPeriod pixels apart and
// 3/8 of that wide: a cell holds a whole number of periods, so that stripes
// continue from one masked cell into the next.
constexpr int kHatchPeriod = 8;

int hatch_periods_per_cell(int cell) {
  return std::max(1, (cell + kHatchPeriod / 2) / kHatchPeriod);
}

// ---- text ---------------------------------------------------------------------

// stb_easy_font has glyphs for printable ASCII only (and indexes its table
// with the raw byte): everything else becomes '?'.
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c < 32 || c > 126) c = '?';
  }
  return out;
}

int text_width(const std::string& ascii, int scale) {
  return stb_easy_font_width(const_cast<char*>(ascii.c_str())) * scale;
}

enum class Align { Start, Middle, End };

// One label. (x, y) is its anchor: the text's left end, middle or right end
// (per align) at height y, vertically centred there. Vertical text reads
// bottom to top and is centred on (x, y).
struct Text {
  std::string ascii;  // printable()
  std::string utf8;   // as given, for the SVG
  int x = 0, y = 0;
  Align align = Align::Middle;
  int scale = kTextScale;
  bool vertical = false;
  Rgb color = kBlack;
};

Text make_text(const std::string& text, int x, int y, Align align, bool vertical = false) {
  return {printable(text), text, x, y, align, kTextScale, vertical, kBlack};
}

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}

// ---- the figure -----------------------------------------------------------------

struct Rect {
  int x, y, w, h;
};

struct Figure {
  HeatmapLayout layout;
  std::vector<Text> texts;           // titles, axis labels, tick labels
  std::vector<Rect> marks;           // frames and tick marks, drawn black
  std::vector<int> colorbar_tick_y;  // from the bottom (lo) to the top (hi)
};

struct Grid {
  int64_t rows, cols, num_queries, num_keys;
};

Grid grid_of(const Shape& shape, const char* op) {
  AG_CHECK(shape.size() >= 2, op,
           "expected matrices of rank >= 2 ([..., Tq, Tk]), got shape " + shape_str(shape));
  for (int64_t d : shape) {
    AG_CHECK(d > 0, op, "empty matrices: shape " + shape_str(shape) + " has a zero-size dim");
  }
  shape_numel(shape, op);  // rejects shapes whose element count overflows
  const size_t n = shape.size();
  if (n == 4) return {shape[0], shape[1], shape[2], shape[3]};
  int64_t maps = 1;
  for (size_t k = 0; k + 2 < n; ++k) maps *= shape[k];
  return {1, maps, shape[n - 2], shape[n - 1]};
}

// The smallest of 1, 2, 5, 10, 20, 50, ... such that labels `stride` cells
// apart are at least `extent` pixels apart.
int64_t tick_stride(int64_t cell, int64_t extent) {
  for (int64_t decade = 1;; decade *= 10) {
    for (int64_t step : {1, 2, 5}) {
      if (step * decade * cell >= extent) return step * decade;
    }
  }
}

// Adds the frame around the rectangle (x, y, w, h), one pixel outside it.
void add_frame(std::vector<Rect>& marks, int x, int y, int w, int h) {
  marks.push_back({x - 1, y - 1, w + 2, 1});
  marks.push_back({x - 1, y + h, w + 2, 1});
  marks.push_back({x - 1, y, 1, h});
  marks.push_back({x + w, y, 1, h});
}

Figure make_figure(const Shape& shape, const HeatmapOptions& options, const char* op) {
  const Grid grid = grid_of(shape, op);
  const int64_t num_maps = grid.rows * grid.cols;
  AG_CHECK(options.cell_size >= kMinCellSize && options.cell_size <= kMaxCellSize, op,
           "cell_size must be in " + std::to_string(kMinCellSize) + ".." +
               std::to_string(kMaxCellSize) + ", got " + std::to_string(options.cell_size) +
               " (shape " + shape_str(shape) + ")");
  AG_CHECK(options.titles.empty() || static_cast<int64_t>(options.titles.size()) == num_maps, op,
           "got " + std::to_string(options.titles.size()) + " titles for " +
               std::to_string(num_maps) + " maps (shape " + shape_str(shape) + ")");

  const auto check_size = [&](int64_t width, int64_t height, const std::string& at_least) {
    AG_CHECK(width <= kMaxImageSide && height <= kMaxImageSide, op,
             "the image would be " + at_least + std::to_string(width) + "x" +
                 std::to_string(height) + " pixels for shape " + shape_str(shape) +
                 " with cell_size " + std::to_string(options.cell_size) + "; at most " +
                 std::to_string(kMaxImageSide) + " a side (use a smaller cell_size or fewer maps)");
  };
  // Every map or cell takes at least a pixel: this bound keeps the int64
  // arithmetic below from overflowing on huge shapes.
  check_size(std::max(grid.cols, grid.num_keys), std::max(grid.rows, grid.num_queries),
             "at least ");
  const int64_t cell = options.cell_size;
  const int64_t map_w = grid.num_keys * cell, map_h = grid.num_queries * cell;
  int64_t title_w = 0;
  for (const std::string& title : options.titles) {
    title_w = std::max<int64_t>(title_w, text_width(printable(title), kTextScale));
  }
  const std::string xlabel = printable(options.xlabel), ylabel = printable(options.ylabel);
  const int64_t xlabel_w = text_width(xlabel, kTextScale);
  const int64_t ylabel_len = text_width(ylabel, kTextScale);
  // Written up the side of the map, as matplotlib does, when it fits there;
  // across, to the left, when the map is too short for it (e.g. one query).
  const bool ylabel_vertical = ylabel_len <= map_h;
  const int64_t ylabel_band =
      ylabel.empty() ? 0 : (ylabel_vertical ? kTextHeight + kTextDescent : ylabel_len) + kLabelGap;
  AG_CHECK(options.xticklabels.empty() ||
               static_cast<int64_t>(options.xticklabels.size()) == grid.num_keys,
           op,
           "got " + std::to_string(options.xticklabels.size()) + " x tick labels for " +
               std::to_string(grid.num_keys) + " keys (shape " + shape_str(shape) + ")");
  AG_CHECK(options.yticklabels.empty() ||
               static_cast<int64_t>(options.yticklabels.size()) == grid.num_queries,
           op,
           "got " + std::to_string(options.yticklabels.size()) + " y tick labels for " +
               std::to_string(grid.num_queries) + " queries (shape " + shape_str(shape) + ")");
  const auto widest = [](const std::vector<std::string>& labels, int64_t count) {
    if (labels.empty()) return text_width(std::to_string(count - 1), kTextScale);
    int64_t w = 0;
    for (const std::string& label : labels) {
      w = std::max<int64_t>(w, text_width(printable(label), kTextScale));
    }
    return static_cast<int>(w);
  };
  const int64_t ytick_w = widest(options.yticklabels, grid.num_queries);
  const int64_t xtick_w = widest(options.xticklabels, grid.num_keys);
  const bool xticks_vertical =
      !options.xticklabels.empty() && xtick_w + kTextHeight / 2 > options.cell_size;
  const int64_t xtick_band = xticks_vertical ? xtick_w : kTextHeight;  // height under the ticks

  // Each map sits centred in a slot wide enough for its title and x label.
  const int64_t slot_w = std::max({map_w, title_w, xlabel_w});
  const int64_t title_band = options.titles.empty() ? 0 : kTextHeight + kTextDescent + kLabelGap;
  const int64_t left = kMargin + ylabel_band + ytick_w + kTickLabelGap + kTickLength;
  const int64_t top = kMargin + title_band;
  const int64_t grid_right = left + grid.cols * slot_w + (grid.cols - 1) * kMapGap;
  const int64_t grid_bottom = top + grid.rows * map_h + (grid.rows - 1) * (kMapGap + title_band);
  const int64_t below_grid = kTickLength + kTickLabelGap + xtick_band +
                             (xlabel.empty() ? 0 : kLabelGap + kTextHeight) + kMargin;
  const int64_t bar_x = grid_right + kColorbarGap;
  const int64_t bar_h = std::max<int64_t>(grid_bottom - top, kMinColorbarHeight);
  const int64_t width = bar_x + kColorbarWidth + kTickLength + kTickLabelGap +
                        text_width(kWidestColorbarLabel, kTextScale) + kMargin;
  const int64_t height =
      std::max(grid_bottom + below_grid, top + bar_h + kTextHeight / 2 + kMargin);
  check_size(width, height, "");

  // From here on every coordinate fits in an int.
  Figure figure;
  HeatmapLayout& layout = figure.layout;
  layout.width = static_cast<int>(width);
  layout.height = static_cast<int>(height);
  layout.grid_rows = grid.rows;
  layout.grid_cols = grid.cols;
  layout.num_queries = grid.num_queries;
  layout.num_keys = grid.num_keys;
  layout.cell_size = options.cell_size;
  layout.colorbar = {static_cast<int>(bar_x), static_cast<int>(top), kColorbarWidth,
                     static_cast<int>(bar_h)};

  const int w = static_cast<int>(map_w), h = static_cast<int>(map_h), c = options.cell_size;
  const int64_t xstride =
      tick_stride(cell, xticks_vertical ? kTextHeight + 6 : xtick_w + kTextHeight / 2);
  const int64_t ystride = tick_stride(cell, kTextHeight + 6);
  for (int64_t row = 0; row < grid.rows; ++row) {
    for (int64_t col = 0; col < grid.cols; ++col) {
      const int slot_x = static_cast<int>(left + col * (slot_w + kMapGap));
      const int x = slot_x + static_cast<int>(slot_w - map_w) / 2;
      const int y = static_cast<int>(top + row * (map_h + kMapGap + title_band));
      layout.map_origin.push_back({x, y});
      add_frame(figure.marks, x, y, w, h);
      if (!options.titles.empty()) {
        figure.texts.push_back(make_text(options.titles[row * grid.cols + col], x + w / 2,
                                         y - kLabelGap - kTextDescent - kTextHeight / 2,
                                         Align::Middle));
      }
      if (col == 0) {  // y ticks and label on the left of the grid only, as d2l's sharey
        const int tick_x = x - 1 - kTickLength;
        for (int64_t i = 0; i < grid.num_queries; i += ystride) {
          const int cy = y + static_cast<int>(i) * c + c / 2;
          figure.marks.push_back({tick_x, cy, kTickLength, 1});
          figure.texts.push_back(make_text(options.yticklabels.empty()
                                               ? std::to_string(i)
                                               : options.yticklabels[static_cast<size_t>(i)],
                                           tick_x - kTickLabelGap, cy, Align::End));
        }
        if (!ylabel.empty()) {
          const int label_x = tick_x - kTickLabelGap - static_cast<int>(ytick_w) - kLabelGap;
          // Vertical, its descenders face the tick labels: keep them kLabelGap away.
          figure.texts.push_back(
              ylabel_vertical ? make_text(options.ylabel, label_x - kTextDescent - kTextHeight / 2,
                                          y + h / 2, Align::Middle, true)
                              : make_text(options.ylabel, label_x, y + h / 2, Align::End));
        }
      }
      if (row == grid.rows - 1) {  // x ticks and label under the bottom row only (sharex)
        const int tick_y = y + h + 1;
        const int label_y = tick_y + kTickLength + kTickLabelGap + kTextHeight / 2;
        for (int64_t j = 0; j < grid.num_keys; j += xstride) {
          const int cx = x + static_cast<int>(j) * c + c / 2;
          figure.marks.push_back({cx, tick_y, 1, kTickLength});
          const std::string label = options.xticklabels.empty()
                                        ? std::to_string(j)
                                        : options.xticklabels[static_cast<size_t>(j)];
          if (xticks_vertical) {  // its top end just under the tick
            const int len = text_width(printable(label), kTextScale);
            figure.texts.push_back(
                make_text(label, cx, label_y - kTextHeight / 2 + len / 2, Align::Middle, true));
          } else {
            figure.texts.push_back(make_text(label, cx, label_y, Align::Middle));
          }
        }
        if (!xlabel.empty()) {
          const int band = static_cast<int>(xtick_band);
          figure.texts.push_back(make_text(
              options.xlabel, x + w / 2,
              label_y - kTextHeight / 2 + band + kLabelGap + kTextHeight / 2, Align::Middle));
        }
      }
    }
  }

  const auto [bx, by, bw, bh] = layout.colorbar;
  add_frame(figure.marks, bx, by, bw, bh);
  for (int k = 0; k < kColorbarTicks; ++k) {
    const int ty = by + bh - 1 - k * (bh - 1) / (kColorbarTicks - 1);
    figure.colorbar_tick_y.push_back(ty);
    figure.marks.push_back({bx + bw + 1, ty, kTickLength, 1});
  }
  return figure;
}

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

// The colour bar's labels: lo at the bottom tick to hi at the top one.
void add_colorbar_labels(Figure& figure, const ColorScale& scale) {
  const auto [bx, by, bw, bh] = figure.layout.colorbar;
  for (int k = 0; k < kColorbarTicks; ++k) {
    double value = scale.lo + (scale.hi - scale.lo) * k / (kColorbarTicks - 1);
    if (std::abs(value) < 1e-12 * (scale.hi - scale.lo)) value = 0.0;  // no "-0.00" for zero
    figure.texts.push_back(make_text(colorbar_label(value, scale),
                                     bx + bw + 1 + kTickLength + kTickLabelGap,
                                     figure.colorbar_tick_y[k], Align::Start));
  }
}

// ---- the data -------------------------------------------------------------------

// The values, the keep flags (all true without a mask) and the colour scale.
struct HeatmapData {
  std::vector<double> values;
  std::vector<bool> keep;
  ColorScale scale;
};

std::string cell_name(const Grid& grid, int64_t index) {
  const int64_t per_map = grid.num_queries * grid.num_keys;
  const int64_t m = index / per_map, i = index % per_map / grid.num_keys, j = index % grid.num_keys;
  return "map " + std::to_string(m) + ", query " + std::to_string(i) + ", key " + std::to_string(j);
}

HeatmapData read_data(const Tensor& matrices, const HeatmapOptions& options) {
  const Shape& shape = matrices.shape();
  const Grid grid = grid_of(shape, kOp);
  HeatmapData data;
  data.values = matrices.to_vector();
  data.keep.assign(data.values.size(), true);
  if (options.keep_mask.defined()) {
    const Tensor& mask = options.keep_mask;
    AG_CHECK(mask.dtype() == kBool, kOp,
             std::string("keep_mask must be bool, got ") + dtype_name(mask.dtype()) + " " +
                 shape_str(mask.shape()) + " (matrices " + shape_str(shape) + ")");
    AG_CHECK(broadcasts_to(mask.shape(), shape), kOp,
             "keep_mask " + shape_str(mask.shape()) + " does not broadcast to the matrices " +
                 shape_str(shape));
    const std::vector<double> keep = broadcast_to(mask.detach(), shape).to_vector();
    for (size_t k = 0; k < keep.size(); ++k) data.keep[k] = keep[k] != 0.0;
  }
  std::vector<double> kept;
  kept.reserve(data.values.size());
  for (size_t k = 0; k < data.values.size(); ++k) {
    if (!data.keep[k]) continue;
    AG_CHECK(std::isfinite(data.values[k]), kOp,
             "non-finite value " + number_str(data.values[k]) + " at " +
                 cell_name(grid, static_cast<int64_t>(k)) + " of shape " + shape_str(shape) +
                 " (mask it with keep_mask to draw it hatched)");
    kept.push_back(data.values[k]);
  }
  data.scale = fit_scale(kept, options.colormap);
  if (options.vmin) data.scale.lo = *options.vmin;
  if (options.vmax) data.scale.hi = *options.vmax;
  AG_CHECK(
      std::isfinite(data.scale.lo) && std::isfinite(data.scale.hi) && data.scale.lo < data.scale.hi,
      kOp,
      "vmin (" + number_str(data.scale.lo) + ") must be finite and below vmax (" +
          number_str(data.scale.hi) + ") (shape " + shape_str(shape) + ")");
  return data;
}

// Black or white, whichever reads on a cell of this colour (as the viewer does).
Rgb text_color_on(Rgb background) {
  const double luminance = 0.299 * background.r + 0.587 * background.g + 0.114 * background.b;
  return luminance > 140.0 ? kBlack : kWhite;
}

// The value printed inside a cell: 2x when it fits, else 1x, else nothing.
std::optional<Text> value_text(double value, Rgb background, int cx, int cy, int cell) {
  const std::string text = format("%.2f", value);
  for (int scale : {2, 1}) {
    if (text_width(text, scale) + 2 <= cell && kGlyphHeight * scale + 2 <= cell) {
      return Text{text, text, cx, cy, Align::Middle, scale, false, text_color_on(background)};
    }
  }
  return std::nullopt;
}

// ---- PNG ----------------------------------------------------------------------

class Canvas {
 public:
  Canvas(int width, int height)
      : image_{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 255)} {}

  void set(int x, int y, Rgb rgb) {
    if (x < 0 || y < 0 || x >= image_.width || y >= image_.height) return;
    uint8_t* p = &image_.rgb[(static_cast<size_t>(y) * image_.width + x) * 3];
    p[0] = rgb.r;
    p[1] = rgb.g;
    p[2] = rgb.b;
  }
  void fill(const Rect& r, Rgb rgb) {
    for (int y = r.y; y < r.y + r.h; ++y) {
      for (int x = r.x; x < r.x + r.w; ++x) set(x, y, rgb);
    }
  }
  // Stripes at phase 0 on the cell's centre pixel, which stays kHatchBase.
  // With k periods per cell, a pixel's phase is ((dx + dy) * k mod cell) / cell.
  void hatch(const Rect& r, int cx, int cy) {
    const int k = hatch_periods_per_cell(r.w);
    for (int y = r.y; y < r.y + r.h; ++y) {
      for (int x = r.x; x < r.x + r.w; ++x) {
        const int phase = (((x - cx) + (y - cy)) * k % r.w + r.w) % r.w;
        set(x, y, phase * 8 >= 5 * r.w ? kHatchStripe : kHatchBase);
      }
    }
  }
  // stb_easy_font turns text into axis-aligned quads of 1-pixel strokes at
  // (0, 0); each is scaled and placed (or turned a quarter for vertical text).
  void text(const Text& t) {
    std::vector<char> quads(t.ascii.size() * 1024);  // stb needs ~270 bytes a glyph
    const int count = stb_easy_font_print(0, 0, const_cast<char*>(t.ascii.c_str()), nullptr,
                                          quads.data(), static_cast<int>(quads.size()));
    const int s = t.scale, len = text_width(t.ascii, s), half_h = kGlyphHeight * s / 2;
    const int start = t.align == Align::Start ? 0 : t.align == Align::Middle ? len / 2 : len;
    for (int q = 0; q < count; ++q) {
      // A quad is 4 vertices of 16 bytes (x, y, z floats, 4 colour bytes);
      // vertex 0 is its top-left corner, vertex 2 its bottom-right one.
      float corner[2][2];
      std::memcpy(corner[0], &quads[q * 64], sizeof corner[0]);
      std::memcpy(corner[1], &quads[q * 64 + 32], sizeof corner[1]);
      const int x0 = static_cast<int>(corner[0][0]) * s, y0 = static_cast<int>(corner[0][1]) * s;
      const int x1 = static_cast<int>(corner[1][0]) * s, y1 = static_cast<int>(corner[1][1]) * s;
      if (t.vertical) {  // text x runs up the image from y + len / 2
        fill({t.x - half_h + y0, t.y + len / 2 - x1, y1 - y0, x1 - x0}, t.color);
      } else {
        fill({t.x - start + x0, t.y - half_h + y0, x1 - x0, y1 - y0}, t.color);
      }
    }
  }
  const Image& image() const { return image_; }

 private:
  Image image_;
};

Image raster_png(const Figure& figure, const HeatmapData& data, const HeatmapOptions& options) {
  const HeatmapLayout& layout = figure.layout;
  Canvas canvas(layout.width, layout.height);
  const int c = layout.cell_size;
  size_t k = 0;  // row-major over maps, queries, keys
  for (size_t m = 0; m < layout.map_origin.size(); ++m) {
    for (int64_t i = 0; i < layout.num_queries; ++i) {
      for (int64_t j = 0; j < layout.num_keys; ++j, ++k) {
        const auto [cx, cy] = layout.cell_center(static_cast<int64_t>(m), i, j);
        const Rect cell{layout.map_origin[m][0] + static_cast<int>(j) * c,
                        layout.map_origin[m][1] + static_cast<int>(i) * c, c, c};
        if (!data.keep[k]) {
          canvas.hatch(cell, cx, cy);
          continue;
        }
        const Rgb rgb = data.scale(data.values[k]);
        canvas.fill(cell, rgb);
        if (options.show_values) {
          if (auto text = value_text(data.values[k], rgb, cx, cy, c)) canvas.text(*text);
        }
      }
    }
  }
  const auto [bx, by, bw, bh] = layout.colorbar;
  for (int y = 0; y < bh; ++y) {
    const double t = bh > 1 ? 1.0 - static_cast<double>(y) / (bh - 1) : 1.0;
    canvas.fill({bx, by + y, bw, 1}, colormap_rgb(data.scale.map, t));
  }
  for (const Rect& mark : figure.marks) canvas.fill(mark, kBlack);
  for (const Text& text : figure.texts) canvas.text(text);
  return canvas.image();
}

std::vector<uint8_t> encode_png(const Image& image) {
  std::vector<uint8_t> bytes;
  const auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  };
  const int ok = stbi_write_png_to_func(append, &bytes, image.width, image.height, 3,
                                        image.rgb.data(), image.width * 3);
  AG_CHECK(ok != 0, kOp,
           "cannot encode a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
               " PNG");
  return bytes;
}

// ---- SVG ----------------------------------------------------------------------

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 has no control characters but tab and newline.
        out += (static_cast<unsigned char>(ch) < 32 && ch != '\t' && ch != '\n') ? '?' : ch;
    }
  }
  return out;
}

std::string hex(Rgb rgb) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", rgb.r, rgb.g, rgb.b);
  return buffer;
}

std::string svg_path(const Rect& r) {
  return "M" + std::to_string(r.x) + "," + std::to_string(r.y) + "h" + std::to_string(r.w) + "v" +
         std::to_string(r.h) + "h" + std::to_string(-r.w) + "z";
}

// A font size whose capitals are about as tall as stb_easy_font's at `scale`.
int svg_font_size(int scale) {
  return 9 * scale;
}

void svg_text(std::string& out, const Text& t) {
  const char* anchor = t.align == Align::Start    ? "start"
                       : t.align == Align::Middle ? "middle"
                                                  : "end";
  // SVG places text by its baseline: 0.35 em below the centre line puts the
  // middle of the capitals at t.y.
  const int size = svg_font_size(t.scale);
  const std::string x = std::to_string(t.x), y = std::to_string(t.y);
  out += "<text x=\"" + x + "\" y=\"" + y + "\" dy=\"" + format("%.1f", size * 0.35) +
         "\" font-size=\"" + std::to_string(size) + "\" text-anchor=\"" + anchor + "\"";
  if (t.vertical) out += " transform=\"rotate(-90 " + x + " " + y + ")\"";
  if (t.color != kBlack) out += " fill=\"" + hex(t.color) + "\"";
  out += ">" + xml_escape(t.utf8) + "</text>\n";
}

std::string svg_document(const Figure& figure, const HeatmapData& data,
                         const HeatmapOptions& options) {
  const HeatmapLayout& layout = figure.layout;
  const std::string w = std::to_string(layout.width), h = std::to_string(layout.height);
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
      w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h +
      "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
  // The PNG's hatch: a whole number of periods per cell, stripes 3/8 of a
  // period wide; the corner pieces keep the stripes unbroken across tiles.
  const double period =
      static_cast<double>(layout.cell_size) / hatch_periods_per_cell(layout.cell_size);
  const std::string p = format("%g", period);
  out += "<defs>\n<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"" + p +
         "\" height=\"" + p + "\">\n<path d=\"M0,0H" + p + "V" + p + "H0z\" fill=\"" +
         hex(kHatchBase) + "\"/>\n<path d=\"M-1,1L1,-1M0," + p + "L" + p + ",0M" +
         format("%g", period - 1) + "," + format("%g", period + 1) + "L" +
         format("%g", period + 1) + "," + format("%g", period - 1) + "\" stroke=\"" +
         hex(kHatchStripe) + "\" stroke-width=\"" +
         format("%.2f", period * 3 / 8 / std::sqrt(2.0)) + "\"/>\n</pattern>\n";
  // Top (offset 0) is hi, bottom is lo; 33 stops follow the maps' anchors.
  out += "<linearGradient id=\"colorbar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
  constexpr int kStops = 33;
  for (int k = 0; k < kStops; ++k) {
    const double t = static_cast<double>(k) / (kStops - 1);
    out += "<stop offset=\"" + format("%.4f", t) + "\" stop-color=\"" +
           hex(colormap_rgb(data.scale.map, t)) + "\"/>\n";
  }
  out += "</linearGradient>\n</defs>\n";
  out += "<path d=\"" + svg_path({0, 0, layout.width, layout.height}) + "\" fill=\"#ffffff\"/>\n";

  const int c = layout.cell_size;
  std::string values;  // drawn after the cells, and transparent to the mouse
  size_t k = 0;
  for (size_t m = 0; m < layout.map_origin.size(); ++m) {
    for (int64_t i = 0; i < layout.num_queries; ++i) {
      for (int64_t j = 0; j < layout.num_keys; ++j, ++k) {
        const int x = layout.map_origin[m][0] + static_cast<int>(j) * c;
        const int y = layout.map_origin[m][1] + static_cast<int>(i) * c;
        const std::string where = "query " + std::to_string(i) + ", key " + std::to_string(j);
        out += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
               std::to_string(c) + "\" height=\"" + std::to_string(c) + "\" fill=\"";
        if (!data.keep[k]) {
          out += "url(#hatch)\"><title>" + where + ": masked</title></rect>\n";
          continue;
        }
        const Rgb rgb = data.scale(data.values[k]);
        out += hex(rgb) + "\"><title>" + where + ": " + format("%.6g", data.values[k]) +
               "</title></rect>\n";
        if (options.show_values) {
          const auto [cx, cy] = layout.cell_center(static_cast<int64_t>(m), i, j);
          if (auto text = value_text(data.values[k], rgb, cx, cy, c)) svg_text(values, *text);
        }
      }
    }
  }
  if (!values.empty()) out += "<g pointer-events=\"none\">\n" + values + "</g>\n";
  const auto [bx, by, bw, bh] = layout.colorbar;
  out += "<path d=\"" + svg_path({bx, by, bw, bh}) + "\" fill=\"url(#colorbar)\"/>\n";
  out += "<path fill=\"#000000\" d=\"";
  for (const Rect& mark : figure.marks) out += svg_path(mark);
  out += "\"/>\n";
  for (const Text& text : figure.texts) svg_text(out, text);
  out += "</svg>\n";
  return out;
}

// ".png" or ".svg" (any case), else an error naming both.
std::string extension_of(const std::string& path, const Shape& shape) {
  const size_t dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  AG_CHECK(ext == ".png" || ext == ".svg", kOp,
           "cannot tell the format of '" + path + "' (shape " + shape_str(shape) +
               "): the extension must be .png or .svg");
  return ext;
}

}  // namespace

std::array<int, 2> HeatmapLayout::cell_center(int64_t m, int64_t i, int64_t j) const {
  AG_CHECK(m >= 0 && m < static_cast<int64_t>(map_origin.size()) && i >= 0 && i < num_queries &&
               j >= 0 && j < num_keys,
           "HeatmapLayout::cell_center",
           "cell (map " + std::to_string(m) + ", query " + std::to_string(i) + ", key " +
               std::to_string(j) + ") is outside " + std::to_string(map_origin.size()) +
               " maps of " + std::to_string(num_queries) + "x" + std::to_string(num_keys));
  return {map_origin[m][0] + static_cast<int>(j) * cell_size + cell_size / 2,
          map_origin[m][1] + static_cast<int>(i) * cell_size + cell_size / 2};
}

HeatmapLayout heatmap_layout(const Shape& matrices_shape, const HeatmapOptions& options) {
  return make_figure(matrices_shape, options, "heatmap_layout").layout;
}

void show_heatmaps(const Tensor& matrices, const std::string& path, const HeatmapOptions& options) {
  AG_CHECK(matrices.defined(), kOp, "matrices is an undefined tensor");
  const Shape& shape = matrices.shape();
  AG_CHECK(is_floating(matrices.dtype()), kOp,
           std::string("expected float32 or float64 matrices, got ") +
               dtype_name(matrices.dtype()) + " of shape " + shape_str(shape));
  Figure figure = make_figure(shape, options, kOp);
  const std::string ext = extension_of(path, shape);
  const HeatmapData data = read_data(matrices, options);
  add_colorbar_labels(figure, data.scale);

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  AG_CHECK(file.is_open(), kOp,
           "cannot write '" + path + "' (shape " + shape_str(shape) + "): " + std::strerror(errno));
  if (ext == ".png") {
    const std::vector<uint8_t> bytes = encode_png(raster_png(figure, data, options));
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  } else {
    file << svg_document(figure, data, options);
  }
  file.close();
  AG_CHECK(!file.fail(), kOp, "writing '" + path + "' (shape " + shape_str(shape) + ") failed");
}

}  // namespace ag::viz
