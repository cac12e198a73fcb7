// show_heatmaps' tick labels (HeatmapOptions::xticklabels / yticklabels): the
// tokens of a translation along the axes instead of the indices.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attograd/viz.h"
#include "test_util.h"

namespace ag {
namespace {

using ag::testing::read_file;
using ag::testing::throws_error;

// In a folder of this process's own (ScratchDir names it with the pid):
// ctest runs each TEST as its own process, two at a time.
std::string ticklabels_file(const std::string& name) {
  static const ag::testing::ScratchDir dir("ticklabels");
  return dir / name;
}

// The text of every <text> element of an SVG, in order.
std::vector<std::string> svg_texts(const std::string& svg) {
  std::vector<std::string> texts;
  for (size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at + 1)) {
    const size_t open = svg.find('>', at), close = svg.find("</text>", at);
    texts.push_back(svg.substr(open + 1, close - open - 1));
  }
  return texts;
}

bool contains(const std::vector<std::string>& texts, const std::string& text) {
  return std::find(texts.begin(), texts.end(), text) != texts.end();
}

TEST(HeatmapTickLabels, LabelsReplaceIndices) {
  const Tensor weights = softmax(ag::tensor({1, 2, 3, 4, 5, 6}, {2, 3}), -1);
  viz::HeatmapOptions options;
  options.xticklabels = {"a", "b", "<eos>"};
  options.yticklabels = {"1", "<eos>"};
  const std::string svg_path = ticklabels_file("labels.svg"),
                    png_path = ticklabels_file("labels.png");
  viz::show_heatmaps(weights, svg_path, options);
  viz::show_heatmaps(weights, png_path, options);
  const std::vector<std::string> texts = svg_texts(read_file(svg_path));
  EXPECT_TRUE(contains(texts, "a"));
  EXPECT_TRUE(contains(texts, "b"));
  EXPECT_TRUE(contains(texts, "&lt;eos&gt;"));
  EXPECT_TRUE(contains(texts, "1"));
  EXPECT_FALSE(contains(texts, "2"));  // no index ticks left
  // "<eos>" is wider than a cell: the x labels run up, and the figure grows
  // below the maps (and left of them, for the wider y labels).
  const viz::HeatmapLayout plain = viz::heatmap_layout(weights.shape());
  const viz::HeatmapLayout labelled = viz::heatmap_layout(weights.shape(), options);
  EXPECT_GT(labelled.height, plain.height);
  EXPECT_GT(labelled.map_origin[0][0], plain.map_origin[0][0]);
  EXPECT_NE(read_file(svg_path).find("rotate(-90"), std::string::npos);
  const viz::Image image = viz::read_png(png_path);
  EXPECT_EQ(image.width, labelled.width);
  EXPECT_EQ(image.height, labelled.height);
  std::filesystem::remove(svg_path);
  std::filesystem::remove(png_path);
}

TEST(HeatmapTickLabels, NarrowLabelsStayHorizontal) {
  const Tensor weights = softmax(ag::tensor({1, 2, 3, 4}, {2, 2}), -1);
  viz::HeatmapOptions options;
  options.xticklabels = {"x", "y"};
  EXPECT_EQ(viz::heatmap_layout(weights.shape(), options).height,
            viz::heatmap_layout(weights.shape()).height);
}

TEST(HeatmapTickLabels, CountMustMatch) {
  const Tensor weights = softmax(ag::tensor({1, 2, 3, 4, 5, 6}, {2, 3}), -1);
  viz::HeatmapOptions options;
  options.xticklabels = {"a", "b"};
  EXPECT_TRUE(throws_error([&] { viz::heatmap_layout(weights.shape(), options); },
                           {"heatmap_layout", "2 x tick labels for 3 keys", "[2, 3]"}));
  options.xticklabels.clear();
  options.yticklabels = {"a", "b", "c"};
  EXPECT_TRUE(
      throws_error([&] { viz::show_heatmaps(weights, ticklabels_file("bad.png"), options); },
                   {"show_heatmaps", "3 y tick labels for 2 queries"}));
}

}  // namespace
}  // namespace ag
