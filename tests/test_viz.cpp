// attograd_viz: colour maps, colour scales, and show_heatmaps() read back —
// every cell centre of the PNG and every cell <title> of the SVG is compared
// with the attention weights the library computed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attograd/viz.h"
#include "test_util.h"

namespace ag {
namespace {

using ::ag::testing::bools;
using ::ag::testing::lens;
using ::ag::testing::read_file;
using ::ag::testing::throws_error;
using viz::Colormap;
using viz::Rgb;

// A fresh path under the test's temporary directory, unique per test.
std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      ("attograd_viz_" + std::string(info->test_suite_name()) + "_" + info->name());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

double luminance(Rgb c) {
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
}

::testing::AssertionResult near_rgb(Rgb actual, Rgb expected, int tolerance) {
  if (std::abs(actual.r - expected.r) <= tolerance &&
      std::abs(actual.g - expected.g) <= tolerance && std::abs(actual.b - expected.b) <= tolerance)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "(" << int(actual.r) << ", " << int(actual.g) << ", " << int(actual.b) << ") vs ("
         << int(expected.r) << ", " << int(expected.g) << ", " << int(expected.b) << ")";
}

// ---- colour maps ------------------------------------------------------------------

TEST(ColormapTest, ViridisAndMagmaMatchMatplotlib) {
  // matplotlib's _viridis_data / _magma_data entries 0, 128 and 255, in bytes.
  EXPECT_EQ(viz::colormap_rgb(Colormap::Viridis, 0.0), (Rgb{68, 1, 84}));
  EXPECT_EQ(viz::colormap_rgb(Colormap::Viridis, 1.0), (Rgb{253, 231, 37}));
  EXPECT_TRUE(near_rgb(viz::colormap_rgb(Colormap::Viridis, 128 / 255.0), Rgb{33, 145, 140}, 1));
  EXPECT_EQ(viz::colormap_rgb(Colormap::Magma, 0.0), (Rgb{0, 0, 4}));
  EXPECT_EQ(viz::colormap_rgb(Colormap::Magma, 1.0), (Rgb{252, 253, 191}));
  EXPECT_TRUE(near_rgb(viz::colormap_rgb(Colormap::Magma, 128 / 255.0), Rgb{183, 55, 121}, 1));
  // Between anchors too: entry 100 of viridis is (0.166617, 0.463708, 0.558119).
  EXPECT_TRUE(near_rgb(viz::colormap_rgb(Colormap::Viridis, 100 / 255.0), Rgb{42, 118, 142}, 1));
}

TEST(ColormapTest, SequentialMapsGrowLighter) {
  for (Colormap map : {Colormap::Viridis, Colormap::Magma}) {
    double previous = -1.0;
    for (int k = 0; k <= 256; ++k) {
      const double l = luminance(viz::colormap_rgb(map, k / 256.0));
      EXPECT_GE(l, previous - 0.5) << viz::colormap_name(map) << " at " << k;  // 8-bit rounding
      previous = l;
    }
    EXPECT_GT(luminance(viz::colormap_rgb(map, 1.0)), luminance(viz::colormap_rgb(map, 0.0)) + 150);
  }
}

TEST(ColormapTest, DivergingIsBlueWhiteRed) {
  EXPECT_EQ(viz::colormap_rgb(Colormap::Diverging, 0.5), (Rgb{255, 255, 255}));
  EXPECT_EQ(viz::colormap_rgb(Colormap::Diverging, 0.0), (Rgb{0x21, 0x66, 0xAC}));
  EXPECT_EQ(viz::colormap_rgb(Colormap::Diverging, 1.0), (Rgb{0xB2, 0x18, 0x2B}));
  for (double t : {0.1, 0.3, 0.45}) {
    const Rgb c = viz::colormap_rgb(Colormap::Diverging, t);
    EXPECT_GT(c.b, c.r) << t;
  }
  for (double t : {0.55, 0.7, 0.9}) {
    const Rgb c = viz::colormap_rgb(Colormap::Diverging, t);
    EXPECT_GT(c.r, c.b) << t;
  }
  // A scale fitted to signed data puts 0 on white.
  const viz::ColorScale scale = viz::fit_scale({-0.3, 0.1, 2.0}, Colormap::Diverging);
  EXPECT_EQ(scale(0.0), (Rgb{255, 255, 255}));
}

TEST(ColormapTest, ClampsAndNan) {
  for (Colormap map : {Colormap::Viridis, Colormap::Magma, Colormap::Diverging}) {
    EXPECT_EQ(viz::colormap_rgb(map, -3.0), viz::colormap_rgb(map, 0.0));
    EXPECT_EQ(viz::colormap_rgb(map, 7.0), viz::colormap_rgb(map, 1.0));
    EXPECT_EQ(viz::colormap_rgb(map, NAN), viz::colormap_rgb(map, 0.0));
  }
}

TEST(ColormapTest, NamesRoundTrip) {
  for (Colormap map : {Colormap::Viridis, Colormap::Magma, Colormap::Diverging}) {
    EXPECT_EQ(viz::colormap_from_name(viz::colormap_name(map)), map);
  }
  EXPECT_STREQ(viz::colormap_name(Colormap::Viridis), "viridis");
  EXPECT_TRUE(throws_error([] { viz::colormap_from_name("jet"); },
                           {"colormap_from_name", "jet", "viridis", "magma", "diverging"}));
}

TEST(ColorScaleTest, FitScale) {
  viz::ColorScale s = viz::fit_scale({0.2, 0.9, 0.5}, Colormap::Viridis);
  EXPECT_EQ(s.map, Colormap::Viridis);
  EXPECT_DOUBLE_EQ(s.lo, 0.2);
  EXPECT_DOUBLE_EQ(s.hi, 0.9);
  EXPECT_DOUBLE_EQ(s.position(0.55), 0.5);
  EXPECT_DOUBLE_EQ(s.position(-4.0), 0.0);
  EXPECT_DOUBLE_EQ(s.position(4.0), 1.0);
  EXPECT_EQ(s(0.9), viz::colormap_rgb(Colormap::Viridis, 1.0));

  s = viz::fit_scale({0.25, 0.25}, Colormap::Magma);  // one value: drawn mid-map
  EXPECT_DOUBLE_EQ(s.lo, -0.25);
  EXPECT_DOUBLE_EQ(s.hi, 0.75);
  EXPECT_DOUBLE_EQ(s.position(0.25), 0.5);

  s = viz::fit_scale({NAN, 1.0, INFINITY, 3.0, -INFINITY}, Colormap::Viridis);  // skipped
  EXPECT_DOUBLE_EQ(s.lo, 1.0);
  EXPECT_DOUBLE_EQ(s.hi, 3.0);

  s = viz::fit_scale({-0.5, 2.0}, Colormap::Diverging);  // symmetric around 0
  EXPECT_DOUBLE_EQ(s.lo, -2.0);
  EXPECT_DOUBLE_EQ(s.hi, 2.0);
  s = viz::fit_scale({0.0, 0.0}, Colormap::Diverging);
  EXPECT_DOUBLE_EQ(s.lo, -1.0);
  EXPECT_DOUBLE_EQ(s.hi, 1.0);
  s = viz::fit_scale({}, Colormap::Viridis);
  EXPECT_DOUBLE_EQ(s.lo, 0.0);
  EXPECT_DOUBLE_EQ(s.hi, 1.0);
}

// ---- PNG -------------------------------------------------------------------------

// Checks every cell centre of the PNG at `path` against the scale's colour of
// its value (or the hatch where masked), and the colour bar's two ends.
void expect_png_cells(const std::string& path, const Tensor& matrices, const Tensor& keep,
                      const viz::HeatmapOptions& options, const viz::ColorScale& scale) {
  const viz::Image image = viz::read_png(path);
  const viz::HeatmapLayout layout = viz::heatmap_layout(matrices.shape(), options);
  ASSERT_EQ(image.width, layout.width);
  ASSERT_EQ(image.height, layout.height);
  const std::vector<double> values = matrices.to_vector();
  const std::vector<double> kept = keep.defined() ? broadcast_to(keep, matrices.shape()).to_vector()
                                                  : std::vector<double>(values.size(), 1.0);
  const int64_t num_maps = layout.grid_rows * layout.grid_cols;
  size_t k = 0;
  for (int64_t m = 0; m < num_maps; ++m) {
    for (int64_t i = 0; i < layout.num_queries; ++i) {
      for (int64_t j = 0; j < layout.num_keys; ++j, ++k) {
        const auto [x, y] = layout.cell_center(m, i, j);
        const Rgb expected = kept[k] != 0.0 ? scale(values[k]) : viz::kHatchBase;
        EXPECT_EQ(image.at(x, y), expected) << "map " << m << ", query " << i << ", key " << j;
      }
    }
  }
  const auto [bx, by, bw, bh] = layout.colorbar;
  EXPECT_EQ(image.at(bx + bw / 2, by), viz::colormap_rgb(scale.map, 1.0));
  EXPECT_EQ(image.at(bx + bw / 2, by + bh - 1), viz::colormap_rgb(scale.map, 0.0));
}

TEST(ShowHeatmapsTest, PngCellsAreMaskedSoftmaxWeights) {
  manual_seed(7);
  const Tensor valid_lens = lens({2, 3});
  const Tensor weights =
      nn::masked_softmax(rand({2, 2, 4}), valid_lens);  // [2, 2, 4], one row of 2 maps
  const Tensor keep = nn::lengths_to_keep(valid_lens, weights.shape());
  viz::HeatmapOptions options;
  options.keep_mask = keep;
  options.titles = {"batch 0", "batch 1"};
  const std::string path = temp_path("weights.png");
  viz::show_heatmaps(weights, path, options);

  const viz::HeatmapLayout layout = viz::heatmap_layout(weights.shape(), options);
  EXPECT_EQ(layout.grid_rows, 1);
  EXPECT_EQ(layout.grid_cols, 2);
  // The scale is fitted to the kept weights only: masked ones (0) do not count.
  std::vector<double> kept;
  const std::vector<double> values = weights.to_vector(), flags = keep.to_vector();
  for (size_t k = 0; k < values.size(); ++k) {
    if (flags[k] != 0.0) kept.push_back(values[k]);
  }
  expect_png_cells(path, weights, keep, options, viz::fit_scale(kept, Colormap::Viridis));
}

TEST(ShowHeatmapsTest, PngOfDotProductAttentionWithFixedScale) {
  manual_seed(3);
  nn::DotProductAttention attention;
  const Tensor queries = randn({1, 3, 4}), keys = randn({1, 10, 4}), values = randn({1, 10, 2});
  attention(queries, keys, values);
  const Tensor weights = reshape(attention.attention_weights().detach(), {1, 1, 3, 10});
  viz::HeatmapOptions options;
  options.colormap = Colormap::Magma;
  options.vmin = 0.0;
  options.vmax = 1.0;
  options.cell_size = 9;
  const std::string path = temp_path("dot.png");
  viz::show_heatmaps(weights, path, options);
  expect_png_cells(path, weights, Tensor(), options, viz::ColorScale{Colormap::Magma, 0.0, 1.0});
}

TEST(ShowHeatmapsTest, GridOfRowsAndCols) {
  manual_seed(11);
  const Tensor maps = rand({2, 3, 4, 5}, kFloat64);
  viz::HeatmapOptions options;
  options.titles = {"a", "b", "c", "d", "e", "f"};
  options.cell_size = 10;
  const viz::HeatmapLayout layout = viz::heatmap_layout(maps.shape(), options);
  EXPECT_EQ(layout.grid_rows, 2);
  EXPECT_EQ(layout.grid_cols, 3);
  EXPECT_EQ(layout.num_queries, 4);
  EXPECT_EQ(layout.num_keys, 5);
  ASSERT_EQ(layout.map_origin.size(), 6u);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      const auto [x, y] = layout.map_origin[r * 3 + c];
      EXPECT_EQ(y, layout.map_origin[r * 3][1]);  // a row shares its top
      EXPECT_EQ(x, layout.map_origin[c][0]);      // a column shares its left
      if (c > 0) {
        EXPECT_GE(x, layout.map_origin[r * 3 + c - 1][0] + 5 * 10);  // no overlap
      }
      if (r > 0) {
        EXPECT_GE(y, layout.map_origin[c][1] + 4 * 10);
      }
    }
  }
  EXPECT_EQ(layout.cell_center(4, 2, 3),
            (std::array<int, 2>{layout.map_origin[4][0] + 35, layout.map_origin[4][1] + 25}));
  // The colour bar is right of every map and inside the image.
  EXPECT_GT(layout.colorbar[0], layout.map_origin[2][0] + 50);
  EXPECT_LE(layout.colorbar[0] + layout.colorbar[2], layout.width);
  EXPECT_LE(layout.colorbar[1] + layout.colorbar[3], layout.height);

