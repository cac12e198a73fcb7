// attograd-translate's flags (see flags.h): the table, --help, parsing and
// the checks of how the flags fit together.
#include "flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "attograd/attograd.h"

namespace ag::translate::program {

namespace {

int64_t parse_int(const std::string& flag, const std::string& text, int64_t low, int64_t high) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high)
    throw UsageError{flag + " expects an integer in [" + std::to_string(low) + ", " +
                     std::to_string(high) + "], got '" + text + "'"};
  return value;
}

double parse_double(const std::string& flag, const std::string& text, double low, double high) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < low || value > high)
    throw UsageError{flag + " expects a number in [" + std::to_string(low) + ", " +
                     std::to_string(high) + "], got '" + text + "'"};
  return value;
}

// `text` when it is one of `names`, else a UsageError listing them.
std::string one_of(const std::string& flag, const std::string& text,
                   const std::vector<std::string>& names) {
  if (std::find(names.begin(), names.end(), text) != names.end()) return text;
  std::string listed;
  for (size_t i = 0; i < names.size(); ++i)
    listed += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  throw UsageError{flag + " expects " + listed + ", got '" + text + "'"};
}

// The table's rows are made by these: a flag of one value, which `read`
// checks and keeps; a switch; the usual kinds of value.
using Read = std::function<void(Options&, const std::string& value)>;

Flag one_value(std::string name, std::string value, std::string section, std::string help,
               Read read) {
  Flag flag;
  flag.name = std::move(name);
  flag.value = std::move(value);
  flag.section = std::move(section);
  flag.help = std::move(help);
  flag.set = [read = std::move(read)](Options& o, const std::vector<std::string>& values) {
    read(o, values[0]);
  };
  return flag;
}

// A flag of `values` values (kUpToNextFlag: every argument up to the next
// option), which `set` checks and keeps.
Flag values_flag(std::string name, std::string value, std::string section, std::string help,
                 int values, std::function<void(Options&, const std::vector<std::string>&)> set) {
  Flag flag = one_value(std::move(name), std::move(value), std::move(section), std::move(help), {});
  flag.values = values;
  flag.set = std::move(set);
  return flag;
}

Flag switch_flag(std::string name, std::string section, std::string help,
                 std::function<void(Options&)> on) {
  return values_flag(std::move(name), "", std::move(section), std::move(help), 0,
                     [on = std::move(on)](Options& o, const std::vector<std::string>&) { on(o); });
}

Flag int_flag(const std::string& name, std::string section, std::string help, int64_t low,
              int64_t high, std::function<int64_t&(Options&)> field) {
  return one_value(
      name, "N", std::move(section), std::move(help),
      [=](Options& o, const std::string& v) { field(o) = parse_int(name, v, low, high); });
}

Flag number_flag(const std::string& name, std::string value, std::string section, std::string help,
                 double low, double high, std::function<double&(Options&)> field) {
  return one_value(
      name, std::move(value), std::move(section), std::move(help),
      [=](Options& o, const std::string& v) { field(o) = parse_double(name, v, low, high); });
}

Flag text_flag(std::string name, std::string value, std::string section, std::string help,
               std::function<std::string&(Options&)> field) {
  return one_value(std::move(name), std::move(value), std::move(section), std::move(help),
                   [field = std::move(field)](Options& o, const std::string& v) { field(o) = v; });
}

// `flag`, marked as saying what model is made, and as read by `model` only
// ("": every model).
Flag model_flag(Flag flag, std::string model = "") {
  flag.model = std::move(model);
  flag.shapes_model = true;
  return flag;
}

// `flag`, marked as shaping the answers (it needs something to answer).
Flag answer_flag(Flag flag) {
  flag.for_answers = true;
  return flag;
}

