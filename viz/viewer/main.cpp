// attograd-viewer: additive and dot-product attention side by side, live.
//
// Dear ImGui + GLFW + OpenGL3, laid out like Dear ImGui's own
// example_glfw_opengl3: numbered steps, the state next to the code that uses
// it. The scenes (scene_*.cpp) do the teaching; this file opens the window,
// runs the frame loop and serves the command line (options.h) that tests use:
// --frames, --screenshot, --layout, --dump-inputs, --stats.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "frame_stats.h"
#include "heatmap_widget.h"
#include "options.h"
#include "scene.h"

namespace {

using ag::viewer::Scene;

// Dropped files go to the file scene at the start of the next frame.
std::vector<std::string> g_dropped_files;

void on_glfw_error(int code, const char* description) {
  std::fprintf(stderr, "attograd-viewer: GLFW error %d: %s\n", code, description);
}

void on_drop(GLFWwindow*, int count, const char** paths) {
  for (int i = 0; i < count; ++i) g_dropped_files.emplace_back(paths[i]);
}

// The framebuffer as it is now (before the swap), top row first.
ag::viz::Image read_framebuffer(int width, int height) {
  ag::viz::Image image{width, height,
                       std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  std::vector<uint8_t> bottom_up(image.rgb.size());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, bottom_up.data());
  const size_t row = static_cast<size_t>(width) * 3;
  for (int y = 0; y < height; ++y) {
    std::copy_n(bottom_up.begin() + static_cast<ptrdiff_t>(row * (height - 1 - y)), row,
                image.rgb.begin() + static_cast<ptrdiff_t>(row * y));
  }
  return image;
}

// One line per heatmap drawn in the last frame, in framebuffer pixels:
//   id x y cell rows cols colormap lo hi
void write_layout(const std::string& path, float pixel_scale) {
  std::ofstream out(path);
  out.precision(17);
  for (const auto& map : ag::viewer::drawn_heatmaps()) {
    out << map.id << " " << map.x * pixel_scale << " " << map.y * pixel_scale << " "
        << map.cell * pixel_scale << " " << map.rows << " " << map.cols << " "
        << ag::viz::colormap_name(map.scale.map) << " " << map.scale.lo << " " << map.scale.hi
        << "\n";
  }
  if (!out) throw ag::Error("attograd-viewer: cannot write --layout " + path);
}

// Digit keys switch scenes (GLFW's key codes for digits are their ASCII codes).
int scene_from_keys(int current, int count) {
  if (ImGui::GetIO().WantTextInput) return current;
  for (int k = 0; k < count && k < 9; ++k) {
    if (ImGui::IsKeyPressed('1' + k, false)) return k;
  }
  return current;
}

void draw_help() {
  ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x / 2, 80), ImGuiCond_Always,
                          ImVec2(0.5f, 0.0f));
  ImGui::Begin("Keys", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
  ImGui::TextUnformatted(
      "1-9     switch scene\n"
      "F1      show or hide this help\n"
      "Esc     quit\n"
      "mouse   hover a cell for its exact value; drag points in the playground");
  ImGui::End();
}

}  // namespace

