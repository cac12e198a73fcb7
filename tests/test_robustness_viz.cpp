// Hostile input to the heatmap writers and the PNG reader (issue 29): labels
// that are not UTF-8 or need escaping, colour ranges at the edge of double,
// inconsistent images, truncated and foreign files. Each case gets an
// ag::Error naming the function and the bad value, or a correct file.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attograd/viz.h"
#include "test_util.h"

namespace ag {
namespace {

using testing::read_file;
using testing::ScratchDir;
using testing::throws_error;
using viz::Colormap;

// Why `text` is not well-formed UTF-8 (decoded by hand, independently of the
// writer's own check), or "" when it is.
std::string utf8_problem(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const size_t n = b < 0x80           ? 1
                     : (b >> 5) == 0x6  ? 2
                     : (b >> 4) == 0xE  ? 3
                     : (b >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > text.size()) return "bad lead byte at " + std::to_string(i);
    uint32_t code = n == 1 ? b : b & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xC0) != 0x80) return "bad continuation at " + std::to_string(i + k);
      code = (code << 6) | (c & 0x3F);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF) ||
        code == 0xFFFE || code == 0xFFFF)
      return "code point " + std::to_string(code) + " at " + std::to_string(i);
    if (code < 0x20 && code != '\t' && code != '\n' && code != '\r')
      return "control character at " + std::to_string(i);
    i += n;
  }
  return "";
}

// Every '&' starts one of XML's entities: nothing unescaped slipped through.
bool ampersands_are_entities(const std::string& svg) {
  for (size_t at = svg.find('&'); at != std::string::npos; at = svg.find('&', at + 1)) {
    const std::string rest = svg.substr(at, 6);
    if (!rest.starts_with("&amp;") && !rest.starts_with("&lt;") && !rest.starts_with("&gt;") &&
        !rest.starts_with("&quot;") && !rest.starts_with("&apos;"))
      return false;
  }
  return true;
}

// The text between <text ...> and </text>, in document order.
std::vector<std::string> svg_texts(const std::string& svg) {
  std::vector<std::string> texts;
  for (size_t at = svg.find("<text "); at != std::string::npos; at = svg.find("<text ", at + 1)) {
    const size_t open = svg.find('>', at) + 1;
    texts.push_back(svg.substr(open, svg.find("</text>", open) - open));
  }
  return texts;
}

// ---- labels ------------------------------------------------------------------------

TEST(RobustnessVizTest, LabelsThatAreNotUtf8KeepTheSvgWellFormed) {
  ScratchDir dir("attograd_robustness_viz_labels");
  const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
  // label as given -> as the SVG must hold it
  const std::vector<std::pair<std::string, std::string>> labels = {
      {"a\xff"
       "b",
       "a" + replacement + "b"},                                  // a byte no UTF-8 has
      {"\x80", replacement},                                      // a lone continuation byte
      {"caf\xc3", "caf" + replacement},                           // cut off in the middle
      {"\xc0\xaf", replacement + replacement},                    // overlong '/'
      {"\xed\xa0\x80", replacement + replacement + replacement},  // a UTF-16 surrogate
      {"\xef\xbf\xbf", replacement + replacement + replacement},  // U+FFFF, not XML
      {"\xf4\x90\x80\x80", replacement + replacement + replacement + replacement},  // > U+10FFFF
      {"<b>&\"'", "&lt;b&gt;&amp;&quot;&apos;"},                                    // markup
      {"]]><!--", "]]&gt;&lt;!--"},
      {"tab\there\x01\x1f", "tab\there??"},  // control characters
      {"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"},
  };
  std::vector<std::string> titles;
  for (const auto& [given, expected] : labels) titles.push_back(given);
  viz::HeatmapOptions options;
  options.titles = titles;
  options.xlabel = "\xfe\xff keys";
  options.ylabel = "queries \xe2\x82";
  const std::string path = dir / "labels.svg";
  viz::show_heatmaps(ones({1, static_cast<int64_t>(titles.size()), 2, 2}), path, options);
  const std::string svg = read_file(path);
  EXPECT_EQ(utf8_problem(svg), "");
  EXPECT_TRUE(ampersands_are_entities(svg));
  const std::vector<std::string> texts = svg_texts(svg);
  for (const auto& [given, expected] : labels)
    EXPECT_NE(std::find(texts.begin(), texts.end(), expected), texts.end()) << expected;
  EXPECT_NE(std::find(texts.begin(), texts.end(), replacement + replacement + " keys"),
            texts.end());
  // A sequence cut short: its lead byte and its continuation each become one.
  EXPECT_NE(std::find(texts.begin(), texts.end(), "queries " + replacement + replacement),
            texts.end());
  for (const std::string& text : texts) EXPECT_EQ(text.find('<'), std::string::npos) << text;
  // The PNG takes the same labels (its font has ASCII only: '?').
  viz::show_heatmaps(ones({1, static_cast<int64_t>(titles.size()), 2, 2}), dir / "labels.png",
                     options);
  EXPECT_GT(viz::read_png(dir / "labels.png").width, 0);
}

