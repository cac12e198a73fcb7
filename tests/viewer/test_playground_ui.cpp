// The playground under Dear ImGui's null backend (no display): the mouse
// grabs a key, drags it, and the scene's inputs — hence both weight maps,
// which the library recomputes from them — follow.
#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <cmath>

#include "heatmap_widget.h"
#include "null_backend.h"
#include "scene.h"

namespace ag::viewer {
namespace {

class PlaygroundUi : public NullBackend {
 protected:
  void SetUp() override {
    NullBackend::SetUp();
    for (auto& scene : make_scenes()) {
      if (std::string(scene->name()) == "playground") playground_ = std::move(scene);
    }
    ASSERT_NE(playground_, nullptr);
  }

  // One frame of the scene in a full-screen window, the mouse at `mouse`
  // with its left (or right) button down or up.
  void frame(ImVec2 mouse, bool down, bool right_down = false) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseDown[0] = down;
    io.MouseDown[1] = right_down;
    NullBackend::frame([&] { playground_->draw(); });
  }

  // Right-clicks at `at`, then clicks the first item of the menu that opens.
  void first_menu_item(ImVec2 at) {
    frame(at, false);
    frame(at, false, true);
    frame(at, false);
    const ImGuiContext& g = *ImGui::GetCurrentContext();
    ASSERT_EQ(g.OpenPopupStack.Size, 1);
    const ImGuiWindow* menu = g.OpenPopupStack[0].Window;
    ASSERT_NE(menu, nullptr);
    const ImVec2 item(menu->Pos.x + g.Style.WindowPadding.x + 10,
                      menu->Pos.y + g.Style.WindowPadding.y + ImGui::GetTextLineHeight() / 2);
    frame(item, false);
    frame(item, true);
    frame(item, false);
  }

  // Where point `i` of `which` ("keys" or "queries", [1, n, 2]) is on screen.
  ImVec2 on_screen(const std::string& which, int64_t i) const {
    const auto in = playground_->inputs();
    const std::vector<double> canvas = in.at("canvas").to_vector();
    const std::vector<double> p = in.at(which).to_vector();
    return ImVec2(static_cast<float>(canvas[0] * p[2 * i] + canvas[1]),
                  static_cast<float>(canvas[2] * p[2 * i + 1] + canvas[3]));
  }

  // Dot-product weights [Tq, Tk] recomputed by the library from the inputs.
  Tensor dot_weights() const {
    const auto in = playground_->inputs();
    nn::DotProductAttention dot;
    dot.eval();
    dot(in.at("queries"), in.at("keys"), in.at("values"), in.at("valid_lens"));
    return squeeze(dot.attention_weights(), 0);
  }

