// The viewer's widgets and scenes without a window: Dear ImGui's null
// backend (a context, a built font atlas and a display size; no OpenGL)
// runs frames and the tests read what the widgets report.
#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include "heatmap_widget.h"
#include "null_backend.h"
#include "options.h"
#include "plot.h"
#include "scene.h"
#include "scene_training.h"
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

// With labels (an alignment's characters) the tooltip names them: the
// output token, the source token and the weight.
TEST_F(NullBackend, HoverNamesTheLabelsOfTheCell) {
  const Tensor weights = softmax(randn({2, 4}), -1);
  HeatmapView view{"test/alignment",
                   "alignment",
                   weights,
                   Tensor(),
                   viz::ColorScale{viz::Colormap::Viridis, 0.0, 1.0},
                   "source",
                   "output",
                   "output",
                   "source"};
  view.row_labels = {"9", "<eos>"};
  view.col_labels = {"1", "9", "8", "<eos>"};
  HeatmapHover hover;
  frame([&] { hover = draw_heatmap(view); });
  const DrawnHeatmap map = drawn_heatmaps()[0];
  ImGui::GetIO().MousePos = ImVec2(map.x + map.cell * 1.5f, map.y + map.cell * 0.5f);
  frame([&] { hover = draw_heatmap(view); });
  ASSERT_TRUE(hover.active);
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", weights.to_vector()[1]);
  EXPECT_EQ(hover.text, std::string("output 0 '9', source 1 '9'\n") + value);
  // A label per row and column, or an error naming the counts.
  view.col_labels.pop_back();
  ImGui::NewFrame();
  ImGui::Begin("bad");
  EXPECT_TRUE(testing::throws_error([&] { draw_heatmap(view); },
                                    {"heatmap test/alignment", "3 column labels for 4 columns"}));
  ImGui::End();
  ImGui::Render();
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
    // Making the scene checks that its name and label are the tab's (an
    // ag::Error naming both otherwise).
    EXPECT_NO_THROW(made_scene(*scene));
    for (int i = 0; i < 3; ++i) frame([&] { scene->draw(); });
    EXPECT_FALSE(drawn_heatmaps().empty());
    EXPECT_FALSE(scene->inputs().empty());
  }
}

// The choices a knob accepts ("a | b | c"); none for a number knob.
std::vector<std::string> choices_of(const Knob& knob) {
  std::vector<std::string> choices;
  if (knob.accepts.find(" | ") == std::string::npos) return choices;
  size_t start = 0;
  while (start <= knob.accepts.size()) {
    const size_t bar = std::min(knob.accepts.find(" | ", start), knob.accepts.size());
    choices.push_back(knob.accepts.substr(start, bar - start));
    start = bar + 3;
  }
  return choices;
}

// --set reaches every choice of every knob, and the scene draws with it.
TEST_F(NullBackend, EveryKnobChoiceAppliesAndDraws) {
  std::vector<std::unique_ptr<Scene>> scenes = make_scenes();
  int applied = 0;
  for (size_t i = 0; i < scenes.size(); ++i) {
    for (const Knob& knob : scenes[i]->knobs()) {
      for (const std::string& choice : choices_of(knob)) {
        const std::string setting = std::string(scenes[i]->name()) + "." + knob.name + "=" + choice;
        SCOPED_TRACE(setting);
        EXPECT_EQ(apply_setting(scenes, setting), i);
        frame([&] { scenes[i]->draw(); });
        EXPECT_FALSE(drawn_heatmaps().empty());
        ++applied;
      }
    }
  }
  EXPECT_GE(applied, 7 + 2);  // at least the masks scene's seven modes and the training tasks
}