  const std::string path = temp_path("grid.png");
  viz::show_heatmaps(maps, path, options);
  expect_png_cells(path, maps, Tensor(), options,
                   viz::fit_scale(maps.to_vector(), Colormap::Viridis));
}

TEST(ShowHeatmapsTest, LeadingDimsFlattenIntoOneRow) {
  EXPECT_EQ(viz::heatmap_layout({3, 5}).grid_cols, 1);
  EXPECT_EQ(viz::heatmap_layout({4, 3, 5}).grid_cols, 4);
  const viz::HeatmapLayout five = viz::heatmap_layout({2, 3, 2, 3, 5});
  EXPECT_EQ(five.grid_rows, 1);
  EXPECT_EQ(five.grid_cols, 12);
  EXPECT_EQ(five.map_origin.size(), 12u);
}

TEST(ShowHeatmapsTest, MaskBroadcastsAndDivergingScale) {
  // A difference of two maps, signed; the mask [1, Tk] broadcasts over queries,
  // and a masked NaN is fine.
  const Tensor diff = tensor({-0.5, 0.25, NAN, 0.0, 1.0, INFINITY}, {2, 3});
  viz::HeatmapOptions options;
  options.colormap = Colormap::Diverging;
  options.keep_mask = bools({1, 1, 0}, {1, 3});
  options.show_values = true;
  options.cell_size = 40;
  const std::string path = temp_path("diff.png");
  viz::show_heatmaps(diff, path, options);
  // show_values prints text over the centres: check the colours at a corner of each cell.
  const viz::Image image = viz::read_png(path);
  const viz::HeatmapLayout layout = viz::heatmap_layout(diff.shape(), options);
  const viz::ColorScale scale{Colormap::Diverging, -1.0, 1.0};
  const std::vector<double> values = diff.to_vector();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      const auto [x, y] = layout.cell_center(0, i, j);
      EXPECT_EQ(image.at(x - 18, y - 18), scale(values[i * 3 + j])) << i << ", " << j;
    }
    const auto [x, y] = layout.cell_center(0, i, 2);
    const Rgb corner = image.at(x - 18, y - 18);
    EXPECT_TRUE(corner == viz::kHatchBase || corner == viz::kHatchStripe);
  }
  EXPECT_EQ(image.at(layout.cell_center(0, 1, 0)[0] - 18, layout.cell_center(0, 1, 0)[1] - 18),
            (Rgb{255, 255, 255}));  // 0 is white
}

