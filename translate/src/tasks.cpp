// The task table (see tasks.h): one line per task.
#include "attograd/translate/tasks.h"

#include "attograd/error.h"

namespace ag::translate {

const std::vector<TaskSpec>& task_table() {
  static const std::vector<TaskSpec> table = {
      dates_task(),
      digits_task(Task::Reverse),
      digits_task(Task::Sort),
      g2p_task(),
  };
  return table;
}

const TaskSpec& task_spec(Task task) {
  for (const TaskSpec& spec : task_table())
    if (spec.task == task) return spec;
  throw Error(std::string("task_spec: no entry for the task '") + task_name(task) + "'");
}

TaskDefaults d2l_task_defaults(const std::string& model) {
  TaskDefaults d;
  d.config.model = model;
  d.lr_schedule = model == "transformer" ? "cosine" : "constant";
  return d;
}

}  // namespace ag::translate
