// The viewer itself, run_viewer (attograd/viewer.h): attograd-viewer's main
// calls it, and so can a program of its own (tutorial 18 --viewer).
//
// Dear ImGui + GLFW + OpenGL3, laid out like Dear ImGui's own
// example_glfw_opengl3: numbered steps, the state next to the code that uses
// it. The scenes (scene_*.cpp) do the teaching; this file opens the window,
// runs the frame loop and serves the command line (options.h) that tests use:
// --frames, --screenshot, --layout, --dump-inputs, --stats.
//
// The same file builds the browser version (WebAssembly, scripts/web.sh).
// What differs is kept in the short `#ifdef __EMSCRIPTEN__` blocks: the
// browser owns the frame loop (step 4), the context is WebGL 2 (GLSL ES 3.00),
// the canvas follows the page's size, and web/index.html's file picker opens
// files through attograd_open_file.
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#include <emscripten/html5.h>
#endif
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

#include "attograd/viewer.h"
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

// The framebuffer as it is now (before the swap), top row first. Read as
// RGBA, the one format OpenGL ES and WebGL always allow.
ag::viz::Image read_framebuffer(int width, int height) {
  ag::viz::Image image{width, height,
                       std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  std::vector<uint8_t> bottom_up(static_cast<size_t>(width) * height * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const size_t from = (static_cast<size_t>(height - 1 - y) * width + x) * 4;
      std::copy_n(
          bottom_up.begin() + static_cast<ptrdiff_t>(from), 3,
          image.rgb.begin() + static_cast<ptrdiff_t>((static_cast<size_t>(y) * width + x) * 3));
    }
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

// Everything the frame loop reads and writes (the browser calls the loop
// body once per animation frame, so this cannot live on main's stack alone).
struct Viewer {
  ag::viewer::ViewerOptions options;
  std::vector<std::unique_ptr<Scene>> scenes;
  int current = -1;
  GLFWwindow* window = nullptr;
  ag::viewer::FrameStats stats;
  bool select_from_code = true;  // the first frame opens the scene --scene named
  bool show_help = false;
  int frame = 0;
  int exit_code = 0;
};

// One window fills the screen; a tab bar in it holds the scenes.
void begin_screen_window() {
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
  ImGui::Begin("attograd", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoBackground);
}

// The tab bar, and inside it the shown scene (unless !with_scenes).
void draw_tab_bar(Viewer& v, bool with_scenes) {
  if (!ImGui::BeginTabBar("scenes")) return;
  // The scene asked for (--scene, a key, a dropped file); `current` itself
  // follows whichever tab ImGui opens.
  const int requested = v.current;
  for (size_t i = 0; i < v.scenes.size(); ++i) {
    const bool select = v.select_from_code && static_cast<int>(i) == requested;
    if (ImGui::BeginTabItem(v.scenes[i]->label(), nullptr,
                            select ? ImGuiTabItemFlags_SetSelected : 0)) {
      v.current = static_cast<int>(i);
      if (with_scenes) v.scenes[i]->draw();
      ImGui::EndTabItem();
    }
  }
  ImGui::EndTabBar();
}

// A frame that is laid out but neither drawn nor counted, before the first
// one: on a tab bar's first frame ImGui opens the first tab whatever was
// asked for, and selects the requested one from the next frame on. After
// this frame the first counted frame (and --frames 1's screenshot) shows the
// scene --scene or --set named, and that scene has drawn every frame.
void settle_tab_bar(Viewer& v) {
  const int requested = v.current;
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  begin_screen_window();
  draw_tab_bar(v, /*with_scenes=*/false);
  ImGui::End();
  ImGui::EndFrame();
  v.current = requested;
}

// One frame: poll, build the frame, render, (screenshot), swap. Returns false
// once the viewer should stop (the last counted frame, Esc, an error).
bool draw_frame(Viewer& v) {
  const auto start = std::chrono::steady_clock::now();
  ImGuiIO& io = ImGui::GetIO();
  glfwPollEvents();
  for (const std::string& path : g_dropped_files) {
    for (size_t i = 0; i < v.scenes.size(); ++i) {
      if (std::string(v.scenes[i]->name()) == "file") {
        v.scenes[i]->open_file(path);
        v.current = static_cast<int>(i);
        v.select_from_code = true;
      }
    }
  }
  g_dropped_files.clear();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  // Counted frames (tests, screenshots) ignore the mouse: an X server's
  // pointer starts over the window's centre, and its hover tooltip would
  // land in every screenshot.
  if (v.options.frames > 0) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  ImGui::NewFrame();
  ag::viewer::drawn_heatmaps().clear();
  const bool last_frame = v.options.frames > 0 && v.frame + 1 >= v.options.frames;
  if (last_frame) v.scenes[v.current]->before_last_frame();

  begin_screen_window();
  const int keyed = scene_from_keys(v.current, static_cast<int>(v.scenes.size()));
  if (keyed != v.current) {
    v.current = keyed;
    v.select_from_code = true;
  }
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
    glfwSetWindowShouldClose(v.window, GLFW_TRUE);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_F1, false)) v.show_help = !v.show_help;
  draw_tab_bar(v, /*with_scenes=*/true);
  v.select_from_code = false;
  ImGui::End();
  if (v.show_help) draw_help();

  // 5. Render; the screenshot reads the finished frame before the swap.
  ImGui::Render();
  int fb_width = 0, fb_height = 0;
  glfwGetFramebufferSize(v.window, &fb_width, &fb_height);
  glViewport(0, 0, fb_width, fb_height);
  // The clear paints the full-screen window's background: one pass over
  // the screen instead of a clear plus a blended quad (with software GL
  // under Xvfb, filling 1.6 million pixels twice is most of a frame).
  const ImVec4 background = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
  glClearColor(background.x, background.y, background.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (last_frame) {
    v.stats.finish();
    try {
      if (!v.options.screenshot.empty()) {
        ag::viz::write_png(v.options.screenshot, read_framebuffer(fb_width, fb_height));
      }
      if (!v.options.layout.empty()) write_layout(v.options.layout, io.DisplayFramebufferScale.x);
      if (!v.options.dump_inputs.empty())
        ag::save_npz(v.options.dump_inputs, v.scenes[v.current]->inputs());
    } catch (const ag::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      v.exit_code = 1;
      return false;
    }
  }
  glfwSwapBuffers(v.window);
  v.stats.add_frame(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  ++v.frame;
  return !last_frame && !glfwWindowShouldClose(v.window);
}

void print_stats(const Viewer& v) {
  if (!v.options.stats) return;
  v.stats.print(std::cout);
  v.scenes[v.current]->print_stats(std::cout);
}

#ifdef __EMSCRIPTEN__
// The page's canvas fills the browser window (web/index.html); the GLFW
// window, and so ImGui's display size, follows it.
void follow_canvas_size(GLFWwindow* window) {
  double css_width = 0, css_height = 0;
  emscripten_get_element_css_size("#canvas", &css_width, &css_height);
  int width = 0, height = 0;
  glfwGetWindowSize(window, &width, &height);
  if (static_cast<int>(css_width) != width || static_cast<int>(css_height) != height) {
    glfwSetWindowSize(window, static_cast<int>(css_width), static_cast<int>(css_height));
  }
}

// The browser calls this once per animation frame. The first frame and the
// end are reported to the page (attograd.firstFrame, attograd.finished),
// which the headless-browser test waits for. The window is not destroyed at
// the end: the last frame stays on the page, where the test photographs it.
void browser_frame(void* arg) {
  Viewer& v = *static_cast<Viewer*>(arg);
  follow_canvas_size(v.window);
  const bool more = draw_frame(v);
  if (v.frame == 1) EM_ASM(attograd.firstFrame());
  if (more) return;
  emscripten_cancel_main_loop();
  print_stats(v);
  std::fflush(stdout);
  EM_ASM({ attograd.finished($0); }, v.exit_code);
}
#endif

}  // namespace

#ifdef __EMSCRIPTEN__
// The page's file picker writes the chosen file into Emscripten's file system
// and calls this; it opens in the file scene at the next frame, as a file
// dropped on the canvas does (GLFW's drop callback).
extern "C" EMSCRIPTEN_KEEPALIVE void attograd_open_file(const char* path) {
  g_dropped_files.emplace_back(path);
}
#endif

namespace ag::viewer {

// Steps 1 to 6 (viewer.h); in the browser, 1 to 4, and 0 once the browser
// runs the frame loop.
int run_viewer(int argc, char** argv) {
  return run_viewer(std::vector<std::string>(argv + 1, argv + argc));
}

int run_viewer(const std::vector<std::string>& arguments) {
  // 1. The command line (in the browser: the page's URL parameters).
  static Viewer v;  // static: in the browser it outlives main
  try {
    v.options = ag::viewer::parse_options(arguments);
  } catch (const ag::Error& e) {
    std::fprintf(stderr, "%s\n%s", e.what(), ag::viewer::usage());
    return 2;
  }
  const ag::viewer::ViewerOptions& options = v.options;
  if (options.help) {
    std::printf("%s", ag::viewer::usage());
    return 0;
  }
  // One thread per op: the scenes' models are small, and a training
  // worker's ops spread over the pool would compete with the frame for the
  // cores instead of running beside it.
  ag::set_num_threads(1);
  v.scenes = ag::viewer::make_scenes();
  if (options.list_scenes) {
    for (const auto& scene : v.scenes) std::printf("%s\n", scene->name());
    return 0;
  }
  if (options.list_knobs) {
    ag::viewer::print_knobs(std::cout, v.scenes);
    return 0;
  }
  for (size_t i = 0; i < v.scenes.size(); ++i) {
    if (options.scene == v.scenes[i]->name()) v.current = static_cast<int>(i);
  }
  // --set, in order; without --scene the first one's scene opens.
  for (const std::string& setting : options.settings) {
    try {
      const size_t scene = ag::viewer::apply_setting(v.scenes, setting);
      if (!options.scene_chosen && &setting == &options.settings.front()) {
        v.current = static_cast<int>(scene);
      }
    } catch (const ag::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
  }
  if (v.current < 0) {
    std::fprintf(stderr, "attograd-viewer: no scene '%s'; --list-scenes lists them\n",
                 options.scene.c_str());
    return 2;
  }
  if (!options.open.empty()) v.scenes[v.current]->open_file(options.open);

  // 2. GLFW: a window with an OpenGL 3.0 context (GLSL 130); in the browser
  // a WebGL 2 context (OpenGL ES 3.0, GLSL ES 3.00) on the page's canvas.
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "attograd-viewer: no display (is DISPLAY set?). Without one, try\n"
                 "  xvfb-run -a attograd-viewer --frames 1 --screenshot shot.png\n");
    return 3;
  }
#ifdef __EMSCRIPTEN__
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  const char* glsl_version = "#version 300 es";
#else
  const char* glsl_version = "#version 130";
#endif
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  v.window = glfwCreateWindow(options.width, options.height, "attograd viewer", nullptr, nullptr);
  if (v.window == nullptr) {
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(v.window);
  // Vsync when a person watches; as fast as it goes when frames are counted.
  glfwSwapInterval(options.frames > 0 ? 0 : 1);
  glfwSetDropCallback(v.window, on_drop);

  // 3. Dear ImGui: context, style, a readable font scaled for HiDPI screens.
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is the program's, not a file's
  ImGui::StyleColorsDark();
  float content_scale = 1.0f;  // the browser lays the page out in CSS pixels
#ifndef __EMSCRIPTEN__
  glfwGetWindowContentScale(v.window, &content_scale, nullptr);
#endif
  ImGui::GetStyle().ScaleAllSizes(content_scale);
  // The browser build embeds this file at the same path (--embed-file).
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  // Latin, Greek (tau, sigma), arrows and maths symbols (sqrt): the labels use
  // them; Latin Extended-A and the IPA block: the pronounce scene's IPA (ŋ, ʃ).
  static const ImWchar kGlyphs[] = {0x0020, 0x00FF, 0x0100, 0x017F, 0x0250, 0x02AF, 0x0391,
                                    0x03C9, 0x2190, 0x21FF, 0x2200, 0x22FF, 0};
  if (std::ifstream(font).good()) {
    io.Fonts->AddFontFromFileTTF(font, 15.0f * content_scale, nullptr, kGlyphs);
  } else {
    io.FontGlobalScale = content_scale;  // ImGui's built-in font, scaled
  }
  ag::viewer::build_font_atlas(*io.Fonts);
  ImGui_ImplGlfw_InitForOpenGL(v.window, true);
  ImGui_ImplOpenGL3_Init(glsl_version);
  settle_tab_bar(v);

  // 4. The frame loop (draw_frame: poll, build the frame, render, swap). The
  // browser runs it itself, one call per animation frame; main returns at
  // once and the page keeps running.
#ifdef __EMSCRIPTEN__
  emscripten_set_main_loop_arg(browser_frame, &v, 0, false);
  return 0;
#else
  while (draw_frame(v)) {
  }
  if (v.exit_code == 0) print_stats(v);

  // 6. Cleanup, in the reverse order of set-up. The scenes go first, while
  // the library's thread pool (a static, gone by the time `v` would be
  // destroyed) still serves the training workers finishing their step.
  v.scenes.clear();
  if (v.exit_code != 0) return v.exit_code;
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(v.window);
  glfwTerminate();
  return 0;
#endif
}

}  // namespace ag::viewer