int main(int argc, char** argv) {
  // 1. The command line.
  ag::viewer::ViewerOptions options;
  try {
    options = ag::viewer::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const ag::Error& e) {
    std::fprintf(stderr, "%s\n%s", e.what(), ag::viewer::usage());
    return 2;
  }
  if (options.help) {
    std::printf("%s", ag::viewer::usage());
    return 0;
  }
  std::vector<std::unique_ptr<Scene>> scenes = ag::viewer::make_scenes();
  if (options.list_scenes) {
    for (const auto& scene : scenes) std::printf("%s\n", scene->name());
    return 0;
  }
  int current = -1;
  for (size_t i = 0; i < scenes.size(); ++i) {
    if (options.scene == scenes[i]->name()) current = static_cast<int>(i);
  }
  if (current < 0) {
    std::fprintf(stderr, "attograd-viewer: no scene '%s'; --list-scenes lists them\n",
                 options.scene.c_str());
    return 2;
  }
  if (!options.open.empty()) scenes[current]->open_file(options.open);

  // 2. GLFW: a window with an OpenGL 3.0 context (GLSL 130).
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "attograd-viewer: no display (is DISPLAY set?). Without one, try\n"
                 "  xvfb-run -a attograd-viewer --frames 1 --screenshot shot.png\n");
    return 3;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  GLFWwindow* window =
      glfwCreateWindow(options.width, options.height, "attograd viewer", nullptr, nullptr);
  if (window == nullptr) {
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(window);
  // Vsync when a person watches; as fast as it goes when frames are counted.
  glfwSwapInterval(options.frames > 0 ? 0 : 1);
  glfwSetDropCallback(window, on_drop);

  // 3. Dear ImGui: context, style, a readable font scaled for HiDPI screens.
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is the program's, not a file's
  ImGui::StyleColorsDark();
  float content_scale = 1.0f;
  glfwGetWindowContentScale(window, &content_scale, nullptr);
  ImGui::GetStyle().ScaleAllSizes(content_scale);
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  // Latin, Greek (tau, sigma), arrows and maths symbols (sqrt): the labels use them.
  static const ImWchar kGlyphs[] = {0x0020, 0x00FF, 0x0391, 0x03C9, 0x2190,
                                    0x21FF, 0x2200, 0x22FF, 0};
  if (std::ifstream(font).good()) {
    io.Fonts->AddFontFromFileTTF(font, 15.0f * content_scale, nullptr, kGlyphs);
  } else {
    io.FontGlobalScale = content_scale;  // ImGui's built-in font, scaled
  }
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  // 4. The frame loop: poll, build the frame, render, (screenshot), swap.
  ag::viewer::FrameStats stats;
  bool select_from_code = true;  // the first frame opens the scene --scene named
  bool show_help = false;
  for (int frame = 0; !glfwWindowShouldClose(window); ++frame) {
    const auto start = std::chrono::steady_clock::now();
    glfwPollEvents();
    for (const std::string& path : g_dropped_files) {
      for (size_t i = 0; i < scenes.size(); ++i) {
        if (std::string(scenes[i]->name()) == "file") {
          scenes[i]->open_file(path);
          current = static_cast<int>(i);
          select_from_code = true;
        }
      }
    }
    g_dropped_files.clear();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // Counted frames (tests, screenshots) ignore the mouse: an X server's
    // pointer starts over the window's centre, and its hover tooltip would
    // land in every screenshot.
    if (options.frames > 0) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    ImGui::NewFrame();
    ag::viewer::drawn_heatmaps().clear();

    // One window fills the screen; a tab bar holds the scenes.
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::Begin("attograd", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoBackground);
    const int keyed = scene_from_keys(current, static_cast<int>(scenes.size()));
    if (keyed != current) {
      current = keyed;
      select_from_code = true;
    }
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
      glfwSetWindowShouldClose(window, GLFW_TRUE);
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_F1, false)) show_help = !show_help;
    if (ImGui::BeginTabBar("scenes")) {
      // The scene asked for (--scene, a key, a dropped file); `current` itself
      // follows whichever tab ImGui opens, the first one on the first frame.
      const int requested = current;
      for (size_t i = 0; i < scenes.size(); ++i) {
        const bool select = select_from_code && static_cast<int>(i) == requested;
        if (ImGui::BeginTabItem(scenes[i]->label(), nullptr,
                                select ? ImGuiTabItemFlags_SetSelected : 0)) {
          current = static_cast<int>(i);
          scenes[i]->draw();
          ImGui::EndTabItem();
        }
      }
      ImGui::EndTabBar();
    }
    select_from_code = false;
    ImGui::End();
    if (show_help) draw_help();

    // 5. Render; the screenshot reads the finished frame before the swap.
    ImGui::Render();
    int fb_width = 0, fb_height = 0;
    glfwGetFramebufferSize(window, &fb_width, &fb_height);
    glViewport(0, 0, fb_width, fb_height);
    // The clear paints the full-screen window's background: one pass over
    // the screen instead of a clear plus a blended quad (with software GL
    // under Xvfb, filling 1.6 million pixels twice is most of a frame).
    const ImVec4 background = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
    glClearColor(background.x, background.y, background.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const bool last_frame = options.frames > 0 && frame + 1 >= options.frames;
    if (last_frame) {
      stats.finish();
      try {
        if (!options.screenshot.empty()) {
          ag::viz::write_png(options.screenshot, read_framebuffer(fb_width, fb_height));
        }
        if (!options.layout.empty()) write_layout(options.layout, io.DisplayFramebufferScale.x);
        if (!options.dump_inputs.empty())
          ag::save_npz(options.dump_inputs, scenes[current]->inputs());
      } catch (const ag::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
      }
    }
    glfwSwapBuffers(window);
    stats.add_frame(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (last_frame) glfwSetWindowShouldClose(window, GLFW_TRUE);
  }
  if (options.stats) {
    stats.print(std::cout);
    scenes[current]->print_stats(std::cout);
  }

  // 6. Cleanup, in the reverse order of set-up.
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}
