// show_heatmaps(): d2l's attention heatmaps as a PNG or an SVG.
//
// One Figure (heatmap_internal.h) is computed here from the shape, the
// options and the label font's metrics, then drawn by raster_png()
// (heatmap_png.cpp) or svg_document() (heatmap_svg.cpp). heatmap_layout() is
// the public part of that Figure, so tests can find each cell's centre in
// either file.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "heatmap_internal.h"

namespace ag::viz {

namespace detail {

int hatch_periods_per_cell(int cell) {
  return std::max(1, (cell + kHatchPeriod / 2) / kHatchPeriod);
}

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}

void add_frame(std::vector<Rect>& marks, int x, int y, int w, int h) {
  marks.push_back({x - 1, y - 1, w + 2, 1});
  marks.push_back({x - 1, y + h, w + 2, 1});
  marks.push_back({x - 1, y, 1, h});
  marks.push_back({x + w, y, 1, h});
}

// Black or white, whichever reads on a cell of this colour (as the viewer does).
Rgb text_color_on(Rgb background) {
  const double luminance = 0.299 * background.r + 0.587 * background.g + 0.114 * background.b;
  return luminance > 140.0 ? kBlack : kWhite;
}

std::optional<Text> value_text(const LabelFont& font, double value, Rgb background, int cx, int cy,
                               int cell) {
  const std::string text = format("%.2f", value);
  for (int size : {kLabelSize, kSmallLabelSize}) {
    if (font.width(text, size) + 2 <= cell && font.cap_height(size) + 2 <= cell) {
      return Text{text, cx, cy, Align::Middle, size, false, text_color_on(background)};
    }
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

using namespace detail;

constexpr int kMinCellSize = 4;
constexpr int kMaxCellSize = 256;
constexpr int64_t kMaxImageSide = 16384;

constexpr int kMargin = 12;              // around the whole figure
constexpr int kLabelGap = 6;             // between an axis label and its tick labels
constexpr int kMapGap = 24;              // between neighbouring maps (and their titles)
constexpr int kColorbarGap = 24;         // between the grid and the colour bar
constexpr int kMinColorbarHeight = 100;  // room for its tick labels under one-row maps

Text make_text(const std::string& text, int x, int y, Align align, bool vertical = false) {
  return {text, x, y, align, kLabelSize, vertical, kBlack};
}

// ---- the figure -----------------------------------------------------------------

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

Figure make_figure(const Shape& shape, const HeatmapOptions& options, const LabelFont& font,
                   const char* op) {
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
  // Every width and height of text comes from the font that draws it.
  const auto text_width = [&font](const std::string& text) { return font.width(text, kLabelSize); };
  const int text_height = font.cap_height(kLabelSize);
  const int text_descent = font.descent(kLabelSize);
  const int64_t map_w = grid.num_keys * cell, map_h = grid.num_queries * cell;
  int64_t title_w = 0;
  for (const std::string& title : options.titles) {
    title_w = std::max<int64_t>(title_w, text_width(title));
  }
  const std::string &xlabel = options.xlabel, &ylabel = options.ylabel;
  const int64_t xlabel_w = text_width(xlabel);
  const int64_t ylabel_len = text_width(ylabel);
  // Written up the side of the map, as matplotlib does, when it fits there;
  // across, to the left, when the map is too short for it (e.g. one query).
  const bool ylabel_vertical = ylabel_len <= map_h;
  const int64_t ylabel_band =
      ylabel.empty() ? 0 : (ylabel_vertical ? text_height + text_descent : ylabel_len) + kLabelGap;
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
  const auto widest = [&text_width](const std::vector<std::string>& labels, int64_t count) {
    if (labels.empty()) return text_width(std::to_string(count - 1));
    int64_t w = 0;
    for (const std::string& label : labels) {
      w = std::max<int64_t>(w, text_width(label));
    }
    return static_cast<int>(w);
  };
  const int64_t ytick_w = widest(options.yticklabels, grid.num_queries);
  const int64_t xtick_w = widest(options.xticklabels, grid.num_keys);
  const bool xticks_vertical =
      !options.xticklabels.empty() && xtick_w + text_height / 2 > options.cell_size;
  const int64_t xtick_band = xticks_vertical ? xtick_w : text_height;  // height under the ticks

  // Each map sits centred in a slot wide enough for its title and x label.
  const int64_t slot_w = std::max({map_w, title_w, xlabel_w});
  const int64_t title_band = options.titles.empty() ? 0 : text_height + text_descent + kLabelGap;
  const int64_t left = kMargin + ylabel_band + ytick_w + kTickLabelGap + kTickLength;
  const int64_t top = kMargin + title_band;
  const int64_t grid_right = left + grid.cols * slot_w + (grid.cols - 1) * kMapGap;
  const int64_t grid_bottom = top + grid.rows * map_h + (grid.rows - 1) * (kMapGap + title_band);
  const int64_t below_grid = kTickLength + kTickLabelGap + xtick_band +
                             (xlabel.empty() ? 0 : kLabelGap + text_height) + kMargin;
  const int64_t bar_x = grid_right + kColorbarGap;
  const int64_t bar_h = std::max<int64_t>(grid_bottom - top, kMinColorbarHeight);
  const int64_t width = bar_x + colorbar_band_width(font) + kMargin;
  const int64_t height =
      std::max(grid_bottom + below_grid, top + bar_h + text_height / 2 + kMargin);
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

  const int w = static_cast<int>(map_w), h = static_cast<int>(map_h), c = options.cell_size;
  const int64_t xstride =
      tick_stride(cell, xticks_vertical ? text_height + 6 : xtick_w + text_height / 2);
  const int64_t ystride = tick_stride(cell, text_height + 6);
  for (int64_t row = 0; row < grid.rows; ++row) {
    for (int64_t col = 0; col < grid.cols; ++col) {
      const int slot_x = static_cast<int>(left + col * (slot_w + kMapGap));
      const int x = slot_x + static_cast<int>(slot_w - map_w) / 2;
      const int y = static_cast<int>(top + row * (map_h + kMapGap + title_band));
      layout.map_origin.push_back({x, y});
      add_frame(figure.marks, x, y, w, h);
      if (!options.titles.empty()) {
        figure.texts.push_back(make_text(options.titles[row * grid.cols + col], x + w / 2,
                                         y - kLabelGap - text_descent - text_height / 2,
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
              ylabel_vertical ? make_text(options.ylabel, label_x - text_descent - text_height / 2,
                                          y + h / 2, Align::Middle, true)
                              : make_text(options.ylabel, label_x, y + h / 2, Align::End));
        }
      }
      if (row == grid.rows - 1) {  // x ticks and label under the bottom row only (sharex)
        const int tick_y = y + h + 1;
        const int label_y = tick_y + kTickLength + kTickLabelGap + text_height / 2;
        for (int64_t j = 0; j < grid.num_keys; j += xstride) {
          const int cx = x + static_cast<int>(j) * c + c / 2;
          figure.marks.push_back({cx, tick_y, 1, kTickLength});
          const std::string label = options.xticklabels.empty()
                                        ? std::to_string(j)
                                        : options.xticklabels[static_cast<size_t>(j)];
          if (xticks_vertical) {  // its top end just under the tick
            const int len = text_width(label);
            figure.texts.push_back(
                make_text(label, cx, label_y - text_height / 2 + len / 2, Align::Middle, true));
          } else {
            figure.texts.push_back(make_text(label, cx, label_y, Align::Middle));
          }
        }
        if (!xlabel.empty()) {
          const int band = static_cast<int>(xtick_band);
          figure.texts.push_back(make_text(
              options.xlabel, x + w / 2,
              label_y - text_height / 2 + band + kLabelGap + text_height / 2, Align::Middle));
        }
      }
    }
  }

  add_colorbar(figure, static_cast<int>(bar_x), static_cast<int>(top), static_cast<int>(bar_h));
  return figure;
}

// ---- the data -------------------------------------------------------------------

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
  return make_figure(matrices_shape, options, LabelFont(options.font), "heatmap_layout").layout;
}

void show_heatmaps(const Tensor& matrices, const std::string& path, const HeatmapOptions& options) {
  AG_CHECK(matrices.defined(), kOp, "matrices is an undefined tensor");
  const Shape& shape = matrices.shape();
  AG_CHECK(is_floating(matrices.dtype()), kOp,
           std::string("expected float32 or float64 matrices, got ") +
               dtype_name(matrices.dtype()) + " of shape " + shape_str(shape));
  const LabelFont font(options.font);
  Figure figure = make_figure(shape, options, font, kOp);
  const std::string ext = extension_of(path, shape);
  const HeatmapData data = read_data(matrices, options);
  add_colorbar_labels(figure, data.scale);

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  AG_CHECK(file.is_open(), kOp,
           "cannot write '" + path + "' (shape " + shape_str(shape) + "): " + std::strerror(errno));
  if (ext == ".png") {
    const std::vector<uint8_t> bytes = encode_png(raster_png(figure, data, options, font));
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  } else {
    file << svg_document(figure, data, options, font);
  }
  file.close();
  AG_CHECK(!file.fail(), kOp, "writing '" + path + "' (shape " + shape_str(shape) + ") failed");
}

}  // namespace ag::viz
