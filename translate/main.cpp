// attograd-translate: trains d2l's seq2seq with attention, or d2l's
// Transformer, on a task of the task table (generated, or read from CMUdict),
// shows what it learned, saves and loads it.
//
//   attograd-translate --task dates --steps 3000 --save dates.npz
//   attograd-translate --task g2p --save g2p.npz        (CMUdict, the task's defaults)
//   attograd-translate --load g2p.npz --predict-file words.txt
//   attograd-translate --load g2p.npz --predict-file words.txt --nbest 3 --lexicon my.dict
//   attograd-translate --load g2p.npz --predict knife read --nbest 2 --show-source
//   attograd-translate --load g2p.npz --evaluate other.dict
//   attograd-translate --model transformer --task reverse --save reverse.npz
//   attograd-translate --model transformer --task reverse --no-causal-mask --stats
//   attograd-translate --load dates.npz --predict "Thursday, May 3, 1979" "3.5.1979"
//   attograd-translate --load dates.npz --predict "May 3rd '79" --heatmap may.png --json
//
// Progress and the held-out summary go to stderr; answers (tables, lines or
// JSON lines) and --stats to stdout. Bad input: one line on stderr, exit 2;
// --predict-file's lines that cannot be read are reported and skipped, exit 1.
// The flags are a table (flags.cpp); the steps below run in order.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "answers.h"
#include "attograd/attograd.h"
#include "attograd/translate/ensemble.h"
#include "attograd/translate/report.h"
#include "flags.h"
#include "training.h"

namespace {

using namespace ag::translate;
using namespace ag::translate::program;

// The task's data, read or generated when first needed: a loaded model that
// only predicts never reads the dictionary.
class LazyDataset {
 public:
  explicit LazyDataset(const Options& o) : o_(o) {}
  const Dataset& get(const std::string& task) {
    if (!data_) {
      const TaskDefaults defaults = find_task(task).defaults(o_.config.model);
      data_.emplace(make_dataset(
          {task, o_.train_size.value_or(defaults.train_size), o_.heldout, o_.seed, o_.dict}));
    }
    return *data_;
  }

