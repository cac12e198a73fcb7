// Dear ImGui's null backend for tests: a context with a built font atlas and a
// display size, no window and no OpenGL. Frames run, widgets lay themselves
// out and report what they drew (drawn_heatmaps(), hover), so tests can
// move the mouse and read the result.
#pragma once

#include <gtest/gtest.h>
#include <imgui.h>

#include <string>

#include "heatmap_widget.h"
#include "scene.h"

namespace ag::viewer {

class NullBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.0f / 60.0f;
    build_font_atlas(*io.Fonts);
  }
  void TearDown() override { ImGui::DestroyContext(); }

  // One frame with `body` inside a full-screen window, as the viewer's main
  // loop runs a scene.
  template <typename Body>
  void frame(Body body) {
    ImGui::NewFrame();
    drawn_heatmaps().clear();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("test", nullptr, ImGuiWindowFlags_NoDecoration);
    body();
    ImGui::End();
    ImGui::Render();
  }

  // Sets `scene`'s knob as --set SCENE.KNOB=VALUE does; a test fails on a
  // name the scene does not have.
  static void set_knob(Scene& scene, const std::string& knob, const std::string& value) {
    for (Knob& k : scene.knobs()) {
      if (k.name == knob) return k.set(value);
    }
    FAIL() << "no knob " << knob;
  }
};

}  // namespace ag::viewer
