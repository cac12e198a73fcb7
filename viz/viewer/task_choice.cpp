// The choice of a live task (see task_choice.h).
#include "task_choice.h"

#include <imgui.h>

#include <utility>

#include "attograd/translate/tasks.h"

namespace ag::viewer {

namespace tr = ag::translate;

std::vector<std::string> live_task_names() {
  std::vector<std::string> names;
  for (const tr::Task& task : tr::task_table())
    if (!task.reads_dictionary()) names.push_back(task.name());
  return names;
}

bool draw_task_choice(std::string& task) {
  bool changed = false;
  for (const std::string& name : live_task_names()) {
    if (ImGui::RadioButton(("##" + name).c_str(), task == name) && task != name) {
      task = name;
      changed = true;
    }
    ImGui::SameLine();
    ImGui::TextWrapped("%s", tr::find_task(name).summary.c_str());
  }
  return changed;
}

Knob task_knob(const std::string& help, std::function<void(const std::string&)> set) {
  const std::vector<std::string> names = live_task_names();
  return choice_knob("task", help, names, [names, set = std::move(set)](int task) {
    set(names[static_cast<size_t>(task)]);
  });
}

}  // namespace ag::viewer