TEST(ShowHeatmapsTest, ShowValuesPrintsTextInCells) {
  const Tensor w = tensor({0.1, 0.9}, {1, 2});
  viz::HeatmapOptions options;
  options.cell_size = 48;
  const std::string plain = temp_path("plain.png"), valued = temp_path("values.png");
  viz::show_heatmaps(w, plain, options);
  options.show_values = true;
  viz::show_heatmaps(w, valued, options);
  const viz::Image a = viz::read_png(plain), b = viz::read_png(valued);
  const viz::HeatmapLayout layout = viz::heatmap_layout(w.shape(), options);
  // Dark cell (0.1): white text; light cell (0.9): black text, anti-aliased:
  // each pixel it touches is the cell's colour blended towards the text's.
  const Rgb text_colors[2] = {{255, 255, 255}, {0, 0, 0}};
  for (int64_t j = 0; j < 2; ++j) {
    const auto [cx, cy] = layout.cell_center(0, 0, j);
    const Rgb cell = a.at(cx, cy), ink = text_colors[j];
    int text_pixels = 0, full_ink = 0;
    for (int y = cy - 20; y < cy + 20; ++y) {
      for (int x = cx - 20; x < cx + 20; ++x) {
        const Rgb p = b.at(x, y);
        if (a.at(x, y) == p) continue;
        ++text_pixels;
        full_ink += p == ink;
        // The blend's share of ink, from the channel that moves most.
        const double share = (p.g - cell.g) / static_cast<double>(ink.g - cell.g);
        EXPECT_GE(share, 0.0);
        EXPECT_LE(share, 1.0);
        const Rgb blend{static_cast<uint8_t>(std::lround(cell.r + share * (ink.r - cell.r))),
                        static_cast<uint8_t>(std::lround(cell.g + share * (ink.g - cell.g))),
                        static_cast<uint8_t>(std::lround(cell.b + share * (ink.b - cell.b)))};
        EXPECT_TRUE(near_rgb(p, blend, 2)) << x << ", " << y;
      }
    }
    EXPECT_GT(text_pixels, 20) << "cell " << j;
    EXPECT_GT(full_ink, 5) << "cell " << j;
  }
}

