// The file scene without a window (ImGui's null backend): what it says about
// each bad file, that the previous content stays, and that drawing the
// message never throws.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <limits>

#include "file_fixtures.h"
#include "heatmap_widget.h"
#include "null_backend.h"
#include "scene_file.h"

namespace ag::viewer {
namespace {

namespace fx = file_fixtures;

class FileSceneUi : public NullBackend {
 protected:
  // One frame of the scene in a full-screen window.
  void frame() {
    NullBackend::frame([&] { scene.draw(); });
  }

  // Opens `path`, draws a frame and returns the message.
  std::string open(const std::string& path) {
    scene.open_file(path);
    EXPECT_NO_THROW(frame()) << path;
    return scene.error();
  }

  FileScene scene;
  std::string dir = fx::directory("file-scene-ui");
};

TEST_F(FileSceneUi, StartsWithTheExampleAndNoMessage) {
  EXPECT_EQ(scene.content(), "MultiHeadAttention");
  EXPECT_EQ(scene.error(), "");
  frame();
  EXPECT_EQ(drawn_heatmaps().back().id, "file/head3");
}

TEST_F(FileSceneUi, GoodWeightsReplaceTheContent) {
  const std::string path = dir + "/weights.npy";
  save_npy(path, fx::example_weights());
  EXPECT_EQ(open(path), "");
  EXPECT_EQ(scene.content(), "weights");
  EXPECT_EQ(scene.inputs().at("weights").shape(), Shape({2, 3, 4, 5}));
}

// Each bad file: a message naming the file and the reason; the weights shown
// before stay.
TEST_F(FileSceneUi, BadFilesSayWhyAndKeepWhatWasShown) {
  const std::string good = dir + "/weights.npy";
  save_npy(good, fx::example_weights());
  ASSERT_EQ(open(good), "");
  const std::pair<std::string, std::string> cases[] = {
      {fx::text_file(dir), "not a .npy file"},
      {fx::truncated_npy(dir), "data is"},
      {fx::huge_header_npy(dir), "[100000, 100000]"},
      {fx::one_dim_npy(dir), "at least two dims"},
      {fx::linear_state_dict(dir), "not the state dict of a module the viewer knows"},
      {fx::mixed_npz(dir), "mixes parameters (W_q.weight) with other arrays (attention)"},
      {dir + "/missing.npy", "cannot open"},
  };
  for (const auto& [path, reason] : cases) {
    const std::string message = open(path);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << "expected '" << reason << "' in\n"
                                                       << message;
    EXPECT_EQ(scene.content(), "weights") << path;
    EXPECT_EQ(scene.inputs().at("weights").shape(), Shape({2, 3, 4, 5})) << path;
  }
  // A good file clears the message.
  EXPECT_EQ(open(good), "");
}

TEST_F(FileSceneUi, NonFiniteValuesAreShownAndCounted) {
  const std::string path = dir + "/nan.npy";
  const double inf = std::numeric_limits<double>::infinity();
  save_npy(path, tensor({0.5, 0.5, -inf, std::numeric_limits<double>::quiet_NaN()}, {2, 2}));
  const std::string message = open(path);
  EXPECT_EQ(scene.content(), "weights");
  EXPECT_NE(message.find("2 of 4 values are not finite"), std::string::npos) << message;
  EXPECT_NE(message.find("map 0 at query 1, key 0"), std::string::npos) << message;
}

TEST_F(FileSceneUi, StateDictsOfOurModulesAreRecognised) {
  manual_seed(1);
  nn::AdditiveAttention additive(2, 3, 4);
  save_npz(dir + "/additive.npz", additive.state_dict());
  EXPECT_EQ(open(dir + "/additive.npz"), "");
  EXPECT_EQ(scene.content(), "AdditiveAttention");
  EXPECT_EQ(scene.inputs().count("additive.w_v.weight"), 1u);

  // A parameter with NaN, or of the wrong shape for the others: refused.
  auto state = additive.state_dict();
  state["w_v.weight"] = full({1, 4}, std::numeric_limits<double>::quiet_NaN());
  save_npz(dir + "/nan_state.npz", state);
  EXPECT_NE(open(dir + "/nan_state.npz").find("w_v.weight has values that are not finite"),
            std::string::npos);
  state["w_v.weight"] = ones({1, 5});
  save_npz(dir + "/bad_shape.npz", state);
  EXPECT_NE(open(dir + "/bad_shape.npz").find("w_v.weight"), std::string::npos);
  EXPECT_EQ(scene.content(), "AdditiveAttention");
}

}  // namespace
}  // namespace ag::viewer
