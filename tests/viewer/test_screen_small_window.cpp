// Every scene at 1024x700, the smallest window the viewer is laid out for:
// no heatmap is cut by the window's edge (a map is either whole on screen or
// whole below it, in a region that scrolls), none leaves the window on the
// right, and the maps on screen keep cells a learner can read. The training
// scene, which used to squeeze its six maps to 3-pixel cells and cut the
// last one off, shows all of them with cells of at least 10 pixels.
#include <gtest/gtest.h>

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

TEST(SmallWindow, EverySceneFitsItsMapsAt1024x700) {
  for (const char* scene : {"compare", "playground", "masks", "scaling", "multihead", "file",
                            "step", "graph", "translate", "transformer"}) {
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
  for (const char* model : {"additive", "dot"}) {
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

}  // namespace
}  // namespace ag::viewer_test
