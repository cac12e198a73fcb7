// The task table: each task of attograd-translate is one entry, made in the
// task's own file, that says everything the program and the library need of
// it:
//
//   dates          dates.cpp    "Thursday, May 3, 1979" -> "1979-05-03"
//   reverse, sort  digits.cpp   "48213" -> "31284", "12348"
//   g2p            cmudict.cpp  "knife" -> "N AY F" (CMUdict)
//
// An entry is the task's one-line summary (--help), its examples
// (DatasetOptions -> TaskData), its defaults for each model (what the program
// trains with when no flag says otherwise) and its own figures on top of
// evaluate()'s exact match and BLEU (the dates' alignment, g2p's WER and
// PER). Adding a task: its file with its entry, its value in the Task enum
// (task.h) and one line in the table (tasks.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attograd/translate/evaluation.h"
#include "attograd/translate/model.h"

namespace ag::translate {

// What attograd-translate trains a task's model with unless a flag says
// otherwise; printed when training starts.
struct TaskDefaults {
  ModelConfig config;  // model, sizes, dropout
  int64_t steps = 0, batch = 64;
  int64_t eval_every = 500;  // held-out (generated tasks) or dev (g2p) scoring
  int64_t train_size = 0;    // the generated tasks' training examples
  double lr = 0.005;
  std::string lr_schedule;  // "constant" (d2l's) or "cosine"
};

struct TaskSpec {
  Task task = Task::Dates;
  std::string summary;  // --help's line: an example of the task
  // The task's examples, split (DatasetOptions::task is this task).
  std::function<TaskData(const DatasetOptions&)> data;
  // The defaults for `model` ("bahdanau" or "transformer").
  std::function<TaskDefaults(const std::string& model)> defaults;
  // The task's own figures, added to `result` (exact match, BLEU and the
  // outputs are set); empty when the task has none.
  std::function<void(const std::vector<Example>& examples,
                     const std::vector<Translation>& translations, Evaluation& result)>
      score;
};

// Every task, in the order of the Task enum.
const std::vector<TaskSpec>& task_table();
const TaskSpec& task_spec(Task task);

// d2l's defaults for a generated task (its sizes, ModelConfig's; batches of
// 64, lr 0.005, constant for bahdanau and a cosine for the Transformer,
// held-out accuracy every 500 steps); the task sets its steps and training
// size.
TaskDefaults d2l_task_defaults(const std::string& model);

// Each task's entry, made in its file.
TaskSpec dates_task();            // dates.cpp
TaskSpec digits_task(Task task);  // digits.cpp: Task::Reverse or Task::Sort
TaskSpec g2p_task();              // cmudict.cpp

}  // namespace ag::translate
