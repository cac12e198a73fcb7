// The viewer's widgets and scenes without a window: Dear ImGui's null
// backend (a context, a built font atlas and a display size; no OpenGL)
// runs frames and the tests read what the widgets report.
#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include "heatmap_widget.h"
#include "null_backend.h"
#include "options.h"
#include "scene.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

TEST_F(NullBackend, HoverShowsTheExactValueAndIndicesOfTheCell) {
  manual_seed(3);
  const Tensor weights = softmax(randn({3, 5}), -1);
  const Tensor keep = testing::bools({1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, {3, 5});
  HeatmapView view{"test/weights", "weights", weights, keep,
                   viz::ColorScale{viz::Colormap::Viridis, 0.0, 1.0}};
  HeatmapHover hover;
  frame([&] { hover = draw_heatmap(view); });
  EXPECT_FALSE(hover.active);
  ASSERT_EQ(drawn_heatmaps().size(), 1u);
  const DrawnHeatmap map = drawn_heatmaps()[0];
  EXPECT_EQ(map.rows, 3);
  EXPECT_EQ(map.cols, 5);

  // Over the centre of cell (query 1, key 3): the tooltip shows its value.
  ImGui::GetIO().MousePos = ImVec2(map.x + map.cell * 3.5f, map.y + map.cell * 1.5f);
  frame([&] { hover = draw_heatmap(view); });
  ASSERT_TRUE(hover.active);
  EXPECT_EQ(hover.row, 1);
  EXPECT_EQ(hover.col, 3);
  EXPECT_EQ(hover.value, weights.to_vector()[1 * 5 + 3]);
  EXPECT_FALSE(hover.masked);
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", hover.value);
  EXPECT_EQ(hover.text, std::string("query 1, key 3\n") + value);
  const ImGuiWindow* tooltip = ImGui::FindWindowByName("##Tooltip_00");
  ASSERT_NE(tooltip, nullptr);
  EXPECT_TRUE(tooltip->Active);  // begun in this frame

  // Over a masked cell the tooltip says so.
  ImGui::GetIO().MousePos = ImVec2(map.x + map.cell * 4.5f, map.y + map.cell * 2.5f);
  frame([&] { hover = draw_heatmap(view); });
  ASSERT_TRUE(hover.active);
  EXPECT_TRUE(hover.masked);
  EXPECT_NE(hover.text.find("masked"), std::string::npos);

  // Outside the cells: no hover.
  ImGui::GetIO().MousePos = ImVec2(map.x - 30, map.y - 30);
  frame([&] { hover = draw_heatmap(view); });
  EXPECT_FALSE(hover.active);
}

TEST_F(NullBackend, HeatmapRefusesAMatrixOfTheWrongRank) {
  HeatmapView view{"test/bad", "", ones({2, 3, 4}), Tensor(), viz::ColorScale{}};
  ImGui::NewFrame();
  ImGui::Begin("bad");
  EXPECT_TRUE(
      testing::throws_error([&] { draw_heatmap(view); }, {"heatmap test/bad", "[2, 3, 4]"}));
  ImGui::End();
  ImGui::Render();
}

// Every scene draws frames without a window, shows at least one heatmap, and
// reports the tensors it feeds the library.
TEST_F(NullBackend, EverySceneDrawsAndReportsItsInputs) {
  std::vector<std::unique_ptr<Scene>> scenes = make_scenes();
  ASSERT_FALSE(scenes.empty());
  EXPECT_STREQ(scenes[0]->name(), "compare");
  for (auto& scene : scenes) {
    SCOPED_TRACE(scene->name());
    for (int i = 0; i < 3; ++i) frame([&] { scene->draw(); });
    EXPECT_FALSE(drawn_heatmaps().empty());
    EXPECT_FALSE(scene->inputs().empty());
  }
}

TEST(ViewerOptions, ParsesTheCommandLineTestsUse) {
  const ViewerOptions o = parse_options({"--scene", "masks", "--frames", "3", "--screenshot",
                                         "a.png", "--size", "1280x800", "--stats"});
  EXPECT_EQ(o.scene, "masks");
  EXPECT_EQ(o.frames, 3);
  EXPECT_EQ(o.screenshot, "a.png");
  EXPECT_EQ(o.width, 1280);
  EXPECT_EQ(o.height, 800);
  EXPECT_TRUE(o.stats);
  EXPECT_EQ(parse_options({}).scene, "compare");
  EXPECT_EQ(parse_options({"--open", "w.npy"}).scene, "file");
}

TEST(ViewerOptions, RejectsBadArgumentsWithAMessage) {
  using testing::throws_error;
  EXPECT_TRUE(throws_error([] { parse_options({"--frames", "ten"}); }, {"--frames", "'ten'"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--frames", "0"}); }, {"--frames"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--size", "big"}); }, {"--size", "WxH"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--size", "10x10"}); }, {"--size", "320"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--scene"}); }, {"--scene needs a value"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--bogus"}); }, {"unknown argument '--bogus'"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--screenshot", "a.png"}); }, {"--frames"}));
}

}  // namespace
}  // namespace ag::viewer