TEST(RobustnessVizTest, LabelsTooLongForAnImageAreRefused) {
  ScratchDir dir("attograd_robustness_viz_long");
  viz::HeatmapOptions options;
  options.xlabel = std::string(100000, 'W');
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "x.png", options);
      },
      {"show_heatmaps", "16384", "[2, 2]"}));
  options = {};
  options.titles = {std::string(100000, 'T')};
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "t.svg", options);
      },
      {"show_heatmaps", "16384"}));
}

// ---- colour ranges -----------------------------------------------------------------

TEST(RobustnessVizTest, RangesWiderThanTheLargestDoubleStillOrderTheColours) {
  // hi - lo overflows to inf: positions used to collapse to 0 (one colour for
  // every cell) and the colour bar read "-nan" and "inf".
  const viz::ColorScale wide{Colormap::Viridis, -1.7e308, 1.7e308};
  EXPECT_DOUBLE_EQ(wide.position(0.0), 0.5);
  EXPECT_DOUBLE_EQ(wide.position(-1.7e308), 0.0);
  EXPECT_DOUBLE_EQ(wide.position(1.7e308), 1.0);
  EXPECT_DOUBLE_EQ(wide.position(8.5e307), 0.75);
  const viz::ColorScale diverging = viz::fit_scale({-1e308, 1e308, 0}, Colormap::Diverging);
  EXPECT_DOUBLE_EQ(diverging.position(0.0), 0.5);
  EXPECT_EQ(diverging(0.0), viz::colormap_rgb(Colormap::Diverging, 0.5));

  ScratchDir dir("attograd_robustness_viz_range");
  const Tensor values = tensor({-1e308, 0, 1e308, 5e307}, {2, 2}, kFloat64);
  viz::HeatmapOptions options;
  options.colormap = Colormap::Diverging;
  viz::show_heatmaps(values, dir / "d.png", options);
  const viz::Image image = viz::read_png(dir / "d.png");
  const viz::HeatmapLayout layout = viz::heatmap_layout({2, 2}, options);
  const auto at = [&](int64_t i, int64_t j) {
    const auto [x, y] = layout.cell_center(0, i, j);
    return image.at(x, y);
  };
  EXPECT_EQ(at(0, 0), viz::colormap_rgb(Colormap::Diverging, 0.0));
  EXPECT_EQ(at(0, 1), viz::colormap_rgb(Colormap::Diverging, 0.5));
  EXPECT_EQ(at(1, 0), viz::colormap_rgb(Colormap::Diverging, 1.0));
  EXPECT_EQ(at(1, 1), viz::colormap_rgb(Colormap::Diverging, 0.75));
  // The colour bar's labels are numbers, not nan or inf.
  options.vmin = -1.7e308;
  options.vmax = 1.7e308;
  viz::show_heatmaps(values, dir / "d.svg", options);
  const std::string svg = read_file(dir / "d.svg");
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_NE(svg.find(">-1.7e+308<"), std::string::npos);
  EXPECT_NE(svg.find(">8.5e+307<"), std::string::npos);
}