TEST_F(NullBackend, KnobsChangeWhatTheSceneFeedsTheLibrary) {
  std::vector<std::unique_ptr<Scene>> scenes = make_scenes();
  auto scene_named = [&](const std::string& name) -> Scene& {
    for (auto& scene : scenes) {
      if (name == scene->name()) return *scene;
    }
    throw Error("no scene " + name);
  };
  // Causal mode: valid_lens make way for the lower triangle.
  apply_setting(scenes, "masks.mode=causal");
  const Tensor keep = scene_named("masks").inputs().at("keep");
  EXPECT_EQ(keep.to_vector(), expand(nn::causal_mask(6, 6), {1, 6, 6}).to_vector());
  // Training: the other task, and numbers within range.
  apply_setting(scenes, "training.task=nadaraya-watson");
  EXPECT_EQ(scene_named("training").inputs().count("x_train"), 1u);
  apply_setting(scenes, "training.lr=0.2");
  auto& training = dynamic_cast<TrainingScene&>(made_scene(scene_named("training")));
  EXPECT_DOUBLE_EQ(training.session().learning_rate(), 0.2);
  apply_setting(scenes, "training.paused=yes");
  frame([&] { training.draw(); });
  EXPECT_EQ(training.session().steps(), 0);
}

// The scaling scene's x axis, d = 2 .. 512: every other power of two.
TEST(PlotTicks, Log2TicksArePowersOfTwoAtMostSix) {
  EXPECT_EQ(log2_ticks(1, 9), (std::vector<double>{2, 8, 32, 128, 512}));
  EXPECT_EQ(log2_ticks(1, 3), (std::vector<double>{2, 4, 8}));
  EXPECT_EQ(log2_ticks(0.5, 2.5), (std::vector<double>{2, 4}));
  EXPECT_EQ(log2_ticks(0, 20), (std::vector<double>{1, 16, 256, 4096, 65536, 1048576}));
}

TEST(ViewerKnobs, UnknownSceneKnobOrValueSaysWhatIsAccepted) {
  using testing::throws_error;
  std::vector<std::unique_ptr<Scene>> scenes = make_scenes();
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "nope.mode=causal"); },
                           {"--set nope.mode=causal", "no scene 'nope'", "masks", "training"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "masks.speed=2"); },
                           {"scene masks has no knob 'speed'", "mode"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "masks.mode=sideways"); },
                           {"--set masks.mode", "batch-lengths |", "causal", "'sideways'"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "training.lr=5"); },
                           {"--set training.lr", "from 0.001 to 1", "'5'"}));
  EXPECT_TRUE(
      throws_error([&] { apply_setting(scenes, "training.seed=1.5"); }, {"whole number", "'1.5'"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "training.seed=x"); }, {"'x'"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "graph.step=50"); }, {"from 1 to"}));
}

TEST(ViewerOptions, SetIsRepeatableAndCommaSeparated) {
  const ViewerOptions o =
      parse_options({"--set", "masks.mode=causal,masks.seed=3", "--set", "training.lr=0.1"});
  EXPECT_EQ(o.settings,
            (std::vector<std::string>{"masks.mode=causal", "masks.seed=3", "training.lr=0.1"}));
  EXPECT_FALSE(o.scene_chosen);  // the first --set's scene opens
  EXPECT_TRUE(parse_options({"--scene", "masks"}).scene_chosen);
  EXPECT_TRUE(parse_options({"--list-knobs"}).list_knobs);
  using testing::throws_error;
  EXPECT_TRUE(throws_error([] { parse_options({"--set", "masks"}); }, {"SCENE.KNOB=VALUE"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--set", "a=b.c"}); }, {"'a=b.c'"}));
  EXPECT_TRUE(throws_error([] { parse_options({"--set", "a.b=1,"}); }, {"got ''"}));
  // A part without '=' continues a list knob's value.
  EXPECT_EQ(
      parse_options({"--set", "pronounce.models=a.npz,b+c.npz,pronounce.word=knife"}).settings,
      (std::vector<std::string>{"pronounce.models=a.npz,b+c.npz", "pronounce.word=knife"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse_options({"--set", "a.npz,pronounce.word=x"});
      },
      {"got 'a.npz'"}));
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
