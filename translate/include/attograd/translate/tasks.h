// The task table: each task of attograd-translate is a value, made in the
// task's own file and listed once in the table (tasks.cpp). The program, the
// viewer and the library loop over the table, or find a task by its name;
// none of them asks which task it is. A task is:
//
//   format      its name, and how its sources and targets are tokenized
//   summary     one line for --help: its name and an example of it
//   data        its examples, split (DatasetOptions -> TaskData)
//   defaults    what each model trains with unless a flag says otherwise
//   check       which of the command line's task options do not fit it
//   figures     what it measures on a split: the summary line, the training
//               log (its headline) and --stats print them, in a loop
//   read_input  how a typed input is read ("Knife" -> "knife")
// and, for the tasks that read a dictionary, the dictionary's examples
// (--evaluate) and its answers as a lexicon (--lexicon).
//
// Adding a task: its file with its entry, and one line in the table.
// A task depends on the layers below it (task.h, data.h, translator.h,
// predict.h, evaluation.h), never the reverse.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attograd/translate/cmudict.h"
#include "attograd/translate/data.h"
#include "attograd/translate/evaluation.h"
#include "attograd/translate/translator.h"

namespace ag::translate {

// What a task's data is drawn or read with.
struct DatasetOptions {
  std::string task = "dates";  // a name in the table
  int64_t num_train = 50000;   // the generated tasks' (a dictionary's split is its own)
  int64_t num_heldout = 1000;
  uint64_t seed = 0;                            // the generated tasks' draws
  std::string dict_path = kDefaultCmudictPath;  // the tasks that read a dictionary
  // > 0: only the examples of at most max_length tokens (Dataset's max_length).
  int64_t max_length = 0;
};

// What attograd-translate trains a task's model with unless a flag says
// otherwise; printed when training starts.
struct TaskDefaults {
  ModelConfig config;  // model, sizes, dropout
  int64_t steps = 0, batch = 64;
  int64_t eval_every = 500;  // held-out (generated tasks) or dev scoring
  int64_t train_size = 0;    // the generated tasks' training examples
  double lr = 0.005;
  std::string lr_schedule;  // "constant" (d2l's) or "cosine"
};

// The command line's options about a task's data, for its check: the sizes
// as the run will use them, and which flags were given.
struct TaskOptions {
  bool training = true;      // false with --load
  bool sizes_given = false;  // --train-size or --heldout
  int64_t train_size = 0, heldout = 0, batch = 0;
  bool dict = false;          // --dict
  bool average_last = false;  // --average-last (it needs a dev split)
};

// A dictionary's words as a task answers them: source -> its answers, in order.
using Lexicon = std::map<std::string, std::vector<std::string>>;

using FigureFunction = std::function<std::vector<Figure>(
    const std::vector<Example>& examples, const std::vector<Translation>& translations,
    const Evaluation& scored)>;

struct Task {
  TaskFormat format;
  std::string summary;  // "NAME: an example" (--help, the viewer)
  std::function<TaskData(const DatasetOptions&)> data;
  // The defaults for `model` (a name of model_names()).
  std::function<TaskDefaults(const std::string& model)> defaults;
  // Throws ag::Error saying which options do not fit the task, and why.
  std::function<void(const TaskOptions&)> check;
  // The task's figures from the scored outputs (exact match, BLEU, nearest
  // answers) and, when a model made them, its translations (empty for
  // another system's outputs: --score-outputs).
  FigureFunction figures;
  // The key of the figure the training log shows at each evaluation; empty:
  // the exact match.
  std::string headline;
  // How a typed input is read; empty: as it is.
  std::function<std::string(const std::string&)> read_input;
  // The tasks that read a dictionary (empty for the others, the generated
  // ones): its entries as examples (--evaluate, --score-outputs) and as a
  // lexicon (--lexicon, the Pronouncer).
  std::function<std::vector<Example>(const Cmudict&)> dictionary_examples;
  std::function<Lexicon(const Cmudict&)> lexicon;

  const std::string& name() const { return format.name; }
  bool reads_dictionary() const { return static_cast<bool>(dictionary_examples); }
};

// Every task, in --help's order.
const std::vector<Task>& task_table();
// The task `name`; ag::Error listing the table's names when there is none.
const Task& find_task(const std::string& name);
// The tasks' names that `which` picks, for messages: "dates, reverse, sort
// or g2p" (every task by default).
std::string task_names(const std::function<bool(const Task&)>& which = {});

// ag::Error unless `task` reads a dictionary, naming `what` needs one and
// the tasks that do.
void require_dictionary(const Task& task, const std::string& what);

// The task's examples as a Dataset (its data, then Dataset's vocabularies).
Dataset make_dataset(const DatasetOptions& options);

// The examples' outputs by translate() (greedy, or beam search with `beam`
// candidates), scored (score_outputs) with the figures of the translator's
// task.
Evaluation evaluate(Translator& translator, const std::vector<Example>& examples,
                    int64_t batch_size = 1000, int64_t beam = 1);
// Outputs from elsewhere (another system's, --score-outputs) scored as
// evaluate() scores a model's, with `task`'s figures.
Evaluation evaluate_outputs(const Task& task, const std::vector<Example>& examples,
                            std::vector<std::string> outputs);

// ---- what the tasks' entries share ---------------------------------------------------
// d2l's defaults for a generated task (its sizes, ModelConfig's; batches of
// 64, lr 0.005, constant for bahdanau and a cosine for the Transformer,
// held-out accuracy every 500 steps); the task sets its steps and training
// size.
TaskDefaults d2l_task_defaults(const std::string& model);
// A generated task's figures: how many examples, exact match, BLEU.
std::vector<Figure> generated_figures(const Evaluation& scored);
// The checks of a generated task (`name`) and of one read from a dictionary.
void check_generated_options(const std::string& name, const TaskOptions& options);
void check_dictionary_options(const std::string& name, const TaskOptions& options);

}  // namespace ag::translate