TEST(RobustnessVizTest, EqualHugeValuesAndTinyRangesDraw) {
  // One value past 2^53: v +- 0.5 rounds back to v, which made lo == hi and
  // an error about a vmin the caller never gave.
  for (const double v : {1e300, -1e20, 9007199254740993.0}) {
    const viz::ColorScale scale = viz::fit_scale({v, v}, Colormap::Viridis);
    EXPECT_LT(scale.lo, v);
    EXPECT_GT(scale.hi, v);
    EXPECT_DOUBLE_EQ(scale.position(v), 0.5);
  }
  EXPECT_EQ(viz::fit_scale({0.25}, Colormap::Viridis).lo, -0.25);  // +-0.5 as before
  ScratchDir dir("attograd_robustness_viz_tiny");
  EXPECT_NO_THROW(viz::show_heatmaps(full({2, 2}, 1e300, kFloat64), dir / "same.png"));
  // A subnormal range: still finite and ordered.
  viz::HeatmapOptions options;
  options.vmin = 0;
  options.vmax = 1e-320;
  EXPECT_NO_THROW(viz::show_heatmaps(tensor({0, 5e-321, 1e-320, 2}, {2, 2}, kFloat64),
                                     dir / "tiny.svg", options));
  EXPECT_EQ(read_file(dir / "tiny.svg").find("nan"), std::string::npos);
  // A colour bar range the wrong way round, or infinite.
  options.vmin = 1;
  options.vmax = 0;
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "w.png", options);
      },
      {"show_heatmaps", "vmin (1)", "vmax (0)"}));
  options.vmin = -INFINITY;
  options.vmax = 1;
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "w.png", options);
      },
      {"show_heatmaps", "vmin (-inf)"}));
}

// ---- images and paths ---------------------------------------------------------------

TEST(RobustnessVizTest, InconsistentImagesAreRefused) {
  ScratchDir dir("attograd_robustness_viz_images");
  // rgb shorter than width x height x 3: at() used to read past its end.
  const viz::Image short_rgb{2, 2, std::vector<uint8_t>(3)};
  EXPECT_TRUE(throws_error([&] { short_rgb.at(1, 1); }, {"Image::at", "2x2", "3 bytes"}));
  EXPECT_TRUE(throws_error([&] { viz::write_png(dir / "s.png", short_rgb); },
                           {"write_png", "2x2 with 3 bytes"}));
  const viz::Image negative{-1, 4, {}};
  EXPECT_TRUE(throws_error([&] { negative.at(0, 0); }, {"Image::at", "outside"}));
  EXPECT_TRUE(
      throws_error([&] { viz::write_png(dir / "n.png", negative); }, {"write_png", "-1x4"}));
  const viz::Image empty{};
  EXPECT_TRUE(throws_error([&] { viz::write_png(dir / "e.png", empty); }, {"write_png", "0x0"}));
  const viz::Image one{1, 1, {1, 2, 3}};
  EXPECT_TRUE(throws_error([&] { viz::write_png(dir.str(), one); }, {"write_png", "cannot write"}));
  EXPECT_TRUE(throws_error([&] { one.at(-1, 0); }, {"Image::at", "(-1, 0)"}));
}