std::vector<Flag> make_flag_table() {
  const std::string kModel = "task and model", kBahdanau = "bahdanau", kTransformer = "transformer",
                    kTraining = "training", kFiles = "files",
                    kDictionary = "the tasks that read a dictionary", kPrediction = "prediction";
  return {
      model_flag(one_value("--task", "NAME", kModel,
                           "the task (default dates; the tasks and their defaults are listed "
                           "below; a run prints its settings first)",
                           [](Options& o, const std::string& v) {
                             try {
                               o.task = find_task(v).name();
                             } catch (const Error&) {
                               throw UsageError{"--task expects " + task_names() + ", got '" + v +
                                                "'"};
                             }
                           })),
      model_flag(one_value("--model", "NAME", kModel,
                           "the model: bahdanau (the default) or transformer",
                           [](Options& o, const std::string& v) {
                             o.config.model = one_of("--model", v, model_names());
                           })),
      model_flag(int_flag("--hidden", kModel,
                          "both models' width (d2l's default 32): the GRUs' hidden size, the "
                          "Transformer's d (its embedding size too)",
                          1, 4096, [](Options& o) -> int64_t& { return o.config.num_hiddens; })),
      model_flag(number_flag("--dropout", "P", kModel, "both models' dropout (d2l's default 0.1)",
                             0.0, 0.95, [](Options& o) -> double& { return o.config.dropout; })),
      model_flag(int_flag("--heads", kModel,
                          "heads of the Transformer (default 4) and of --attention multihead; "
                          "they divide --hidden",
                          1, 256, [](Options& o) -> int64_t& { return o.config.num_heads; })),
      model_flag(one_value("--attention", "NAME", kBahdanau,
                           "the decoder's scoring function (default additive; the names are "
                           "listed below)",
                           [](Options& o, const std::string& v) {
                             if (nn::find_scoring_function(v) == nullptr)
                               throw UsageError{"--attention expects one of " +
                                                nn::scoring_function_names() + ", got '" + v + "'"};
                             o.config.attention = v;
                           }),
                 "bahdanau"),
      model_flag(text_flag("--encoder", "unidirectional|bidirectional", kBahdanau,
                           "d2l's one-way GRU encoder (default), or Bahdanau et al.'s: a "
                           "bidirectional GRU whose outputs have read the whole source, the "
                           "decoder started from its backward direction (its keys are twice "
                           "its width: not with dot, use general, or --encoder-hidden H/2)",
                           [](Options& o) -> std::string& { return o.config.encoder; }),
                 "bahdanau"),
      model_flag(int_flag("--encoder-hidden", kBahdanau,
                          "the bidirectional encoder's width per direction (default --hidden); "
                          "--hidden / 2 gives keys of the decoder's width, which dot reads",
                          1, 4096, [](Options& o) -> int64_t& { return o.config.encoder_hiddens; }),
                 "bahdanau"),
      model_flag(int_flag("--embed", kBahdanau, "the embedding size (default 32)", 1, 4096,
                          [](Options& o) -> int64_t& { return o.config.embed_size; }),
                 "bahdanau"),
      model_flag(int_flag("--layers", kBahdanau, "GRU layers (default 2)", 1, 16,
                          [](Options& o) -> int64_t& { return o.config.num_layers; }),
                 "bahdanau"),
      model_flag(int_flag("--ffn", kTransformer, "the FFN's hidden size (d2l's default 64)", 1,
                          16384, [](Options& o) -> int64_t& { return o.config.ffn_num_hiddens; }),
                 "transformer"),
      model_flag(int_flag("--blocks", kTransformer, "encoder and decoder blocks (d2l's default 2)",
                          1, 16, [](Options& o) -> int64_t& { return o.config.num_blks; }),
                 "transformer"),
      model_flag(switch_flag("--no-causal-mask", kTransformer,
                             "train without the decoder's look-ahead mask (the ablation: it "
                             "cheats in training, fails at prediction)",
                             [](Options& o) { o.config.causal = false; }),
                 "transformer"),
      model_flag(switch_flag("--norm-first", kTransformer,
                             "pre-LN blocks (layer norm before each sublayer, a final norm after "
                             "each stack) instead of d2l's post-LN",
                             [](Options& o) { o.config.norm_first = true; }),
                 "transformer"),
      one_value("--steps", "N", kTraining, "Adam steps (default: the task's, below; 0 with --load)",
                [](Options& o, const std::string& v) {
                  o.steps = parse_int("--steps", v, 0, 100'000'000);
                }),
      int_flag("--batch", kTraining, "batch size (default: the task's)", 1, 65536,
               [](Options& o) -> int64_t& { return o.batch; }),
      number_flag("--lr", "X", kTraining, "Adam's learning rate (default: the task's)", 1e-9, 10.0,
                  [](Options& o) -> double& { return o.lr; }),
      one_value("--lr-schedule", "constant|cosine", kTraining,
                "constant (d2l's), or half a cosine from --lr down to 0 over the steps "
                "(default: the task's)",
                [](Options& o, const std::string& v) {
                  o.lr_schedule = one_of("--lr-schedule", v, {"constant", "cosine"});
                }),
      number_flag("--label-smoothing", "E", kTraining,
                  "train towards 1 - E on each target token and E spread over the whole "
                  "vocabulary (torch's label_smoothing; default 0: d2l's loss)",
                  0.0, 1.0, [](Options& o) -> double& { return o.label_smoothing; }),
      int_flag("--warmup", kTraining,
               "the Transformer's schedule: up a straight line to --lr at step N, then down as "
               "1/sqrt(step); with --lr-schedule cosine, down half a cosine to 0 at --steps",
               1, 100'000'000, [](Options& o) -> int64_t& { return o.warmup; }),
      one_value("--seed", "S", kTraining, "data, split, initialisation and batch order (default 0)",
                [](Options& o, const std::string& v) {
                  o.seed = static_cast<uint64_t>(parse_int("--seed", v, 0, INT64_MAX));
                }),
      int_flag("--threads", kTraining,
               "threads (default 1): training splits each batch into T shards trained at once "
               "on copies of the model (data parallel, the same update); evaluation's kernels "
               "use T",
               1, 256, [](Options& o) -> int64_t& { return o.threads; }),
      one_value("--train-size", "N", kTraining,
                "a generated task's training examples (default: the task's)",
                [](Options& o, const std::string& v) {
                  o.train_size = parse_int("--train-size", v, 1, 10'000'000);
                }),
      int_flag("--heldout", kTraining, "a generated task's held-out examples (default 1000)", 1,
               1'000'000, [](Options& o) -> int64_t& { return o.heldout; }),
      int_flag("--eval-every", kTraining,
               "score the held-out split (a task with a dev split: the dev split) every N steps "
               "(default: the task's; 0: never)",
               0, 100'000'000, [](Options& o) -> int64_t& { return o.eval_every; }),
      int_flag("--average-last", kTraining,
               "with a dev split: also score on dev the mean of the parameters at the last N "
               "evaluations (checkpoint averaging); kept when it beats every evaluation on dev",
               2, 1000, [](Options& o) -> int64_t& { return o.average_last; }),
      int_flag("--patience", kTraining,
               "with a dev split: stop once N evaluations in a row have not beaten the best dev "
               "figure (needs --eval-every N > 0)",
               1, 1'000'000, [](Options& o) -> int64_t& { return o.patience; }),
      switch_flag("--skip-test", kTraining,
                  "leave the held-out (test) split unscored after training",
                  [](Options& o) { o.skip_test = true; }),
      text_flag("--save", "FILE.npz", kFiles,
                "save the trained model (state dict with d2l's names + meta.*)",
                [](Options& o) -> std::string& { return o.save; }),
      text_flag("--checkpoint", "FILE", kFiles,
                "with --checkpoint-every N: write the whole run's state (parameters, Adam's, data "
                "order, random generator, curve) to FILE every N steps and at the end, atomically",
                [](Options& o) -> std::string& { return o.checkpoint; }),
      int_flag("--checkpoint-every", kFiles, "--checkpoint's period in steps", 1, 100'000'000,
               [](Options& o) -> int64_t& { return o.checkpoint_every; }),
      text_flag("--resume", "FILE", kFiles,
                "go on from --checkpoint's FILE, to the bits an uninterrupted run would have "
                "(the same flags)",
                [](Options& o) -> std::string& { return o.resume; }),
      text_flag("--curve", "FILE.csv", kFiles,
                "write \"step,dev_wer\" (percent wrong; a task without a dev split "
                "\"step,heldout_accuracy\") per evaluation",
                [](Options& o) -> std::string& { return o.curve; }),
      one_value("--load", "FILE.npz", kFiles,
                "load a saved model instead of training one; given more than once, an ensemble: "
                "the models' next-token probabilities averaged at every output step (the same "
                "task, vocabularies and step counts)",
                [](Options& o, const std::string& v) { o.load.push_back(v); }),
      values_flag("--dump-heldout", "N FILE", kFiles,
                  "write N held-out examples as \"source<TAB>target<TAB>output\" lines", 2,
                  [](Options& o, const std::vector<std::string>& v) {
                    o.dump_count = parse_int("--dump-heldout", v[0], 1, 1'000'000);
                    o.dump_path = v[1];
                  }),
      text_flag("--dict", "PATH", kDictionary,
                "the dictionary, CMUdict's format (default Debian's pocketsphinx-en-us: "
                "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict). Words of ^[a-z']+$ "
                "are kept; split by word: crc32(word) % 20 == 0 test, == 1 dev, else train. "
                "--eval-every scores the whole dev split; the best dev parameters are kept, "
                "restored at the end, saved by --save; the test figures are measured once, at "
                "the end",
                [](Options& o) -> std::string& { return o.dict; }),
      answer_flag(
          one_value("--lexicon", "PATH", kDictionary,
                    "answer the inputs this dictionary (CMUdict's format) lists from it, the rest "
                    "from the model; repeatable, later files override earlier ones entry by entry",
                    [](Options& o, const std::string& v) { o.lexicons.push_back(v); })),
      text_flag("--evaluate", "FILE.dict", kDictionary,
                "score a model (--load) on a dictionary: the task's figures (g2p: WER, PER) on "
                "stderr, the 20 entries furthest off as "
                "\"source<TAB>output<TAB>nearest<TAB>edits\" lines",
                [](Options& o) -> std::string& { return o.evaluate; }),
      text_flag("--alignment-reference", "FILE", kDictionary,
                "with --evaluate (g2p): the attention's row entropy, monotonicity and agreement "
                "with FILE's letters of each phoneme (scripts/g2p_align.py), as eval_entropy, "
                "eval_monotonic, eval_alignment_agreement",
                [](Options& o) -> std::string& { return o.alignment_reference; }),
      text_flag("--score-outputs", "FILE", kDictionary,
                "with --evaluate and no model: score another system's \"source<TAB>output\" "
                "lines by the same figures (--task's, g2p by default; an entry the file lacks "
                "counts as wrong)",
                [](Options& o) -> std::string& { return o.score_outputs; }),
      values_flag(
          "--predict", "TEXT...", kPrediction,
          "translate each TEXT (every argument up to the next option), read as the task reads "
          "its inputs (g2p: case folds): a table of its output and alignment each, or, with "
          "--nbest, --pmass, --lexicon or --show-source, --predict-file's lines",
          kUpToNextFlag,
          [](Options& o, const std::vector<std::string>& v) {
            if (v.empty()) throw UsageError{"--predict needs at least one text"};
            o.predict.insert(o.predict.end(), v.begin(), v.end());
          }),
      text_flag("--predict-file", "FILE", kPrediction,
                "answer each line (- : stdin) in Sequitur's n-best lines, "
                "\"input<TAB>rank<TAB>posterior<TAB>output\" (JSON lines with --json: "
                "confidence, per-token probabilities, source, variants). Lines are read as the "
                "task reads its inputs; spaces and CR around them and blank lines are dropped; "
                "one the model cannot read (a token it has not seen, too long) is reported on "
                "stderr with its line number and skipped: exit code 1",
                [](Options& o) -> std::string& { return o.predict_file; }),
      answer_flag(
          int_flag("--nbest", kPrediction,
                   "the N best answers (--beam defaults to N), each with its posterior: its "
                   "probability renormalised over the N",
                   1, 100, [](Options& o) -> int64_t& { return o.nbest; })),
      answer_flag(one_value("--pmass", "Q", kPrediction,
                            "of the N best, the fewest whose posteriors sum to >= Q (0 < Q <= 1)",
                            [](Options& o, const std::string& v) {
                              o.pmass = parse_double("--pmass", v, 1e-9, 1.0);
                            })),
      answer_flag(switch_flag("--show-source", kPrediction,
                              "a fifth column on the answers' lines: lexicon or model",
                              [](Options& o) { o.show_source = true; })),
      answer_flag(
          text_flag("--heatmap", "FILE.png|.svg", kPrediction,
                    "draw each answer's alignment (FILE-2.png, ... for more); transformer: also "
                    "FILE-encoder.png, FILE-decoder.png, FILE-cross.png, each a [blocks, heads] "
                    "grid of maps",
                    [](Options& o) -> std::string& { return o.heatmap; })),
      int_flag("--beam", kPrediction,
               "beam search with N candidates (d2l's \"Beam Search\", scores log P / L^0.75) "
               "for --predict, --predict-file, --evaluate and the held-out figures (default 1: "
               "greedy); with --predict --json each line lists the candidates under \"beam\"",
               1, 100, [](Options& o) -> int64_t& { return o.beam; }),
      answer_flag(
          switch_flag("--json", kPrediction,
                      "one JSON object per answer instead of a table or a line (transformer: with "
                      "every block's and head's maps)",
                      [](Options& o) { o.json = true; })),
      switch_flag("--stats", kPrediction,
                  "print \"key value\" lines at the end: steps_per_sec, steps_per_cpu_sec, "
                  "loss_tail (mean training loss of the last tenth of the steps), accuracy, "
                  "bleu, rss_kib_first (after 1,000 steps), rss_kib_last, and the task's "
                  "figures as test_KEY, dev_KEY (with best_step, averaged_checkpoints) and "
                  "eval_KEY (--evaluate): g2p's test_wer, test_per, dev_wer, ...",
                  [](Options& o) { o.stats = true; }),
      switch_flag("--help", kPrediction, "this text", [](Options&) {}),
  };
}

