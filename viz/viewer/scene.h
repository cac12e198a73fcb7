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

// A setting a scene takes before its first frame, from the command line
// (--set SCENE.KNOB=VALUE) or the page (?set=SCENE.KNOB=VALUE): one of the
// choices a learner makes in its controls, so that tests and links can open
// any mode of any scene directly. Made by choice_knob or number_knob.
struct Knob {
  std::string name;
  std::string help;     // what it does, for --list-knobs
  std::string accepts;  // "retrieval | nadaraya-watson", "a number from 0.001 to 1"
  // Sets the value; throws ag::Error saying what it accepts.
  std::function<void(const std::string& value)> set;
};
// A knob whose value is one of `choices`; `set` gets the chosen index.
Knob choice_knob(std::string name, std::string help, std::vector<std::string> choices,
                 std::function<void(int)> set);
// A list knob's value, "a,b" -> {"a", "b"} (empty parts dropped); another
// separator splits a part further ("a+b" -> {"a", "b"}).
std::vector<std::string> split_list(const std::string& text, char separator = ',');
// `value` read as a number in [low, high] (a whole number when `whole`);
// anything else is an ag::Error saying what is taken and what was given.
double knob_number(const std::string& value, double low, double high, bool whole);
// A knob whose value is a number in [low, high] (a whole number when `whole`).
Knob number_knob(std::string name, std::string help, double low, double high, bool whole,
                 std::function<void(double)> set);

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
  // Called before the last frame of a counted run (--frames), whose
  // screenshot, layout and inputs the tests read: a scene that trains on a
  // worker pauses here, so that all three show the same step.
  virtual void before_last_frame() {}
  // The settings --set takes for this scene (none by default). The knobs
  // act on the scene they were made by.
  virtual std::vector<Knob> knobs() { return {}; }
};

// Every scene, in tab order. Each entry knows its scene's name and label and
// makes the scene itself at its first use (a frame drawn, its inputs, knobs
// or stats, a file opened): start-up makes none of them.
std::vector<std::unique_ptr<Scene>> make_scenes();
// The scene behind an entry of make_scenes() (made now if it was not yet),
// for code that needs its own class (dynamic_cast<TrainingScene&>); any
// other scene is returned as it is.
Scene& made_scene(Scene& scene);

// Applies one --set "SCENE.KNOB=VALUE" to its scene; returns that scene's
// index. Throws ag::Error naming the unknown scene, knob or value and what
// would have been accepted.
size_t apply_setting(const std::vector<std::unique_ptr<Scene>>& scenes, const std::string& setting);
// --list-knobs: every scene's knobs, what each does and what it accepts.
void print_knobs(std::ostream& out, const std::vector<std::unique_ptr<Scene>>& scenes);

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
// After an item: the next one (`label`, its frame `frame_width` wide) goes on
// the same line when it fits in the window, else on the next line.
void same_line_if_fits(const char* label, float frame_width);
// Wrapped grey explanatory text.
void show_note(const char* text);
// "[2, 3, 4]" plus the dtype, for labels such as "weights [1, 4, 8] float32".
std::string describe(const Tensor& t);

}  // namespace ag::viewer