TEST(ShowHeatmapsTest, StridedGradTensorsAndNonAsciiLabels) {
  manual_seed(2);
  const Tensor scores = rand({2, 5, 3}).requires_grad_();
  const Tensor weights = transpose(softmax(scores, 1), 1, 2);  // [2, 3, 5], not contiguous
  viz::HeatmapOptions options;
  options.xlabel = "Schl\xc3\xbcssel";  // UTF-8: DejaVu draws the u-umlaut, the SVG keeps it
  options.titles = {"\xce\xb1", "\xce\xb2"};
  const std::string png = temp_path("strided.png"), svg = temp_path("strided.svg");
  viz::show_heatmaps(weights, png, options);
  expect_png_cells(png, weights, Tensor(), options,
                   viz::fit_scale(weights.to_vector(), Colormap::Viridis));
  viz::show_heatmaps(weights, svg, options);
  EXPECT_NE(read_file(svg).find("Schl\xc3\xbcssel"), std::string::npos);
}

// ---- SVG -------------------------------------------------------------------------

struct SvgCell {
  int x, y;
  std::string title;
};

// Every <rect ...><title>...</title></rect>, in document order.
std::vector<SvgCell> svg_cells(const std::string& svg) {
  std::vector<SvgCell> cells;
  const auto attribute = [](const std::string& tag, const std::string& name) {
    const size_t at = tag.find(" " + name + "=\"");
    return std::stoi(tag.substr(at + name.size() + 3));
  };
  for (size_t at = svg.find("<rect "); at != std::string::npos; at = svg.find("<rect ", at + 1)) {
    const std::string tag = svg.substr(at, svg.find('>', at) - at);
    const size_t open = svg.find("<title>", at), close = svg.find("</title>", at);
    cells.push_back(
        {attribute(tag, "x"), attribute(tag, "y"), svg.substr(open + 7, close - open - 7)});
  }
  return cells;
}