// The defaults of the last --task and --model on the command line (dates and
// bahdanau when absent or unknown: the flags' checks report a bad name).
TaskDefaults defaults_of(const std::vector<std::string>& args) {
  std::string task = "dates", model = "bahdanau";
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--task") task = args[i + 1];
    if (args[i] == "--model") model = args[i + 1];
  }
  for (const Task& t : task_table())
    if (t.name() == task) return t.defaults(model);
  return task_table().front().defaults(model);
}

const Flag& find_flag(const std::string& name) {
  for (const Flag& flag : flag_table())
    if (flag.name == name) return flag;
  throw UsageError{"unknown option '" + name + "' (see --help)"};
}

// Each flag's values: the arguments after it (up to the next option for
// kUpToNextFlag, where a text starting with "--" would be taken for one).
void read_flags(const std::vector<std::string>& args, Options& o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string name = args[i] == "-h" ? "--help" : args[i];
    const Flag& flag = find_flag(name);
    if (name == "--help") {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
    std::vector<std::string> values;
    if (flag.values == kUpToNextFlag) {
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) values.push_back(args[++i]);
    } else {
      for (int k = 0; k < flag.values; ++k) {
        if (i + 1 >= args.size()) throw UsageError{name + " needs a value"};
        values.push_back(args[++i]);
      }
    }
    flag.set(o, values);
    o.given.insert(name);
  }
}

