// The PNG heatmaps' text: DejaVu Sans through stb_truetype, anti-aliased and
// measured by the same font, so that labels stay inside the image, off the
// cells and clear of each other; the bitmap font when the font file is missing.
#include <algorithm>
#include <filesystem>

#include "attograd/viz.h"
#include "test_util.h"

namespace ag {
namespace {

using ag::testing::source_path;
using viz::Rgb;

// scripts/install_deps.sh installs it (fonts-dejavu-core) for the tests.
const std::string kDejaVu = viz::HeatmapOptions().font;
constexpr int kTickLength = 4;  // heatmap_internal.h: tick marks stick out this far

// The g2p picture: letters across, phonemes down, labels on every axis.
viz::HeatmapOptions phoneme_options() {
  viz::HeatmapOptions options;
  options.xlabel = "Source";
  options.ylabel = "Output";
  options.xticklabels = {"k", "n", "i", "f", "e", "<eos>"};
  options.yticklabels = {"N", "AY", "NG", "ZH", "WWW"};
  options.vmin = 0.0;
  options.vmax = 1.0;
  return options;
}

Tensor weights() {
  manual_seed(4);
  return softmax(rand({5, 6}), -1);
}

viz::Image draw(const Tensor& maps, const viz::HeatmapOptions& options, const std::string& name) {
  const std::string path = testing::scratch_file("viz_font", name);
  viz::show_heatmaps(maps, path, options);
  viz::Image image = viz::read_png(path);
  std::filesystem::remove(path);
  return image;
}

bool is_paper(Rgb c) {
  return c == Rgb{255, 255, 255};
}

// Pixels of the y tick labels' column (left of the tick marks, level with
// the map) by kind: ink (dark), grey (neither ink nor paper), paper.
struct Levels {
  int ink = 0, grey = 0;
};
Levels tick_label_levels(const viz::Image& image, const viz::HeatmapLayout& layout) {
  Levels levels;
  const auto [x0, y0] = layout.map_origin[0];
  for (int y = y0; y < y0 + static_cast<int>(layout.num_queries) * layout.cell_size; ++y) {
    for (int x = 0; x < x0 - 1 - kTickLength; ++x) {
      const Rgb c = image.at(x, y);
      levels.ink += c.g < 64;
      levels.grey += c.g >= 64 && c.g < 255;
    }
  }
  return levels;
}

TEST(HeatmapFont, LabelsAreAntiAliased) {
  ASSERT_TRUE(std::filesystem::exists(kDejaVu)) << kDejaVu << ": run scripts/install_deps.sh";
  const viz::HeatmapOptions options = phoneme_options();
  const viz::Image image = draw(weights(), options, "aa.png");
  const Levels levels = tick_label_levels(image, viz::heatmap_layout(weights().shape(), options));
  EXPECT_GT(levels.ink, 50);
  // Edges between ink and paper: intermediate greys, as many as the ink or more.
  EXPECT_GT(levels.grey, levels.ink / 2);
}

TEST(HeatmapFont, MissingFontFallsBackToTheBitmapFont) {
  viz::HeatmapOptions options = phoneme_options();
  options.font = testing::scratch_file("viz_font", "no-such-font.ttf");
  const viz::Image image = draw(weights(), options, "fallback.png");
  const viz::HeatmapLayout layout = viz::heatmap_layout(weights().shape(), options);
  EXPECT_EQ(image.width, layout.width);
  const Levels levels = tick_label_levels(image, layout);
  EXPECT_GT(levels.ink, 50);
  EXPECT_EQ(levels.grey, 0);  // 1-bit strokes: ink or paper
  // Measured with the bitmap font, not DejaVu: a narrower "WWW".
  EXPECT_LT(layout.map_origin[0][0],
            viz::heatmap_layout(weights().shape(), phoneme_options()).map_origin[0][0]);
  // A file that is not a font falls back too.
  options.font = source_path("tests/test_viz_font.cpp");
  EXPECT_EQ(tick_label_levels(draw(weights(), options, "not-a-font.png"), layout).grey, 0);
}

// Every cell is its colour alone, and a 3-pixel border of the image is paper:
// no label lands on a cell or is cut off at an edge. (Not the whole 12-pixel
// margin: the colour bar's top label is centred on the bar's top edge, half
// of it in the margin above.)
void expect_labels_inside_and_off_cells(const Tensor& maps, const viz::HeatmapOptions& options) {
  const viz::Image image = draw(maps, options, "inside.png");
  const viz::HeatmapLayout layout = viz::heatmap_layout(maps.shape(), options);
  const viz::ColorScale scale{options.colormap, 0.0, 1.0};
  const std::vector<double> values = maps.to_vector();
  const int c = layout.cell_size;
  size_t k = 0;
  for (size_t m = 0; m < layout.map_origin.size(); ++m) {
    for (int64_t i = 0; i < layout.num_queries; ++i) {
      for (int64_t j = 0; j < layout.num_keys; ++j, ++k) {
        const int x0 = layout.map_origin[m][0] + static_cast<int>(j) * c;
        const int y0 = layout.map_origin[m][1] + static_cast<int>(i) * c;
        int wrong = 0;
        for (int y = y0; y < y0 + c; ++y) {
          for (int x = x0; x < x0 + c; ++x) wrong += image.at(x, y) != scale(values[k]);
        }
        EXPECT_EQ(wrong, 0) << "map " << m << ", cell " << i << ", " << j;
      }
    }
  }
  int inked = 0;
  for (int y = 0; y < layout.height; ++y) {
    for (int x = 0; x < layout.width; ++x) {
      const bool border = x < 3 || y < 3 || x >= layout.width - 3 || y >= layout.height - 3;
      inked += border && !is_paper(image.at(x, y));
    }
  }
  EXPECT_EQ(inked, 0) << "label pixels in the image's border";
}

TEST(HeatmapFont, LabelsStayInsideTheImageAndOffTheCells) {
  expect_labels_inside_and_off_cells(weights(), phoneme_options());
  viz::HeatmapOptions options = phoneme_options();
  options.yticklabels = {"ZH"};  // one query: the y label goes across
  options.xticklabels = {"gypsy", "y", "j", "q", "Q", "g"};
  expect_labels_inside_and_off_cells(softmax(rand({1, 6}), -1), options);
  options = {};
  options.titles = {"block 0, head 0", "Wj", "g", "y"};  // titles wider than a map
  options.vmin = 0.0;
  options.vmax = 1.0;
  options.cell_size = 8;
  expect_labels_inside_and_off_cells(softmax(rand({2, 2, 3, 4}), -1), options);
}

// Columns (or rows) holding ink in `image` within the rectangle.
std::pair<int, int> ink_extent(const viz::Image& image, int x0, int y0, int x1, int y1,
                               bool columns) {
  int lo = 1 << 30, hi = -1;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      if (is_paper(image.at(x, y))) continue;
      lo = std::min(lo, columns ? x : y);
      hi = std::max(hi, columns ? x : y);
    }
  }
  return {lo, hi};
}

