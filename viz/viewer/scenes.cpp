// The scene list (tab order) and the small UI helpers every scene shares.
#include <imgui.h>

#include <algorithm>

#include "scene.h"

namespace ag::viewer {

// Each defined in its scene_NAME.cpp.
std::unique_ptr<Scene> make_compare_scene();
std::unique_ptr<Scene> make_playground_scene();
std::unique_ptr<Scene> make_masks_scene();
std::unique_ptr<Scene> make_scaling_scene();
std::unique_ptr<Scene> make_multihead_scene();
std::unique_ptr<Scene> make_file_scene();
std::unique_ptr<Scene> make_training_scene();
std::unique_ptr<Scene> make_step_scene();
std::unique_ptr<Scene> make_graph_scene();

std::vector<std::unique_ptr<Scene>> make_scenes() {
  std::vector<std::unique_ptr<Scene>> scenes;
  scenes.push_back(make_compare_scene());
  scenes.push_back(make_playground_scene());
  scenes.push_back(make_masks_scene());
  scenes.push_back(make_scaling_scene());
  scenes.push_back(make_multihead_scene());
  scenes.push_back(make_file_scene());
  scenes.push_back(make_training_scene());
  scenes.push_back(make_step_scene());
  scenes.push_back(make_graph_scene());
  return scenes;
}

void draw_panes(float controls_width, const std::function<void()>& controls,
                const std::string& error, const std::function<void()>& content) {
  ImGui::BeginChild("controls", ImVec2(controls_width, 0), true);
  controls();
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("content", ImVec2(0, 0), false);
  if (error.empty()) {
    content();
  } else {
    show_error(error);
  }
  ImGui::EndChild();
}

void show_error(const std::string& message) {
  ImGui::PushStyleColor(ImGuiCol_ChildBg, IM_COL32(90, 20, 20, 255));
  ImGui::BeginChild("error", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 4), true);
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 200, 255));
  ImGui::TextWrapped("%s", message.c_str());
  ImGui::PopStyleColor();
  ImGui::EndChild();
  ImGui::PopStyleColor();
}

void draw_prev_next(int& index, int count) {
  ImGui::BeginDisabled(index <= 0);
  if (ImGui::Button("< Prev")) --index;
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(index + 1 >= count);
  if (ImGui::Button("Next >")) ++index;
  ImGui::EndDisabled();
  if (!ImGui::GetIO().WantTextInput) {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) ++index;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) --index;
  }
  index = std::clamp(index, 0, count - 1);
}

void show_note(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", text);
  ImGui::PopStyleColor();
}

std::string describe(const Tensor& t) {
  return shape_str(t.shape()) + " " + dtype_name(t.dtype());
}

}  // namespace ag::viewer
