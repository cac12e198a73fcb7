// The task table (see tasks.h): one line per task, and what the tasks share.
#include "attograd/translate/tasks.h"

#include <cstdio>

#include "attograd/error.h"

namespace ag::translate {

// Each task's entry, made in its file (named in the table below).
Task dates_task();
Task reverse_task();
Task sort_task();
Task g2p_task();
Task p2g_task();

const std::vector<Task>& task_table() {
  static const std::vector<Task> table = {
      dates_task(),    // dates.cpp
      reverse_task(),  // digits.cpp
      sort_task(),     // digits.cpp
      g2p_task(),      // g2p.cpp
      p2g_task(),      // p2g.cpp
  };
  return table;
}

std::string task_names(const std::function<bool(const Task&)>& which) {
  std::vector<std::string> names;
  for (const Task& task : task_table())
    if (!which || which(task)) names.push_back(task.name());
  std::string joined;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) joined += i + 1 == names.size() ? " or " : ", ";
    joined += names[i];
  }
  return joined;
}

const Task& find_task(const std::string& name) {
  for (const Task& task : task_table())
    if (task.name() == name) return task;
  throw Error("task: unknown task '" + name + "' (expected " + task_names() + ")");
}

void require_dictionary(const Task& task, const std::string& what) {
  if (!task.reads_dictionary())
    throw Error(what + ": '" + task.name() + "' reads no dictionary (the tasks that do: " +
                task_names([](const Task& t) { return t.reads_dictionary(); }) + ")");
}

Dataset make_dataset(const DatasetOptions& options) {
  const Task& task = find_task(options.task);
  return Dataset(task.format, task.data(options), options.max_length);
}

Evaluation evaluate_outputs(const Task& task, const std::vector<Example>& examples,
                            std::vector<std::string> outputs) {
  Evaluation result = score_outputs(examples, std::move(outputs), task.format.target);
  result.figures = task.figures(examples, {}, result);
  return result;
}

Evaluation evaluate(Translator& translator, const std::vector<Example>& examples,
                    int64_t batch_size, int64_t beam) {
  AG_CHECK(!examples.empty(), "evaluate", "no examples");
  std::vector<std::string> sources;
  sources.reserve(examples.size());
  for (const auto& e : examples) sources.push_back(e.source);
  const std::vector<Translation> translations = translate(translator, sources, batch_size, beam);
  std::vector<std::string> outputs;
  outputs.reserve(translations.size());
  for (const Translation& t : translations) outputs.push_back(t.output);
  const Task& task = find_task(translator.task.name);
  Evaluation result = score_outputs(examples, std::move(outputs), translator.task.target);
  result.figures = task.figures(examples, translations, result);
  return result;
}

// ---- what the tasks' entries share ---------------------------------------------------
TaskDefaults d2l_task_defaults(const std::string& model) {
  TaskDefaults d;
  d.config.model = model;
  d.lr_schedule = model == "transformer" ? "cosine" : "constant";
  return d;
}

std::vector<Figure> generated_figures(const Evaluation& scored) {
  char bleu[32];
  std::snprintf(bleu, sizeof bleu, "BLEU %.4f", scored.bleu);
  return {{"", std::to_string(scored.count) + " examples", static_cast<double>(scored.count)},
          percent_figure("", "exact match", scored.accuracy),
          {"", bleu, scored.bleu}};
}

void check_generated_options(const std::string& name, const TaskOptions& o) {
  const auto reads_dictionary = [](const Task& task) { return task.reads_dictionary(); };
  if (o.dict)
    throw Error("--dict is read by the tasks that read a dictionary (" +
                task_names(reads_dictionary) + "); '" + name + "' is generated");
  if (o.average_last)
    throw Error("--average-last averages the parameters of the last dev evaluations; '" + name +
                "' has no dev split (the tasks with one: " + task_names(reads_dictionary) + ")");
  if (!o.training) return;
  if (o.heldout > o.train_size) throw Error("--heldout cannot exceed --train-size");
  if (o.batch > o.train_size) throw Error("--batch cannot exceed --train-size");
}

void check_dictionary_options(const std::string& name, const TaskOptions& o) {
  if (o.sizes_given)
    throw Error("--train-size and --heldout size the generated tasks (" +
                task_names([](const Task& task) { return !task.reads_dictionary(); }) + "); " +
                name + "'s split comes from the dictionary");
}

}  // namespace ag::translate