// The axis labels keep clear of the tick labels: drawn with and without the
// axis label, the tick labels' ink (in the image without) ends at least a
// pixel before the axis label's (what the image with it adds) begins.
TEST(HeatmapFont, AxisLabelsClearTheTickLabels) {
  const Tensor maps = weights();
  const viz::HeatmapOptions with = phoneme_options();
  viz::HeatmapOptions without = with;
  without.xlabel.clear();
  without.ylabel.clear();
  const viz::Image a = draw(maps, with, "with.png"), b = draw(maps, without, "without.png");
  const viz::HeatmapLayout la = viz::heatmap_layout(maps.shape(), with);
  const viz::HeatmapLayout lb = viz::heatmap_layout(maps.shape(), without);
  const int dx = la.map_origin[0][0] - lb.map_origin[0][0];
  ASSERT_EQ(la.map_origin[0][1], lb.map_origin[0][1]);
  const int map_x = lb.map_origin[0][0], map_y = lb.map_origin[0][1];
  const int map_w = 6 * lb.cell_size, map_h = 5 * lb.cell_size;

  // Left of the map: the y label's ink is what `a` adds to `b` shifted by dx.
  const auto added = [&](int x, int y) {
    const Rgb c = a.at(x, y);
    return !is_paper(c) && (x < dx || y >= lb.height || c != b.at(x - dx, y));
  };
  int ylabel_hi = -1;
  for (int y = map_y; y < map_y + map_h; ++y) {
    for (int x = 0; x < dx + map_x - 1 - kTickLength; ++x) {
      if (added(x, y)) ylabel_hi = std::max(ylabel_hi, x);
    }
  }
  const auto [yticks_lo, yticks_hi] =
      ink_extent(b, 0, map_y, map_x - 1 - kTickLength, map_y + map_h, true);
  ASSERT_GE(ylabel_hi, 0);
  ASSERT_GE(yticks_hi, 0);
  EXPECT_LT(ylabel_hi + 1, yticks_lo + dx);
  // Under the map: the x label adds rows below the tick labels.
  const int below = map_y + map_h + 1 + kTickLength;
  const auto [xticks_lo, xticks_hi] = ink_extent(b, map_x, below, map_x + map_w, lb.height, false);
  int xlabel_lo = la.height;
  for (int y = below; y < la.height; ++y) {
    for (int x = map_x; x < map_x + map_w; ++x) {
      if (added(x + dx, y)) xlabel_lo = std::min(xlabel_lo, y);
    }
  }
  ASSERT_GE(xticks_hi, xticks_lo);
  ASSERT_LT(xlabel_lo, la.height);
  EXPECT_LT(xticks_hi + 1, xlabel_lo);
}

}  // namespace
}  // namespace ag