 private:
  const Options& o_;
  std::optional<Dataset> data_;
};

// What was scored, for --stats: dev and test after training (or of a loaded
// model with --stats), and --evaluate's dictionary.
struct Scores {
  std::optional<Evaluation> test, dev, dict;
};

// 1. The model: --load's (its task checked against the flags), or a fresh
//    one for the task's data.
Translator load_or_make(const Options& o, LazyDataset& data) {
  if (o.load.empty()) return make_translator(o.config, data.get(o.task));
  Translator translator = load_ensemble(o.load);
  check_task_options(find_task(translator.task.name), o);
  return translator;
}

// 3. The held-out figures, measured once: dev (a task with a dev split) and
//    test after training, or of a loaded model for --stats (an untrained
//    model's, with --steps 0, would say nothing).
void score_splits(Translator& translator, LazyDataset& data, const Options& o, bool trained,
                  Scores& scores) {
  if (!trained && !(o.stats && o.evaluate.empty() && !o.load.empty())) return;
  const Dataset& d = data.get(translator.task.name);
  if (!d.dev().empty()) {
    scores.dev = evaluate(translator, d.dev(), 1000, o.beam);
    std::fprintf(stderr, "%s\n", summary_line("dev", *scores.dev).c_str());
  }
  scores.test = evaluate(translator, d.heldout(), 1000, o.beam);
  const char* split = d.dev().empty() ? "held-out" : "test";
  std::fprintf(stderr, "%s\n", summary_line(split, *scores.test).c_str());
}

// 4. --dump-heldout: the first N held-out examples with the model's outputs.
void dump_heldout(Translator& translator, LazyDataset& data, const Options& o) {
  const auto& heldout = data.get(translator.task.name).heldout();
  const size_t n = std::min(heldout.size(), static_cast<size_t>(o.dump_count));
  const std::vector<Example> examples(heldout.begin(), heldout.begin() + static_cast<long>(n));
  const Evaluation e = evaluate(translator, examples, 1000, o.beam);
  std::ofstream out(o.dump_path);
  if (!out) throw ag::Error("--dump-heldout: cannot write '" + o.dump_path + "'");
  for (size_t k = 0; k < n; ++k)
    out << examples[k].source << '\t' << examples[k].target << '\t' << e.outputs[k] << '\n';
}

// An evaluation's figures as "PREFIX_KEY value" lines, in the task's order.
void print_figures(const std::string& prefix, const Evaluation& e) {
  for (const Figure& f : e.figures)
    if (!f.key.empty()) std::cout << "\n" << prefix << "_" << f.key << " " << f.value;
}

// 7. --stats: "key value" lines.
void print_stats(const Options& o, const TrainingFigures& f, const Scores& scores,
                 const AnswerFigures& answered) {
  std::cout << "steps " << f.steps << "\ntrain_seconds " << f.seconds << "\nsteps_per_sec "
            << (f.seconds > 0 ? f.steps / f.seconds : 0) << "\ntrain_cpu_seconds " << f.cpu_seconds
            << "\nsteps_per_cpu_sec " << (f.cpu_seconds > 0 ? f.steps / f.cpu_seconds : 0)
            << "\nloss_last " << f.loss_last << "\nloss_tail " << f.loss_tail << "\nbatch "
            << o.batch << "\nlr " << o.lr << "\ntrain_page_faults " << f.page_faults
            << "\ntrain_allocator_hits " << f.allocator.hits << "\ntrain_allocator_misses "
            << f.allocator.misses << "\nallocator_bytes_cached " << f.allocator.bytes_cached;
  if (scores.test) {
    std::cout << "\naccuracy " << scores.test->accuracy << "\nbleu " << scores.test->bleu;
    print_figures("test", *scores.test);
  }
  if (scores.dev) {
    print_figures("dev", *scores.dev);
    std::cout << "\nbest_step " << f.best_step << "\naveraged_checkpoints " << f.averaged;
  }
  if (scores.dict) print_figures("eval", *scores.dict);
  if (!o.predict_file.empty() || o.answers_as_lines())
    std::cout << "\npredict_words " << answered.inputs << "\npredict_lexicon_words "
              << answered.from_lexicon << "\npredict_skipped " << answered.skipped
              << "\npredict_seconds " << answered.seconds << "\npredict_words_per_sec "
              << (answered.seconds > 0 ? answered.inputs / answered.seconds : 0);
  std::cout << "\nrss_kib_first " << (f.rss_first ? f.rss_first : rss_kib()) << "\nrss_kib_last "
            << rss_kib() << "\n";
}

// --score-outputs: another system's answers scored as a model's are (the
// peers on our test words, scripts/g2p_peers.sh). Returns the exit code.
int score_outputs(const Options& o) {
  std::ifstream file(o.score_outputs);
  if (!file) throw ag::Error("--score-outputs: cannot read '" + o.score_outputs + "'");
  std::map<std::string, std::string> answers;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) answers.emplace(line.substr(0, tab), line.substr(tab + 1));
  }
  const Task& task = find_task(o.task);
  const std::vector<Example> examples = task.dictionary_examples(read_cmudict(o.evaluate));
  std::vector<std::string> outputs;
  int64_t missing = 0;
  for (const Example& e : examples) {
    const auto it = answers.find(e.source);
    missing += it == answers.end();
    outputs.push_back(it == answers.end() ? "" : it->second);
  }
  const Evaluation scored = evaluate_outputs(task, examples, std::move(outputs));
  std::fprintf(stderr, "%s\n", summary_line(o.score_outputs, scored).c_str());
  if (missing > 0)
    std::fprintf(stderr, "%lld of the dictionary's entries have no answer in %s (counted wrong)\n",
                 static_cast<long long>(missing), o.score_outputs.c_str());
  if (o.stats) {
    std::cout << "eval_missing " << missing;
    print_figures("eval", scored);
    std::cout << "\n";
  }
  return 0;
}

int run(const Options& o) {
  if (!o.score_outputs.empty()) return score_outputs(o);
  ag::set_num_threads(static_cast<int>(o.threads));
  ag::manual_seed(o.seed);
  LazyDataset data(o);
  Translator translator = load_or_make(o, data);
  // 2. Training (none for a loaded model).
  const int64_t steps = o.load.empty() ? o.steps.value_or(o.defaults.steps) : 0;
  TrainingFigures trained;
  if (steps > 0) trained = train_model(translator, data.get(translator.task.name), o, steps);
  Scores scores;
  score_splits(translator, data, o, steps > 0, scores);
  if (!o.save.empty()) {
    save_translator(o.save, translator);
    std::fprintf(stderr, "saved %s\n", o.save.c_str());
  }
  if (!o.evaluate.empty()) scores.dict = evaluate_dictionary(translator, o.evaluate, o.beam);
  if (o.dump_count > 0) dump_heldout(translator, data, o);
  // 5. --predict's tables, 6. the answers as lines.
  if (!o.predict.empty() && !o.answers_as_lines()) show_translations(translator, o);
  AnswerFigures answered;
  int64_t skipped = 0;
  if (!o.predict_file.empty() || (!o.predict.empty() && o.answers_as_lines()))
    skipped = answer_lines(std::move(translator), o, answered);
  if (o.stats) print_stats(o, trained, scores, answered);
  return skipped > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "attograd-translate: %s\n", e.message.c_str());
  } catch (const ag::Error& e) {
    std::fprintf(stderr, "attograd-translate: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attograd-translate: %s\n", e.what());
  }
  return 2;
}
