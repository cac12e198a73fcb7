// The scene list (tab order) and the small UI helpers every scene shares.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

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
std::unique_ptr<Scene> make_translate_scene();
std::unique_ptr<Scene> make_transformer_scene();
std::unique_ptr<Scene> make_pronounce_scene();

namespace {

// One tab of make_scenes(): the scene's name and label, and the function that
// makes it, called at the scene's first use (a frame drawn, its inputs, knobs,
// stats or a file opened) rather than at start-up. The translate and
// Transformer scenes build a data set and a model when they are made, most of
// the viewer's start-up: a window, a page or a test that shows one scene no
// longer pays for the others (docs/performance.md, "The seventh sitting").
class SceneEntry final : public Scene {
 public:
  SceneEntry(const char* name, const char* label, std::unique_ptr<Scene> (*make)())
      : name_(name), label_(label), make_(make) {}
  const char* name() const override { return name_; }
  const char* label() const override { return label_; }
  void draw() override { scene().draw(); }
  std::map<std::string, Tensor> inputs() const override { return scene().inputs(); }
  void open_file(const std::string& path) override { scene().open_file(path); }
  void print_stats(std::ostream& out) const override { scene().print_stats(out); }
  void before_last_frame() override { scene().before_last_frame(); }
  std::vector<Knob> knobs() override { return scene().knobs(); }

  // The scene, made now if this is its first use.
  Scene& scene() const {
    if (!scene_) {
      std::unique_ptr<Scene> made = make_();
      // The tab bar shows the entry's label before the scene exists: the
      // two must agree, or the tab would change its name when first opened.
      AG_CHECK(std::string(made->name()) == name_ && std::string(made->label()) == label_,
               "attograd-viewer",
               std::string("the scene list names '") + name_ + "' (" + label_ +
                   ") a scene that calls itself '" + made->name() + "' (" + made->label() + ")");
      scene_ = std::move(made);
    }
    return *scene_;
  }

 private:
  const char* name_;
  const char* label_;
  std::unique_ptr<Scene> (*make_)();
  mutable std::unique_ptr<Scene> scene_;  // made at the first use
};

}  // namespace

std::vector<std::unique_ptr<Scene>> make_scenes() {
  const struct {
    const char* name;
    const char* label;
    std::unique_ptr<Scene> (*make)();
  } tabs[] = {
      {"compare", "Compare", make_compare_scene},
      {"playground", "Playground", make_playground_scene},
      {"masks", "Masks", make_masks_scene},
      {"scaling", "Scaling", make_scaling_scene},
      {"multihead", "Multi-head", make_multihead_scene},
      {"file", "File", make_file_scene},
      {"training", "Training", make_training_scene},
      {"step", "Step", make_step_scene},
      {"graph", "Graph", make_graph_scene},
      {"translate", "Translate", make_translate_scene},
      {"transformer", "Transformer", make_transformer_scene},
      {"pronounce", "Pronounce", make_pronounce_scene},
  };
  std::vector<std::unique_ptr<Scene>> scenes;
  for (const auto& tab : tabs)
    scenes.push_back(std::make_unique<SceneEntry>(tab.name, tab.label, tab.make));
  return scenes;
}

Scene& made_scene(Scene& scene) {
  auto* entry = dynamic_cast<SceneEntry*>(&scene);
  return entry ? entry->scene() : scene;
}

// ---- knobs: --set SCENE.KNOB=VALUE -------------------------------------------------------
Knob choice_knob(std::string name, std::string help, std::vector<std::string> choices,
                 std::function<void(int)> set) {
  std::string accepts;
  for (const std::string& choice : choices) accepts += (accepts.empty() ? "" : " | ") + choice;
  Knob knob{std::move(name), std::move(help), accepts, nullptr};
  knob.set = [choices, accepts, set = std::move(set)](const std::string& value) {
    const auto found = std::find(choices.begin(), choices.end(), value);
    AG_CHECK(found != choices.end(), "attograd-viewer",
             "takes " + accepts + ", got '" + value + "'");
    set(static_cast<int>(found - choices.begin()));
  };
  return knob;
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(separator, begin), text.size());
    if (comma > begin) parts.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return parts;
}

