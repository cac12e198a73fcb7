// A scene is one tab of the viewer: its own state (inputs, modules, knobs)
// and a draw() that runs once a frame inside the tab. Scenes only read
// tensors: they call the library's forward and backward, never edit a graph.
//
// Each scene lives in its own scene_NAME.cpp, panels as functions next to the
// state they use, and registers itself in scenes.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace ag::viewer {

class Scene {
 public:
  virtual ~Scene() = default;
  // The name on the command line (--scene NAME) and in --list-scenes.
  virtual const char* name() const = 0;
  // The tab's label.
  virtual const char* label() const = 0;
  // Draws one frame of the scene inside the current window.
  virtual void draw() = 0;
  // The tensors the scene feeds the library this frame (inputs, lengths,
  // masks and module parameters, by name): --dump-inputs saves them so that
  // tests recompute what the scene shows with the library itself.
  virtual std::map<std::string, Tensor> inputs() const = 0;
  // A file the learner opened (--open, or dropped on the window). Only the
  // file scene takes files; the others ignore them.
  virtual void open_file(const std::string& /*path*/) {}
  // Extra "key value" lines for --stats at exit; scenes that train print
  // loss_first and loss_last.
  virtual void print_stats(std::ostream& /*out*/) const {}
};

// Every scene, in tab order.
std::vector<std::unique_ptr<Scene>> make_scenes();

// ---- small UI helpers the scenes share -----------------------------------------
// The layout most scenes use: a bordered column of knobs `controls_width`
// wide on the left; on the right the scene's content, or, when its last
// computation failed, the error in its place.
void draw_panes(float controls_width, const std::function<void()>& controls,
                const std::string& error, const std::function<void()>& content);
// A red, wrapped message: how the viewer reports an ag::Error to the learner.
void show_error(const std::string& message);
// "< Prev" and "Next >" buttons, and the Left / Right arrow keys, move
// `index` through 0 .. count - 1 (clamped).
void draw_prev_next(int& index, int count);
// Wrapped grey explanatory text.
void show_note(const char* text);
// "[2, 3, 4]" plus the dtype, for labels such as "weights [1, 4, 8] float32".
std::string describe(const Tensor& t);

}  // namespace ag::viewer