TEST(ShowHeatmapsTest, SvgTitlesHoldTheValues) {
  manual_seed(5);
  const Tensor valid_lens = lens({1, 4, 2});
  const Tensor weights = nn::masked_softmax(rand({3, 2, 5}), valid_lens);
  viz::HeatmapOptions options;
  options.keep_mask = nn::lengths_to_keep(valid_lens, weights.shape());
  options.titles = {"a & b", "<c>", "\"d\""};
  options.xlabel = "Keys <x>";
  const std::string path = temp_path("weights.svg");
  viz::show_heatmaps(weights, path, options);
  const std::string svg = read_file(path);
  const viz::HeatmapLayout layout = viz::heatmap_layout(weights.shape(), options);

  EXPECT_NE(svg.find("width=\"" + std::to_string(layout.width) + "\""), std::string::npos);
  EXPECT_NE(svg.find("height=\"" + std::to_string(layout.height) + "\""), std::string::npos);
  EXPECT_NE(svg.find("a &amp; b"), std::string::npos);
  EXPECT_NE(svg.find("&lt;c&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&quot;d&quot;"), std::string::npos);
  EXPECT_NE(svg.find("Keys &lt;x&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<c>"), std::string::npos);

  const std::vector<SvgCell> cells = svg_cells(svg);
  ASSERT_EQ(cells.size(), 30u);
  const std::vector<double> values = weights.to_vector();
  const std::vector<double> keep = options.keep_mask.to_vector();
  size_t k = 0;
  for (int64_t m = 0; m < 3; ++m) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 5; ++j, ++k) {
        const SvgCell& cell = cells[k];
        const auto [cx, cy] = layout.cell_center(m, i, j);
        EXPECT_EQ(cell.x + layout.cell_size / 2, cx);
        EXPECT_EQ(cell.y + layout.cell_size / 2, cy);
        const std::string where =
            "query " + std::to_string(i) + ", key " + std::to_string(j) + ": ";
        ASSERT_EQ(cell.title.rfind(where, 0), 0u) << cell.title;
        const std::string value = cell.title.substr(where.size());
        if (keep[k] == 0.0) {
          EXPECT_EQ(value, "masked");
        } else {
          EXPECT_NEAR(std::stod(value), values[k], 1e-6) << cell.title;
        }
      }
    }
  }
}

