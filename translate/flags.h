// attograd-translate's command line: what it sets (Options), its flags as a
// table (each flag's name, value, help line and the check of its value),
// --help made from that table, and the checks of how the flags fit together.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "attograd/translate/tasks.h"

namespace ag::translate::program {

struct Options {
  std::string task = "dates";
  TaskDefaults defaults;  // of --task and --model: what the flags start from
  ModelConfig config;
  std::optional<int64_t> steps, train_size;
  int64_t batch = 0, threads = 1, heldout = 1000, eval_every = 0, average_last = 0;
  double lr = 0, label_smoothing = 0;
  std::string lr_schedule;  // "constant" or "cosine"
  uint64_t seed = 0;
  std::vector<std::string> load;  // --load, repeatable: one model, or an ensemble
  std::string save, heatmap, dump_path;
  int64_t dump_count = 0;
  std::string dict = kDefaultCmudictPath, predict_file, evaluate, score_outputs;
  std::vector<std::string> predict;
  int64_t beam = 1;   // 1 is greedy
  int64_t nbest = 0;  // 0 when not given
  std::optional<double> pmass;
  std::vector<std::string> lexicons;
  bool json = false, stats = false, show_source = false;
  std::set<std::string> given;  // the flags on the command line

  bool has(const std::string& flag) const { return given.count(flag) > 0; }
  // Whether --predict's texts are answered as --predict-file's are, in
  // Sequitur's lines (their n best, from a lexicon or the model) rather than
  // as tables: --nbest, --pmass, --lexicon or --show-source asks for that.
  bool answers_as_lines() const;
};

// A bad command line: reported as one line, exit code 2.
struct UsageError {
  std::string message;
};

struct Flag {
  std::string name;     // "--steps"
  std::string value;    // what follows it in --help ("N"); empty for a switch
  std::string section;  // --help's heading it is listed under
  std::string help;     // --help's text (wrapped there)
  // The one model that reads it ("bahdanau", "transformer"), or "": every model.
  std::string model;
  bool shapes_model = false;  // it says what model is made: --load takes that from the file
  bool for_answers = false;   // it shapes the answers to --predict or --predict-file
  // How many arguments follow it: 0 (a switch), 1, 2, or kUpToNextFlag.
  int values = 1;
  // Reads its values into the options, checking each (UsageError).
  std::function<void(Options&, const std::vector<std::string>&)> set;
};
inline constexpr int kUpToNextFlag = -1;

// Every flag, in --help's order.
const std::vector<Flag>& flag_table();

// --help: what the program does, the flags by section, the tasks with their
// defaults and the scoring functions.
std::string usage();

// The command line read into options: the defaults of the --task and --model
// it names, the flags over them, then checked together (UsageError).
Options parse_args(int argc, char** argv);

// The task's checks of the options (Task::check, and --evaluate and
// --lexicon, which need a task that reads a dictionary): when training, at
// parse time; with --load, once the file has said its task. ag::Error.
void check_task_options(const Task& task, const Options& o);

}  // namespace ag::translate::program