namespace {

// "a whole number from 0 to 99": what a number knob takes, for --list-knobs
// and its errors.
std::string number_accepted(double low, double high, bool whole) {
  char accepts[96];
  std::snprintf(accepts, sizeof accepts, "a %s from %g to %g", whole ? "whole number" : "number",
                low, high);
  return accepts;
}

}  // namespace

double knob_number(const std::string& value, double low, double high, bool whole) {
  size_t used = 0;
  double number = NAN;
  try {
    number = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  AG_CHECK(used == value.size() && number >= low && number <= high &&
               (!whole || number == std::floor(number)),
           "attograd-viewer",
           "takes " + number_accepted(low, high, whole) + ", got '" + value + "'");
  return number;
}

Knob number_knob(std::string name, std::string help, double low, double high, bool whole,
                 std::function<void(double)> set) {
  return Knob{std::move(name), std::move(help), number_accepted(low, high, whole),
              [low, high, whole, set = std::move(set)](const std::string& value) {
                set(knob_number(value, low, high, whole));
              }};
}

size_t apply_setting(const std::vector<std::unique_ptr<Scene>>& scenes,
                     const std::string& setting) {
  const size_t dot = setting.find('.'), equals = setting.find('=');
  AG_CHECK(dot != std::string::npos && equals != std::string::npos && dot < equals,
           "attograd-viewer",
           "--set takes SCENE.KNOB=VALUE (e.g. masks.mode=causal), got '" + setting + "'");
  const std::string scene_name = setting.substr(0, dot);
  const std::string knob_name = setting.substr(dot + 1, equals - dot - 1);
  const std::string value = setting.substr(equals + 1);
  std::string names;
  for (size_t i = 0; i < scenes.size(); ++i) {
    if (scene_name != scenes[i]->name()) {
      names += std::string(" ") + scenes[i]->name();
      continue;
    }
    std::string knob_names;
    for (const Knob& knob : scenes[i]->knobs()) {
      if (knob.name != knob_name) {
        knob_names += " " + knob.name;
        continue;
      }
      try {
        knob.set(value);
      } catch (const Error& e) {
        // "attograd-viewer: takes ..." -> "attograd-viewer: --set masks.mode: takes ..."
        std::string message = e.what();
        const std::string tag = "attograd-viewer: ";
        if (message.rfind(tag, 0) == 0) message = message.substr(tag.size());
        throw Error(tag + "--set " + scene_name + "." + knob_name + ": " + message);
      }
      return i;
    }
    throw Error("attograd-viewer: --set " + setting + ": scene " + scene_name + " has no knob '" +
                knob_name + "'; it has:" + (knob_names.empty() ? " none" : knob_names));
  }
  throw Error("attograd-viewer: --set " + setting + ": no scene '" + scene_name +
              "'; the scenes are:" + names);
}

void print_knobs(std::ostream& out, const std::vector<std::unique_ptr<Scene>>& scenes) {
  for (const auto& scene : scenes) {
    out << scene->name() << "\n";
    const std::vector<Knob> knobs = scene->knobs();
    if (knobs.empty()) out << "  (no knobs)\n";
    for (const Knob& knob : knobs) {
      out << "  " << scene->name() << "." << knob.name << "=" << knob.accepts << "\n"
          << "      " << knob.help << "\n";
    }
  }
}

// ---- small UI helpers ----------------------------------------------------------------------
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

void same_line_if_fits(const char* label, float frame_width) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float right = ImGui::GetItemRectMax().x + style.ItemSpacing.x + frame_width +
                      style.ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
  if (right <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
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