// ---- errors ----------------------------------------------------------------------

TEST(ShowHeatmapsTest, BadInputsThrowNamingTheShape) {
  const std::string png = temp_path("bad.png");
  const Tensor w = rand({2, 3});
  const auto show = [&](const Tensor& t, const viz::HeatmapOptions& options = {},
                        const std::string& path = "") {
    return [=] { viz::show_heatmaps(t, path.empty() ? png : path, options); };
  };
  EXPECT_TRUE(throws_error(show(rand({5})), {"show_heatmaps:", "rank >= 2", "[5]"}));
  EXPECT_TRUE(throws_error(show(zeros({2, 0, 3})), {"show_heatmaps:", "empty", "[2, 0, 3]"}));
  EXPECT_TRUE(throws_error(show(zeros({2, 3}, kInt64)), {"show_heatmaps:", "int64", "[2, 3]"}));
  EXPECT_TRUE(throws_error(show(tensor({0.5, NAN, 0.1, 0.2}, {2, 2})),
                           {"show_heatmaps:", "non-finite", "nan", "query 0, key 1", "[2, 2]"}));
  EXPECT_TRUE(throws_error(show(tensor({0.5, INFINITY}, {1, 2})), {"show_heatmaps:", "inf"}));

  viz::HeatmapOptions options;
  options.keep_mask = ones({2, 3});
  EXPECT_TRUE(throws_error(show(w, options), {"show_heatmaps:", "bool", "float32", "[2, 3]"}));
  options.keep_mask = bools({1, 0}, {2});
  EXPECT_TRUE(
      throws_error(show(w, options), {"show_heatmaps:", "[2]", "does not broadcast", "[2, 3]"}));
  options.keep_mask = bools({1, 0, 1, 1, 1, 1}, {2, 1, 3});  // would enlarge the matrices
  EXPECT_TRUE(throws_error(show(w, options), {"show_heatmaps:", "[2, 1, 3]", "[2, 3]"}));

  options = {};
  options.titles = {"only one"};
  EXPECT_TRUE(throws_error(show(rand({2, 2, 3}), options),
                           {"show_heatmaps:", "1 titles for 2 maps", "[2, 2, 3]"}));
  options = {};
  options.cell_size = 3;
  EXPECT_TRUE(
      throws_error(show(w, options), {"show_heatmaps:", "cell_size", "4..256", "3", "[2, 3]"}));
  options.cell_size = 257;
  EXPECT_TRUE(throws_error(show(w, options), {"show_heatmaps:", "cell_size", "257"}));
  options = {};
  options.vmin = 0.5;
  options.vmax = 0.5;
  EXPECT_TRUE(throws_error(show(w, options), {"show_heatmaps:", "vmin", "vmax", "[2, 3]"}));
  options.vmax = NAN;
  EXPECT_TRUE(throws_error(show(w, options), {"show_heatmaps:", "vmin", "vmax"}));

  EXPECT_TRUE(throws_error(show(w, {}, temp_path("weights.jpg")),
                           {"show_heatmaps:", "weights.jpg", ".png or .svg", "[2, 3]"}));
  EXPECT_TRUE(
      throws_error(show(w, {}, temp_path("no_extension")), {"show_heatmaps:", ".png or .svg"}));
  EXPECT_TRUE(
      throws_error(show(w, {}, "/nonexistent-dir/weights.png"),
                   {"show_heatmaps:", "cannot write", "/nonexistent-dir/weights.png", "[2, 3]"}));
  EXPECT_TRUE(throws_error(show(w, {}, "/nonexistent-dir/weights.svg"),
                           {"show_heatmaps:", "cannot write"}));

  options = {};
  options.cell_size = 256;
  EXPECT_TRUE(throws_error(show(zeros({1, 100}), options),
                           {"show_heatmaps:", "[1, 100]", "16384", "cell_size"}));
  EXPECT_TRUE(throws_error(
      [] {
        viz::heatmap_layout({1000000, 1000000, 1, 1});
      },
      {"heatmap_layout:", "[1000000, 1000000, 1, 1]", "16384"}));
  EXPECT_TRUE(throws_error([] { viz::heatmap_layout({7}); }, {"heatmap_layout:", "[7]"}));
  EXPECT_TRUE(throws_error(
      [] {
        viz::heatmap_layout({1, int64_t{1} << 50});
      },
      {"heatmap_layout:", "at least", "16384"}));  // no int64 overflow
  EXPECT_TRUE(throws_error(show(Tensor()), {"show_heatmaps:", "undefined"}));
}

TEST(ShowHeatmapsTest, UppercaseExtensionAndFullyMaskedInput) {
  viz::HeatmapOptions options;
  options.keep_mask = bools({0, 0}, {1, 2});  // nothing kept: the scale falls back to [0, 1]
  const std::string path = temp_path("masked.PNG");
  viz::show_heatmaps(tensor({NAN, NAN}, {1, 2}), path, options);
  expect_png_cells(path, tensor({0, 0}, {1, 2}), options.keep_mask, options,
                   viz::ColorScale{Colormap::Viridis, 0.0, 1.0});
}

}  // namespace
}  // namespace ag
