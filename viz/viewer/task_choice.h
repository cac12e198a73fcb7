// The choice of a task in the scenes that train one live (translate,
// transformer), read from the task table (attograd/translate/tasks.h): its
// tasks that read no dictionary, drawn in the program at any size.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scene.h"

namespace ag::viewer {

// The live tasks' names, in the table's order.
std::vector<std::string> live_task_names();
// One radio button per live task, each with its summary (the table's line);
// true when the learner chose another task.
bool draw_task_choice(std::string& task);
// The knob "task" (--set SCENE.task=reverse): one of live_task_names().
Knob task_knob(const std::string& help, std::function<void(const std::string&)> set);

}  // namespace ag::viewer