  std::unique_ptr<Scene> playground_;
};

TEST_F(PlaygroundUi, DraggingAKeyMovesItAndChangesTheWeights) {
  const ImVec2 away(5, 995);
  frame(away, false);  // lays the windows out: hovering needs a previous frame
  frame(away, false);
  const Tensor keys_before = playground_->inputs().at("keys");
  const Tensor weights_before = dot_weights();
  const double pixels_per_unit = playground_->inputs().at("canvas").to_vector()[0];

  // Press on key 0, move 60 pixels right and 40 up over two frames, release.
  const ImVec2 start = on_screen("keys", 0);
  frame(start, false);
  frame(start, true);
  frame(ImVec2(start.x + 30, start.y - 20), true);
  frame(ImVec2(start.x + 60, start.y - 40), true);
  frame(ImVec2(start.x + 60, start.y - 40), false);

  const std::vector<double> before = keys_before.to_vector();
  const std::vector<double> after = playground_->inputs().at("keys").to_vector();
  ASSERT_EQ(after.size(), before.size());
  EXPECT_NEAR(after[0] - before[0], 60 / pixels_per_unit, 1e-4);
  EXPECT_NEAR(after[1] - before[1], 40 / pixels_per_unit, 1e-4);
  for (size_t i = 2; i < after.size(); ++i) EXPECT_EQ(after[i], before[i]) << i;
  EXPECT_GT(max(abs(dot_weights() - weights_before)).item(), 1e-3);

  // Released: moving the mouse again moves nothing.
  frame(ImVec2(start.x + 200, start.y + 100), false);
  EXPECT_EQ(playground_->inputs().at("keys").to_vector(), after);
}

TEST_F(PlaygroundUi, DraggingAQueryMovesOnlyThatQuery) {
  const ImVec2 away(5, 995);
  frame(away, false);
  frame(away, false);
  const std::vector<double> keys = playground_->inputs().at("keys").to_vector();
  const std::vector<double> before = playground_->inputs().at("queries").to_vector();
  const ImVec2 start = on_screen("queries", 1);
  frame(start, false);
  frame(start, true);
  frame(ImVec2(start.x - 50, start.y), true);
  frame(ImVec2(start.x - 50, start.y), false);
  const std::vector<double> after = playground_->inputs().at("queries").to_vector();
  EXPECT_LT(after[2], before[2]);
  EXPECT_FLOAT_EQ(static_cast<float>(after[3]), static_cast<float>(before[3]));
  EXPECT_EQ(after[0], before[0]);
  EXPECT_EQ(playground_->inputs().at("keys").to_vector(), keys);
}

TEST_F(PlaygroundUi, DraggingEmptySpaceMovesNothing) {
  const ImVec2 away(5, 995);
  frame(away, false);
  frame(away, false);
  const auto before = playground_->inputs();
  // The canvas' corner at (-2.9, -2.9), where no default point sits.
  const std::vector<double> canvas = before.at("canvas").to_vector();
  const ImVec2 empty(static_cast<float>(canvas[0] * -2.9 + canvas[1]),
                     static_cast<float>(canvas[2] * -2.9 + canvas[3]));
  frame(empty, false);
  frame(empty, true);
  frame(ImVec2(empty.x + 80, empty.y - 80), true);
  frame(ImVec2(empty.x + 80, empty.y - 80), false);
  const auto after = playground_->inputs();
  EXPECT_EQ(after.at("keys").to_vector(), before.at("keys").to_vector());
  EXPECT_EQ(after.at("queries").to_vector(), before.at("queries").to_vector());
}

}  // namespace
}  // namespace ag::viewer

namespace ag::viewer {
namespace {

TEST_F(PlaygroundUi, RightClickAddsAKeyThereAndRemovesIt) {
  const ImVec2 away(5, 995);
  frame(away, false);
  frame(away, false);
  const int64_t num_keys = playground_->inputs().at("keys").size(1);
  const std::vector<double> canvas = playground_->inputs().at("canvas").to_vector();
  // (-2.5, 2.5): an empty spot of the default points.
  const ImVec2 spot(static_cast<float>(canvas[0] * -2.5 + canvas[1]),
                    static_cast<float>(canvas[2] * 2.5 + canvas[3]));

  first_menu_item(spot);  // "add a key here"
  auto in = playground_->inputs();
  ASSERT_EQ(in.at("keys").size(1), num_keys + 1);
  const std::vector<double> keys = in.at("keys").to_vector();
  EXPECT_NEAR(keys[2 * num_keys], -2.5, 1.0 / canvas[0]);
  EXPECT_NEAR(keys[2 * num_keys + 1], 2.5, 1.0 / canvas[0]);
  // It has a value, and valid_len (all keys by default) still covers every key.
  EXPECT_EQ(in.at("values").size(1), num_keys + 1);
  EXPECT_EQ(in.at("valid_lens").item(), static_cast<double>(num_keys + 1));

  first_menu_item(on_screen("keys", num_keys));  // "remove k<n>"
  in = playground_->inputs();
  EXPECT_EQ(in.at("keys").size(1), num_keys);
  EXPECT_EQ(in.at("valid_lens").item(), static_cast<double>(num_keys));
}

}  // namespace
}  // namespace ag::viewer