// The given flags `which` picks, space-separated.
std::string given_flags(const Options& o, const std::function<bool(const Flag&)>& which) {
  std::string joined;
  for (const Flag& flag : flag_table())
    if (o.has(flag.name) && which(flag)) joined += (joined.empty() ? "" : " ") + flag.name;
  return joined;
}

// How the flags fit together: each conflict is a UsageError saying which
// flags and why; then the defaults the flags left open.
void check_options(Options& o) {
  if (!o.score_outputs.empty() && (o.evaluate.empty() || !o.load.empty() || o.steps))
    throw UsageError{
        "--score-outputs scores a file of answers against --evaluate's dictionary, without a "
        "model (drop --load and --steps)"};
  if (!o.load.empty()) {
    const std::string shaping = given_flags(o, [](const Flag& f) { return f.shapes_model; });
    if (!shaping.empty())
      throw UsageError{"--load takes the task, model and sizes from the file; drop " + shaping};
    if (o.steps.value_or(0) > 0)
      throw UsageError{
          "--load restores a trained model; it does not train it further (drop --steps)"};
    const std::string training = given_flags(o, [](const Flag& f) {
      return f.name == "--checkpoint" || f.name == "--checkpoint-every" || f.name == "--resume" ||
             f.name == "--curve" || f.name == "--warmup" || f.name == "--patience" ||
             f.name == "--skip-test";
    });
    if (!training.empty()) throw UsageError{training + ": training's (drop --load)"};
    if (o.load.size() > 1 && !o.save.empty())
      throw UsageError{"--save with " + std::to_string(o.load.size()) +
                       " --load files: an ensemble is its members' files, not one file"};
  }
  for (const std::string& model : model_names()) {
    const std::string others =
        given_flags(o, [&](const Flag& f) { return f.model == model && model != o.config.model; });
    if (!others.empty())
      throw UsageError{others + ": " + model + "'s options (this run's model is " + o.config.model +
                       "; --model " + model + " reads them)"};
  }
  if (o.has("--heads") && o.config.model == "bahdanau" && o.config.attention != "multihead")
    throw UsageError{"--heads: the Transformer's and --attention multihead's"};
  if (o.load.empty() && o.score_outputs.empty()) {
    try {
      check_model_config(o.config);  // the sizes' rules, the model classes' own
    } catch (const Error& e) {
      throw UsageError{std::string("the flags' model cannot be made: ") + e.what()};
    }
  }
  const std::string shaping_answers = given_flags(o, [](const Flag& f) { return f.for_answers; });
  if (!shaping_answers.empty() && o.predict.empty() && o.predict_file.empty())
    throw UsageError{shaping_answers +
                     ": how answers are shown; there is nothing to answer (add --predict TEXT... "
                     "or --predict-file FILE)"};
  if (o.pmass && o.nbest == 0)
    throw UsageError{"--pmass chooses among the --nbest variants (add --nbest N)"};
  if (o.nbest > 0 && !o.has("--beam")) o.beam = o.nbest;
  if (o.nbest > o.beam)
    throw UsageError{"--nbest " + std::to_string(o.nbest) +
                     " needs a beam at least as wide; --beam is " + std::to_string(o.beam)};
  if (o.average_last > 0 && o.eval_every == 0)
    throw UsageError{
        "--average-last averages the parameters of the last dev evaluations: it needs "
        "--eval-every N > 0"};
  if (o.checkpoint.empty() != (o.checkpoint_every == 0))
    throw UsageError{"--checkpoint FILE and --checkpoint-every N go together"};
  if (o.patience > 0 && o.eval_every == 0)
    throw UsageError{"--patience counts dev evaluations: it needs --eval-every N > 0"};
  if (!o.alignment_reference.empty() && o.evaluate.empty())
    throw UsageError{"--alignment-reference measures the attention on --evaluate's words"};
  // the warm-up shapes the peak --lr: down as 1/sqrt(step) unless the cosine is asked for
  if (o.warmup > 0 && o.lr_schedule.empty()) o.lr_schedule = "constant";
  if (o.lr_schedule.empty()) o.lr_schedule = o.defaults.lr_schedule;
  if (o.warmup > 0 && o.lr_schedule == "cosine" && o.warmup >= o.steps.value_or(o.defaults.steps))
    throw UsageError{"--warmup " + std::to_string(o.warmup) + " with --lr-schedule cosine: the " +
                     "cosine needs steps after the warm-up, and --steps is " +
                     std::to_string(o.steps.value_or(o.defaults.steps))};
  // --score-outputs scores without a model: g2p's answers unless --task says.
  if (!o.score_outputs.empty() && !o.has("--task")) o.task = "g2p";
}

}  // namespace