TEST(RobustnessVizTest, TruncatedAndForeignPngsAreRefused) {
  ScratchDir dir("attograd_robustness_viz_png");
  // A small PNG (a 3x2 image, 70-odd bytes), cut at every length; and the
  // heatmap PNG cut at a spread of lengths. Every cut either throws ag::Error
  // or (cut inside the final IEND chunk only, which holds no pixels) reads
  // back the same image.
  viz::write_png(dir / "small.png",
                 {3, 2, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}});
  viz::show_heatmaps(tensor({0, 1, 2, 3, 4, 5}, {2, 3}), dir / "map.png");
  for (const std::string name : {"small.png", "map.png"}) {
    const viz::Image full = viz::read_png(dir / name);
    const std::string bytes = read_file(dir / name);
    const size_t stride = name == "small.png" ? 1 : bytes.size() / 23;
    int cuts = 0, refused = 0, same = 0;
    for (size_t n = 0; n < bytes.size(); n += stride, ++cuts) {
      std::ofstream(dir / "cut.png", std::ios::binary)
          .write(bytes.data(), static_cast<std::streamsize>(n));
      try {
        same += viz::read_png(dir / "cut.png").rgb == full.rgb ? 1 : 0;
      } catch (const Error& e) {
        refused += std::string(e.what()).starts_with("read_png: cannot read") ? 1 : 0;
      }
    }
    EXPECT_EQ(refused + same, cuts) << name;
    EXPECT_LE(same, 12) << name;  // the IEND chunk is 12 bytes
  }
  std::ofstream(dir / "text.png") << "not an image\n";
  std::ofstream(dir / "empty.png").flush();
  save_npz(dir / "state.png", {{"w", ones({2})}});
  for (const std::string name : {"text.png", "empty.png", "state.png", "missing.png"})
    EXPECT_TRUE(throws_error([&] { viz::read_png(dir / name); }, {"read_png", name})) << name;
  EXPECT_TRUE(throws_error([&] { viz::read_png(dir.str()); }, {"read_png", "cannot read"}));
}

TEST(RobustnessVizTest, PathsThatAreDirectoriesOrHaveNoExtension) {
  ScratchDir dir("attograd_robustness_viz_paths");
  std::filesystem::create_directories(dir / "maps.png");
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "maps.png");
      },
      {"show_heatmaps", "cannot write", "maps.png"}));
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "maps.png/");
      },
      {"show_heatmaps", ".png or .svg"}));
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), dir / "a.svg/b");
      },
      {"show_heatmaps", ".png or .svg"}));
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(ones({2, 2}), "");
      },
      {"show_heatmaps", ".png or .svg"}));
  // The last extension decides; a failed call leaves no file behind.
  viz::show_heatmaps(ones({2, 2}), dir / "a.png.svg");
  EXPECT_TRUE(read_file(dir / "a.png.svg").starts_with("<?xml") ||
              read_file(dir / "a.png.svg").starts_with("<svg"));
  EXPECT_TRUE(throws_error(
      [&] {
        viz::show_heatmaps(full({2, 2}, NAN), dir / "nan.png");
      },
      {"show_heatmaps", "non-finite"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "nan.png"));
}

TEST(RobustnessVizTest, DegenerateButLegalMaps) {
  ScratchDir dir("attograd_robustness_viz_degenerate");
  // One cell; every cell masked (NaN under the mask is fine); a 5-D input;
  // a map that requires grad; float64; the smallest and largest cells.
  viz::HeatmapOptions masked;
  masked.keep_mask = zeros({1, 3}, kBool);
  viz::HeatmapOptions small_cells, big_cells;
  small_cells.cell_size = 4;
  big_cells.cell_size = 256;
  const std::vector<std::pair<Tensor, viz::HeatmapOptions>> cases = {
      {ones({1, 1}), {}},           {full({1, 3}, NAN), masked},
      {ones({2, 1, 2, 2, 3}), {}},  {rand({2, 3}).requires_grad_(), {}},
      {rand({3, 2}, kFloat64), {}}, {rand({1, 60, 60}), small_cells},
      {rand({2, 2}), big_cells},
  };
  int k = 0;
  for (const auto& [matrices, options] : cases) {
    for (const std::string ext : {".png", ".svg"}) {
      const std::string path = dir / ("map" + std::to_string(k) + ext);
      EXPECT_NO_THROW(viz::show_heatmaps(matrices, path, options)) << path;
      if (ext == ".png")
        EXPECT_EQ(viz::read_png(path).width, viz::heatmap_layout(matrices.shape(), options).width);
      else
        EXPECT_EQ(utf8_problem(read_file(path)), "");
    }
    ++k;
  }
}

}  // namespace
}  // namespace ag