bool Options::answers_as_lines() const {
  return nbest > 0 || pmass || !lexicons.empty() || show_source;
}

const std::vector<Flag>& flag_table() {
  static const std::vector<Flag> table = make_flag_table();
  return table;
}

std::string usage() {
  std::string out =
      "usage: attograd-translate [options]\n\n"
      "Trains d2l's seq2seq with attention (\"Bahdanau Attention\") or d2l's\n"
      "Transformer (\"The Transformer Architecture\") on a task of the table below,\n"
      "then translates --predict texts and shows where each output token looked.\n";
  // Each flag: its name and value, then its help wrapped at 100 columns
  // from column 30 (on the next line when the name reaches it).
  constexpr size_t kColumn = 30, kWidth = 100;
  std::string section;
  for (const Flag& flag : flag_table()) {
    if (flag.section != section) out += "\n" + (section = flag.section) + ":\n";
    std::string line = "  " + flag.name + (flag.value.empty() ? "" : " " + flag.value);
    if (line.size() >= kColumn) {
      out += line + "\n";
      line.clear();
    }
    std::istringstream words(flag.help);
    bool first = true;
    for (std::string word; words >> word; first = false) {
      if (!first && line.size() + 1 + word.size() > kWidth) {
        out += line + "\n";
        line.clear();
        first = true;
      }
      if (first) line.resize(kColumn, ' ');
      line += (first ? "" : " ") + word;
    }
    out += line + "\n";
  }
  out += "\ntasks (--task NAME; translate/src/tasks.cpp), what each model trains with:\n";
  for (const Task& task : task_table()) {
    out += "  " + task.summary + "\n";
    for (const std::string& model : model_names()) {
      const TaskDefaults d = task.defaults(model);
      char line[256];
      std::snprintf(line, sizeof line, "      %-11s %lld steps, batch %lld, lr %g %s",
                    model.c_str(), static_cast<long long>(d.steps), static_cast<long long>(d.batch),
                    d.lr, d.lr_schedule.c_str());
      out += line;
      if (model == "bahdanau" && d.config.encoder != ModelConfig().encoder)
        out += ", " + d.config.encoder + " encoder";
      if (d.config.num_hiddens != ModelConfig().num_hiddens)
        out += ", hidden " + std::to_string(d.config.num_hiddens);
      if (d.train_size > 0) out += ", " + std::to_string(d.train_size) + " training examples";
      out += "\n";
    }
  }
  out += "\nscoring functions (--attention NAME; nn/src/scoring_table.cpp):\n";
  for (const nn::ScoringEntry& entry : nn::scoring_functions()) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-12s %s\n", entry.name.c_str(), entry.summary.c_str());
    out += line;
  }
  return out;
}

Options parse_args(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  Options o;
  // 1. The defaults of the task and model the command line names.
  o.defaults = defaults_of(args);
  o.config = o.defaults.config;
  o.batch = o.defaults.batch;
  o.eval_every = o.defaults.eval_every;
  o.lr = o.defaults.lr;
  // 2. The flags over them, 3. checked together, and with the task when
  //    training (a loaded model's task is checked once the file is read).
  read_flags(args, o);
  check_options(o);
  if (o.load.empty()) check_task_options(find_task(o.task), o);
  return o;
}

void check_task_options(const Task& task, const Options& o) {
  TaskOptions options;
  options.training = o.load.empty();
  options.sizes_given = o.has("--train-size") || o.has("--heldout");
  options.train_size = o.train_size.value_or(o.defaults.train_size);
  options.heldout = o.heldout;
  options.batch = o.batch;
  options.dict = o.has("--dict");
  options.average_last = o.average_last > 0;
  task.check(options);
  if (o.patience > 0 && !task.reads_dictionary())
    throw Error("--patience counts dev evaluations; '" + task.name() +
                "' has no dev split (the tasks with one: " +
                task_names([](const Task& t) { return t.reads_dictionary(); }) + ")");
  if (!o.alignment_reference.empty() && task.name() != "g2p")
    throw Error("--alignment-reference measures a g2p model's attention; the task is '" +
                task.name() + "'");
  if (!o.evaluate.empty()) require_dictionary(task, "--evaluate");
  if (!o.lexicons.empty()) require_dictionary(task, "--lexicon");
}

}  // namespace ag::translate::program
