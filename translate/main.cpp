// attograd-translate: trains d2l's seq2seq with attention, or d2l's
// Transformer, on a generated task or on CMUdict (g2p), shows what it
// learned, saves and loads it.
//
//   attograd-translate --task dates --steps 3000 --save dates.npz
//   attograd-translate --task g2p --save g2p.npz        (CMUdict, task defaults below)
//   attograd-translate --load g2p.npz --predict-file words.txt
//   attograd-translate --load g2p.npz --predict-file words.txt --nbest 3 --lexicon my.dict
//   attograd-translate --load g2p.npz --evaluate other.dict
//   attograd-translate --model transformer --task reverse --save reverse.npz
//   attograd-translate --model transformer --task reverse --no-causal-mask --stats
//   attograd-translate --load dates.npz --predict "Thursday, May 3, 1979" "3.5.1979"
//   attograd-translate --load dates.npz --predict "May 3rd '79" --heatmap may.png --json
//
// Progress and the held-out summary go to stderr; predictions (tables or
// JSON lines) and --stats to stdout. Bad input: one line on stderr, exit 2;
// --predict-file's words that cannot be read are reported and skipped, exit 1.
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "attograd/attograd.h"
#include "attograd/translate/attention_measures.h"
#include "attograd/translate/data.h"
#include "attograd/translate/ensemble.h"
#include "attograd/translate/model.h"
#include "attograd/translate/pronouncer.h"
#include "attograd/translate/report.h"
#include "attograd/translate/tasks.h"
#include "attograd/translate/train.h"
#include "attograd/translate/training_run.h"

namespace {

using namespace ag::translate;

constexpr const char* kUsage = R"(usage: attograd-translate [options]

Trains d2l's seq2seq with attention ("Bahdanau Attention") or d2l's
Transformer ("The Transformer Architecture") on a generated task or on
CMUdict, then translates --predict texts and shows where each output token
looked.

task and model:
  --task NAME                 the task (default dates; the tasks and their defaults
                              are listed below; a run prints its settings first)
  --model bahdanau|transformer  the model (default bahdanau)
  --hidden N --dropout P      both models' (d2l's defaults: 32, 0.1); the
                              Transformer's d (its embedding size too)
bahdanau:
  --attention NAME            the decoder's scoring function (default additive;
                              the names are listed below)
  --encoder unidirectional|bidirectional  d2l's one-way GRU encoder (default), or
                              Bahdanau et al.'s: a bidirectional GRU whose outputs
                              have read the whole source, the decoder started from
                              its backward direction (its keys are twice the
                              decoder's width: not with dot, use general, or
                              --encoder-hidden H/2)
  --encoder-hidden N          the bidirectional encoder's width per direction
                              (default --hidden); --hidden / 2 gives keys of the
                              decoder's width, which dot reads
  --embed N --layers N        embedding size, GRU layers (default 32, 2)
  --heads N                   multihead's heads (default 4; divides --hidden)
transformer:
  --heads N --ffn N --blocks N  heads, FFN hidden size, encoder and decoder
                              blocks (d2l's defaults: 4, 64, 2)
  --no-causal-mask            train without the decoder's look-ahead mask (the
                              ablation: it cheats in training, fails at prediction)
  --norm-first                pre-LN blocks (layer norm before each sublayer, a
                              final norm after each stack) instead of d2l's post-LN
training:
  --steps N                   Adam steps (default: the task's, below; 0 with --load)
  --batch B                   batch size (default: the task's)
  --lr X                      Adam's learning rate (default: the task's)
  --lr-schedule constant|cosine  constant (d2l's), or half a cosine from --lr down
                              to 0 over the steps (default: the task's)
  --label-smoothing E         train towards 1 - E on each target token and E spread
                              over the whole vocabulary (torch's label_smoothing;
                              default 0: d2l's loss)
  --warmup W                  the Transformer's schedule: up a straight line to --lr
                              at step W, then down as 1/sqrt(step) (not with cosine)
  --seed S                    data, split, initialisation and batch order (default 0)
  --threads T                 threads (default 1): training splits each batch into T
                              shards trained at once on copies of the model (data
                              parallel, the same update); evaluation's kernels use T
  --train-size N              a generated task's training examples (default: the task's)
  --heldout N                 a generated task's held-out examples (default 1000)
  --eval-every N              held-out accuracy (g2p: the dev WER) every N steps
                              (default: the task's; 0: never)
  --average-last K            g2p: also score on dev the mean of the parameters at
                              the last K evaluations (checkpoint averaging); kept
                              when it beats every evaluation's dev WER
  --patience K                g2p: stop once K evaluations in a row have not beaten
                              the best dev WER (needs --eval-every N > 0)
  --skip-test                 g2p: leave the test split unscored after training
files:
  --checkpoint FILE --checkpoint-every N  write the whole run's state (parameters,
                              Adam's, data order, random generator, curve) to FILE
                              every N steps and at the end, atomically
  --resume FILE               go on from --checkpoint's FILE, to the bits an
                              uninterrupted run would have (the same flags)
  --curve FILE.csv            write "step,dev_wer" (percent; other tasks
                              "step,heldout_accuracy") per evaluation
  --save FILE.npz             save the trained model (state dict with d2l's names + meta.*)
  --load FILE.npz             load a saved model instead of training one; given
                              more than once, an ensemble: the models' next-token
                              probabilities averaged at every output step (the
                              same task, vocabularies and step counts)
  --dump-heldout N FILE       write N held-out examples as "source<TAB>target<TAB>output" lines
g2p (letters to sounds):
  --dict PATH                 the dictionary, CMUdict's format (default Debian's
                              pocketsphinx-en-us: /usr/share/pocketsphinx/model/
                              en-us/cmudict-en-us.dict). Words of ^[a-z']+$ are
                              kept; split by word: crc32(word) % 20 == 0 test,
                              == 1 dev, else train. --eval-every scores the whole
                              dev split (WER); the best dev parameters are kept,
                              restored at the end, saved by --save; test WER and
                              PER are measured once, at the end
  --predict-file FILE         pronounce each line's word (- : stdin), printing
                              Sequitur's "word<TAB>rank<TAB>posterior<TAB>phonemes"
                              lines and a fifth column, lexicon or model (JSON
                              lines with --json: confidence, phoneme_probs,
                              source, variants). Words are read as typed: case
                              folds, spaces and CR around them and blank lines are
                              dropped; a word the model cannot read (a character
                              it has not seen, too long) is reported on stderr
                              with its line number and skipped: exit code 1
  --nbest N                   --predict-file: the N best pronunciations (--beam
                              defaults to N), each with its posterior: its
                              probability renormalised over the N
  --pmass Q                   --predict-file: of the N best, the fewest whose
                              posteriors sum to >= Q (0 < Q <= 1)
  --lexicon PATH              --predict-file: answer the words this dictionary
                              (CMUdict's format) lists from it, the rest from the
                              model; repeatable, later files override earlier ones
                              word by word
  --evaluate FILE.dict        score a g2p model (--load) on a dictionary: WER, PER
                              (phoneme edits to the nearest pronunciation per
                              reference phoneme) on stderr, the 20 words furthest
                              off as "word<TAB>output<TAB>nearest<TAB>edits" lines
  --alignment-reference FILE  with --evaluate: the attention's entropy, monotonicity
                              and agreement with FILE's letters of each phoneme
                              (scripts/g2p_align.py), as eval_entropy,
                              eval_monotonic, eval_alignment_agreement
  --score-outputs FILE        with --evaluate and no model: score another system's
                              "word<TAB>phonemes" lines by the same WER and PER
                              (a word the file lacks counts as wrong)
prediction:
  --predict TEXT...           translate each TEXT (every argument up to the next option)
  --heatmap FILE.png|.svg     draw each prediction's alignment (FILE-2.png, ... for more);
                              transformer: also FILE-encoder.png, FILE-decoder.png,
                              FILE-cross.png, each a [blocks, heads] grid of maps
  --beam K                    beam search with K candidates (d2l's "Beam Search",
                              scores log P / L^0.75) for --predict, --predict-file,
                              --evaluate and the held-out figures (default 1: greedy);
                              with --predict --json each line lists the candidates
                              under "beam"
  --json                      one JSON object per prediction instead of a table
                              (transformer: with every block's and head's maps)
  --stats                     print "key value" lines at the end (steps_per_sec,
                              steps_per_cpu_sec, loss_tail (mean training loss of
                              the last tenth of the steps), accuracy, alignment,
                              rss_kib_first (after 1,000 steps), rss_kib_last;
                              g2p: test_wer, test_per, dev_wer, best_step,
                              averaged_checkpoints (--average-last);
                              --evaluate: eval_wer, eval_per, ...)
  --help                      this text
)";

// The table's tasks and their defaults, for --help: the task's line, then
// what each model trains with unless a flag says otherwise.
void print_tasks() {
  std::printf("\ntasks (--task NAME; translate/src/tasks.cpp):\n");
  for (const TaskSpec& spec : task_table()) {
    std::printf("  %s\n", spec.summary.c_str());
    for (const std::string& model : model_names()) {
      const TaskDefaults d = spec.defaults(model);
      std::printf("      %-11s %lld steps, batch %lld, lr %g %s", model.c_str(),
                  static_cast<long long>(d.steps), static_cast<long long>(d.batch), d.lr,
                  d.lr_schedule.c_str());
      if (model == "bahdanau" && d.config.encoder != "unidirectional")
        std::printf(", %s encoder", d.config.encoder.c_str());
      if (d.config.num_hiddens != ModelConfig().num_hiddens)
        std::printf(", hidden %lld", static_cast<long long>(d.config.num_hiddens));
      if (d.train_size > 0)
        std::printf(", %lld training examples", static_cast<long long>(d.train_size));
      std::printf("\n");
    }
  }
}

struct Options {
  std::string task = "dates";
  bool task_given = false, model_given = false, sizes_given = false, heads_given = false;
  std::vector<std::string> bahdanau_flags, transformer_flags;  // given, for the model check
  TaskDefaults defaults;                                       // of --task and --model
  ModelConfig config;
  std::optional<int64_t> steps;
  int64_t batch = 0, threads = 1, heldout = 1000, eval_every = 0, average_last = 0;
  std::optional<int64_t> train_size;
  double lr = 0, label_smoothing = 0;
  std::string lr_schedule;  // "constant" or "cosine"; empty: the defaults'
  uint64_t seed = 0;
  std::string save, heatmap, dump_path;
  std::vector<std::string> load;  // --load, repeatable: one model, or an ensemble
  std::string dict = kDefaultCmudictPath, predict_file, evaluate, score_outputs;
  bool dict_given = false, heldout_given = false;
  int64_t dump_count = 0;
  std::vector<std::string> predict;
  bool json = false, stats = false;
  int64_t beam = 1;  // --beam: 1 is greedy
  bool beam_given = false;
  int64_t nbest = 0;  // --nbest: 0 when not given
  std::optional<double> pmass;
  std::vector<std::string> lexicons;
  // issue 63: long runs in sittings, the Transformer's schedule, attention measures
  std::string checkpoint, resume, curve, alignment_reference;
  int64_t checkpoint_every = 0, warmup = 0, patience = 0;
  bool skip_test = false, lr_schedule_given = false;
};

// A bad command line: reported as one line, exit code 2.
struct UsageError {
  std::string message;
};

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

// The defaults of the last --task and --model on the command line (dates and
// bahdanau when absent or unknown: the parser reports a bad name).
TaskDefaults defaults_of(const std::vector<std::string>& args) {
  std::string task = "dates", model = "bahdanau";
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--task") task = args[i + 1];
    if (args[i] == "--model") model = args[i + 1];
  }
  Task t = Task::Dates;
  try {
    t = task_from_name(task);
  } catch (const ag::Error&) {
  }
  return task_spec(t).defaults(model);
}

// Every flag into `o`, whose defaults are already set; a flag's own value
// is checked here, how the flags fit together in check_options.
void read_flags(const std::vector<std::string>& args, Options& o) {
  size_t i = 0;
  const auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= args.size()) throw UsageError{flag + " needs a value"};
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      print_tasks();
      std::printf("\nscoring functions (--attention NAME; nn/src/scoring_table.cpp):\n");
      for (const ag::nn::ScoringEntry& entry : ag::nn::scoring_functions())
        std::printf("  %-12s %s\n", entry.name.c_str(), entry.summary.c_str());
      std::exit(0);
    } else if (a == "--task") {
      o.task = value(a);
      o.task_given = true;
    } else if (a == "--model") {
      o.config.model = value(a);
      o.model_given = true;
    } else if (a == "--encoder") {
      o.config.encoder = value(a);
      o.bahdanau_flags.push_back(a);
      if (o.config.encoder != "unidirectional" && o.config.encoder != "bidirectional")
        throw UsageError{"--encoder expects unidirectional or bidirectional, got '" +
                         o.config.encoder + "'"};
    } else if (a == "--attention") {
      o.config.attention = value(a);
      o.bahdanau_flags.push_back(a);
      if (ag::nn::find_scoring_function(o.config.attention) == nullptr)
        throw UsageError{"--attention expects one of " + ag::nn::scoring_function_names() +
                         ", got '" + o.config.attention + "'"};
    } else if (a == "--embed") {
      o.config.embed_size = parse_int(a, value(a), 1, 4096);
      o.bahdanau_flags.push_back(a);
    } else if (a == "--hidden") {
      o.config.num_hiddens = parse_int(a, value(a), 1, 4096);
      o.sizes_given = true;
    } else if (a == "--layers") {
      o.config.num_layers = parse_int(a, value(a), 1, 16);
      o.bahdanau_flags.push_back(a);
    } else if (a == "--heads") {
      o.config.num_heads = parse_int(a, value(a), 1, 256);
      o.heads_given = true;
    } else if (a == "--ffn") {
      o.config.ffn_num_hiddens = parse_int(a, value(a), 1, 16384);
      o.transformer_flags.push_back(a);
    } else if (a == "--blocks") {
      o.config.num_blks = parse_int(a, value(a), 1, 16);
      o.transformer_flags.push_back(a);
    } else if (a == "--no-causal-mask") {
      o.config.causal = false;
      o.transformer_flags.push_back(a);
    } else if (a == "--dropout") {
      o.config.dropout = parse_double(a, value(a), 0.0, 0.95);
      o.sizes_given = true;
    } else if (a == "--steps") {
      o.steps = parse_int(a, value(a), 0, 100'000'000);
    } else if (a == "--batch") {
      o.batch = parse_int(a, value(a), 1, 65536);
    } else if (a == "--lr") {
      o.lr = parse_double(a, value(a), 1e-9, 10.0);
    } else if (a == "--label-smoothing") {
      o.label_smoothing = parse_double(a, value(a), 0.0, 1.0);
    } else if (a == "--warmup") {
      o.warmup = parse_int(a, value(a), 1, 100'000'000);
    } else if (a == "--patience") {
      o.patience = parse_int(a, value(a), 1, 1'000'000);
    } else if (a == "--checkpoint") {
      o.checkpoint = value(a);
    } else if (a == "--checkpoint-every") {
      o.checkpoint_every = parse_int(a, value(a), 1, 100'000'000);
    } else if (a == "--resume") {
      o.resume = value(a);
    } else if (a == "--curve") {
      o.curve = value(a);
    } else if (a == "--skip-test") {
      o.skip_test = true;
    } else if (a == "--alignment-reference") {
      o.alignment_reference = value(a);
    } else if (a == "--encoder-hidden") {
      o.config.encoder_hiddens = parse_int(a, value(a), 1, 4096);
      o.bahdanau_flags.push_back(a);
    } else if (a == "--norm-first") {
      o.config.norm_first = true;
      o.transformer_flags.push_back(a);
    } else if (a == "--lr-schedule") {
      o.lr_schedule = value(a);
      o.lr_schedule_given = true;
      if (o.lr_schedule != "constant" && o.lr_schedule != "cosine")
        throw UsageError{"--lr-schedule expects constant or cosine, got '" + o.lr_schedule + "'"};
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(a, value(a), 0, INT64_MAX));
    } else if (a == "--threads") {
      o.threads = parse_int(a, value(a), 1, 256);
    } else if (a == "--train-size") {
      o.train_size = parse_int(a, value(a), 1, 10'000'000);
    } else if (a == "--heldout") {
      o.heldout = parse_int(a, value(a), 1, 1'000'000);
      o.heldout_given = true;
    } else if (a == "--dict") {
      o.dict = value(a);
      o.dict_given = true;
    } else if (a == "--predict-file") {
      o.predict_file = value(a);
    } else if (a == "--evaluate") {
      o.evaluate = value(a);
    } else if (a == "--score-outputs") {
      o.score_outputs = value(a);
    } else if (a == "--eval-every") {
      o.eval_every = parse_int(a, value(a), 0, 100'000'000);
    } else if (a == "--average-last") {
      o.average_last = parse_int(a, value(a), 2, 1000);
    } else if (a == "--save") {
      o.save = value(a);
    } else if (a == "--load") {
      o.load.push_back(value(a));
    } else if (a == "--heatmap") {
      o.heatmap = value(a);
    } else if (a == "--dump-heldout") {
      o.dump_count = parse_int(a, value(a), 1, 1'000'000);
      o.dump_path = value(a);
    } else if (a == "--beam") {
      o.beam = parse_int(a, value(a), 1, 100);
      o.beam_given = true;
    } else if (a == "--nbest") {
      o.nbest = parse_int(a, value(a), 1, 100);
    } else if (a == "--pmass") {
      o.pmass = parse_double(a, value(a), 1e-9, 1.0);
    } else if (a == "--lexicon") {
      o.lexicons.push_back(value(a));
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--predict") {
      // Every following argument up to the next option is a text; a text
      // starting with "--" would be taken for an option.
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) o.predict.push_back(args[++i]);
      if (o.predict.empty()) throw UsageError{"--predict needs at least one text"};
    } else {
      throw UsageError{"unknown option '" + a + "' (see --help)"};
    }
  }
}

// How the flags fit together: each conflict is a UsageError saying which
// flags and why; then the defaults the flags left open.
void check_options(Options& o) {
  Task task = Task::Dates;
  try {
    task = task_from_name(o.task);
  } catch (const ag::Error&) {
    throw UsageError{"--task expects " + task_names() + ", got '" + o.task + "'"};
  }
  if (o.load.empty() && task == Task::G2p && (o.train_size || o.heldout_given))
    throw UsageError{
        "--train-size and --heldout size the generated tasks; g2p's split comes from the "
        "dictionary"};
  if (o.load.empty() && task != Task::G2p && o.dict_given)
    throw UsageError{"--dict is g2p's (add --task g2p)"};
  if (!o.score_outputs.empty() && (o.evaluate.empty() || !o.load.empty() || o.steps))
    throw UsageError{
        "--score-outputs scores a file of answers against --evaluate's dictionary, without a "
        "model (drop --load and --steps)"};
  if (o.load.empty() && task != Task::G2p && !o.evaluate.empty() && o.score_outputs.empty())
    throw UsageError{"--evaluate scores a g2p model on a dictionary; --task is '" + o.task + "'"};
  const auto& models = model_names();
  if (std::find(models.begin(), models.end(), o.config.model) == models.end())
    throw UsageError{"--model: unknown model '" + o.config.model + "'"};
  const auto join = [](const std::vector<std::string>& flags) {
    std::string joined;
    for (const auto& flag : flags) joined += (joined.empty() ? "" : " ") + flag;
    return joined;
  };
  if (!o.load.empty()) {
    if (o.task_given || o.model_given || o.sizes_given || o.heads_given ||
        !o.bahdanau_flags.empty() || !o.transformer_flags.empty())
      throw UsageError{
          "--load takes the task, model and sizes from the file; drop "
          "--task/--model/--attention/--encoder/--embed/--hidden/--layers/--dropout/--heads/"
          "--ffn/--blocks/--no-causal-mask/--encoder-hidden/--norm-first"};
    if (o.steps.value_or(0) > 0)
      throw UsageError{
          "--load restores a trained model; it does not train it further (drop --steps)"};
    if (!o.checkpoint.empty() || !o.resume.empty() || !o.curve.empty() || o.warmup > 0 ||
        o.patience > 0)
      throw UsageError{
          "--checkpoint, --resume, --curve, --warmup and --patience are training's (drop "
          "--load)"};
    if (o.load.size() > 1 && !o.save.empty())
      throw UsageError{"--save with " + std::to_string(o.load.size()) +
                       " --load files: an ensemble is its members' files, not one file"};
  }
  if (o.config.model == "transformer" && !o.bahdanau_flags.empty())
    throw UsageError{join(o.bahdanau_flags) +
                     ": bahdanau's options; the Transformer embeds in --hidden (d2l's "
                     "num_hiddens) and has --blocks, --heads, --ffn"};
  const int64_t encoder_width =
      o.config.encoder_hiddens > 0 ? o.config.encoder_hiddens : o.config.num_hiddens;
  if (o.config.encoder == "bidirectional" && o.config.attention == "dot" &&
      2 * encoder_width != o.config.num_hiddens)
    throw UsageError{
        "--encoder bidirectional with --attention dot: dot-product scores need keys of the "
        "queries' width, and the bidirectional encoder's are twice its width (2 x " +
        std::to_string(encoder_width) + " against " + std::to_string(o.config.num_hiddens) +
        "); --attention general learns the map between them, or --encoder-hidden " +
        std::to_string(o.config.num_hiddens / 2) + " halves the encoder"};
  if (o.config.encoder_hiddens > 0 && o.config.encoder != "bidirectional")
    throw UsageError{
        "--encoder-hidden sizes the bidirectional encoder (add --encoder bidirectional)"};
  if (o.checkpoint.empty() != (o.checkpoint_every == 0))
    throw UsageError{"--checkpoint FILE and --checkpoint-every N go together"};
  if (o.patience > 0 && (task != Task::G2p || o.eval_every == 0))
    throw UsageError{
        "--patience counts dev evaluations: it needs --task g2p (the task with a dev split) and "
        "--eval-every N > 0"};
  if (!o.alignment_reference.empty() && o.evaluate.empty())
    throw UsageError{"--alignment-reference measures the attention on --evaluate's words"};
  if (o.warmup > 0 && o.lr_schedule_given && o.lr_schedule == "cosine")
    throw UsageError{"--warmup is a schedule of its own: not with --lr-schedule cosine"};
  if (o.warmup > 0) o.lr_schedule = "constant";  // the peak, shaped by the warm-up
  if (o.heads_given && o.config.model != "transformer" && o.config.attention != "multihead")
    throw UsageError{"--heads: the Transformer's and --attention multihead's"};
  if (o.config.model == "bahdanau" && o.config.attention == "multihead" &&
      o.config.num_hiddens % o.config.num_heads != 0)
    throw UsageError{"--hidden " + std::to_string(o.config.num_hiddens) +
                     " must be divisible by --heads " + std::to_string(o.config.num_heads)};
  if (o.config.model != "transformer" && !o.transformer_flags.empty())
    throw UsageError{join(o.transformer_flags) +
                     ": the Transformer's options (add --model transformer)"};
  if (o.config.model == "transformer" &&
      (o.config.num_hiddens % 2 != 0 || o.config.num_hiddens % o.config.num_heads != 0))
    throw UsageError{"--hidden " + std::to_string(o.config.num_hiddens) +
                     " must be even (the positional encoding's sin/cos pairs) and divisible by "
                     "--heads " +
                     std::to_string(o.config.num_heads)};
  if ((o.nbest > 0 || o.pmass || !o.lexicons.empty()) && o.predict_file.empty())
    throw UsageError{"--nbest, --pmass and --lexicon are --predict-file's"};
  if (o.pmass && o.nbest == 0)
    throw UsageError{"--pmass chooses among the --nbest variants (add --nbest N)"};
  if (o.nbest > 0 && !o.beam_given) o.beam = o.nbest;
  if (o.nbest > o.beam)
    throw UsageError{"--nbest " + std::to_string(o.nbest) +
                     " needs a beam at least as wide; --beam is " + std::to_string(o.beam)};
  if (o.lr_schedule.empty()) o.lr_schedule = o.defaults.lr_schedule;
  if (o.average_last > 0 && (task != Task::G2p || o.eval_every == 0))
    throw UsageError{
        "--average-last averages the parameters of the last dev evaluations: it needs "
        "--task g2p (the task with a dev split) and --eval-every N > 0"};
  if (task != Task::G2p) {
    const int64_t train_size = o.train_size.value_or(o.defaults.train_size);
    if (o.heldout > train_size) throw UsageError{"--heldout cannot exceed --train-size"};
    if (o.batch > train_size) throw UsageError{"--batch cannot exceed --train-size"};
  }
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
  // 2. The flags over them, 3. checked together.
  read_flags(args, o);
  check_options(o);
  return o;
}

// What this process has used so far, read with one getrusage call.
struct Usage {
  // CPU seconds (user + system, every thread): on a busy machine the fair
  // measure of a one-thread run, beside the wall time.
  double cpu_seconds = 0;
  // Page faults taken without reading a file (minor faults): in a training
  // step, a fresh buffer's first touch of each page, which cached buffers
  // (attograd/allocator.h) avoid.
  int64_t page_faults = 0;
};
Usage usage() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return {static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
              static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6,
          r.ru_minflt};
}

// Resident set size in KiB (Linux /proc/self/statm; 0 elsewhere).
int64_t rss_kib() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

std::string with_index(const std::string& path, size_t index, size_t count) {
  if (count == 1) return path;
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  std::string suffix = "-";
  suffix += std::to_string(index + 1);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

// What the model reads for `texts`: g2p reads lowercase words, so "Knife" is
// read as "knife" (ASCII letters only); other tasks read the texts as given.
std::vector<std::string> model_inputs(Task task, std::vector<std::string> texts) {
  if (task == Task::G2p)
    for (std::string& text : texts) text = Pronouncer::normalize(text);
  return texts;
}

// The starting line: everything that sets the run, defaults or not.
void print_setup(const Translator& translator, const Dataset& d, const Options& o, int64_t steps) {
  const ModelConfig& c = translator.config;
  char sizes[160];
  if (c.model == "transformer")
    std::snprintf(sizes, sizeof sizes, "hidden %lld, FFN %lld, %lld heads, %lld blocks, %s",
                  static_cast<long long>(c.num_hiddens), static_cast<long long>(c.ffn_num_hiddens),
                  static_cast<long long>(c.num_heads), static_cast<long long>(c.num_blks),
                  c.causal ? "look-ahead mask" : "NO look-ahead mask (ablation)");
  else
    std::snprintf(sizes, sizeof sizes,
                  "%s encoder, %s attention, embed %lld, hidden %lld, layers %lld",
                  c.encoder.c_str(), c.attention.c_str(), static_cast<long long>(c.embed_size),
                  static_cast<long long>(c.num_hiddens), static_cast<long long>(c.num_layers));
  if (!d.description().empty()) std::fprintf(stderr, "%s\n", d.description().c_str());
  std::fprintf(stderr,
               "training %s (%s, dropout %g) on %s: %zu training, %zu dev, %zu held-out examples; "
               "batch %lld, lr %g %s, %lld steps, %lld thread%s, eval every %lld\n",
               c.model.c_str(), sizes, c.dropout, task_name(d.task()), d.train().size(),
               d.dev().size(), d.heldout().size(), static_cast<long long>(o.batch), o.lr,
               o.lr_schedule.c_str(), static_cast<long long>(steps),
               static_cast<long long>(o.threads), o.threads == 1 ? "" : "s",
               static_cast<long long>(o.eval_every));
  if (o.label_smoothing > 0) std::fprintf(stderr, "label smoothing %g\n", o.label_smoothing);
  if (o.warmup > 0)
    std::fprintf(stderr, "warm-up %lld steps to lr %g, then 1/sqrt(step)\n",
                 static_cast<long long>(o.warmup), o.lr);
  if (c.encoder_hiddens > 0)
    std::fprintf(stderr, "encoder width %lld per direction\n",
                 static_cast<long long>(c.encoder_hiddens));
  if (c.norm_first) std::fprintf(stderr, "pre-LN blocks\n");
  if (o.patience > 0)
    std::fprintf(stderr, "patience %lld evaluations\n", static_cast<long long>(o.patience));
}

// The task's data, read or generated when first needed: a loaded model that
// only predicts never reads the dictionary.
class LazyDataset {
 public:
  explicit LazyDataset(const Options& o) : o_(o) {}
  const Dataset& get(Task task) {
    if (!data_)
      data_.emplace(DatasetOptions{
          task, o_.train_size.value_or(task_spec(task).defaults(o_.config.model).train_size),
          o_.heldout, o_.seed, o_.dict});
    return *data_;
  }

 private:
  const Options& o_;
  std::optional<Dataset> data_;
};

// What training measured, for its summary line and --stats.
struct TrainingFigures {
  int64_t steps = 0, best_step = -1, rss_first = 0;
  int64_t averaged = 0;       // the checkpoints averaged into the kept parameters (0: none)
  int64_t sitting_steps = 0;  // this process's (--resume: the steps after the checkpoint's)
  double seconds = 0, cpu_seconds = 0;  // training's, the evaluations excluded
  int64_t page_faults = 0;              // the same
  ag::AllocatorStats allocator;         // at the end of training (hits, misses: its own)
  double loss_last = std::nan(""), loss_tail = std::nan("");
};

// What was scored, for --stats: dev and test after training (or of a loaded
// model with --stats), and --evaluate's dictionary.
struct Scores {
  std::optional<Evaluation> test, dev, dict;
  std::optional<AttentionMeasures> attention;  // --alignment-reference's, on --evaluate's words
  std::optional<AlignmentAgreement> agreement;
};

// --predict-file's, for --stats: the words pronounced (from the lexicon and
// in all), those skipped, and the seconds pronounce() took (loading and
// reading the list excluded).
struct PredictFigures {
  int64_t words = 0, from_lexicon = 0, skipped = 0;
  double seconds = 0;
};

// --curve's file: a line per evaluation, the dev WER in percent (g2p), or
// the held-out accuracy.
void write_curve(const std::string& path, const TrainingRun& run) {
  std::ofstream out(path);
  out.precision(17);
  out << (run.by_dev() ? "step,dev_wer\n" : "step,heldout_accuracy\n");
  for (const CurvePoint& point : run.curve())
    out << point.step << ',' << (run.by_dev() ? 100 * (1 - point.accuracy) : point.accuracy)
        << '\n';
  if (!out) throw ag::Error("--curve: cannot write '" + path + "'");
}

// 1. The model: --load's (checked against what the flags ask of it), or a
//    fresh one for the task's data.
Translator load_or_make(const Options& o, LazyDataset& data) {
  if (o.load.empty()) return make_translator(o.config, data.get(task_from_name(o.task)));
  Translator translator = load_ensemble(o.load);
  if (!o.evaluate.empty() && translator.task != Task::G2p)
    throw ag::Error("--evaluate: the model in " + o.load.front() + " was trained on '" +
                    task_name(translator.task) + "', not 'g2p'");
  return translator;
}

// 2. Training: a TrainingRun (training_run.h; --resume's checkpoint first)
//    with a progress line and, every --eval-every steps, the held-out
//    accuracy, or with a dev split (g2p) the dev WER, keeping the best dev
//    parameters (restored at the end); --checkpoint's file every
//    --checkpoint-every steps and at the end, --curve's at the end.
TrainingFigures train_model(Translator& translator, const Dataset& d, const Options& o,
                            int64_t steps) {
  TrainingFigures figures;
  const bool tty = isatty(STDERR_FILENO);
  print_setup(translator, d, o, steps);
  RunOptions options;
  options.train.cosine_lr = o.lr_schedule == "cosine";
  options.train.warmup_steps = o.warmup;
  options.train.steps = steps;
  options.train.batch_size = o.batch;
  options.train.lr = o.lr;
  options.train.label_smoothing = o.label_smoothing;
  options.train.seed = o.seed;
  options.train.threads = o.threads;
  options.eval_every = o.eval_every;
  options.average_last = o.average_last;
  options.patience = o.patience;
  TrainingRun run(translator, d, options);
  const bool by_dev = run.by_dev();
  double best_wer = std::nan("");
  const auto note = [&](const CurvePoint& point) {
    if (by_dev && !(1 - point.accuracy >= best_wer)) best_wer = 1 - point.accuracy;
  };
  if (!o.resume.empty()) {
    run.resume(o.resume);
    for (const CurvePoint& point : run.curve()) note(point);
    std::fprintf(stderr, "resumed from %s after step %lld\n", o.resume.c_str(),
                 static_cast<long long>(run.steps_taken()));
  }
  const int64_t first_step = run.steps_taken();
  double accuracy = run.curve().empty() ? std::nan("") : run.curve().back().accuracy;
  double last_draw = -1;
  // The evaluations' and checkpoints' time is measured apart and left out of the figures.
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const Usage usage_start = usage();
  const ag::AllocatorStats allocator_start = ag::allocator_stats();
  double aside_cpu_seconds = 0;
  int64_t aside_faults = 0;
  while (!run.finished()) {
    const double loss = run.step();
    const int64_t step = run.steps_taken();
    const Usage usage_before = usage();
    if (step == 1000) figures.rss_first = rss_kib();
    const bool evaluate_now = run.evaluation_due();
    if (evaluate_now) {
      const CurvePoint point = run.evaluate();
      accuracy = point.accuracy;
      note(point);
    }
    if (!o.checkpoint.empty() && (step % o.checkpoint_every == 0 || run.finished()))
      run.save_checkpoint(o.checkpoint);
    const Usage usage_after = usage();
    aside_cpu_seconds += usage_after.cpu_seconds - usage_before.cpu_seconds;
    aside_faults += usage_after.page_faults - usage_before.page_faults;
    // A TTY redraws one line ten times a second; a pipe or file gets a line
    // at every evaluation and every tenth of the run.
    const double seconds = since_start();
    const bool last = run.finished();
    const bool draw = tty ? (seconds - last_draw >= 0.1 || evaluate_now || last)
                          : (evaluate_now || last || step % std::max<int64_t>(1, steps / 10) == 0);
    if (!draw) continue;
    last_draw = seconds;
    char acc[64] = "";
    if (!std::isnan(accuracy) && by_dev)
      std::snprintf(acc, sizeof acc, "  dev WER %.1f%% (best %.1f%%)", 100 * (1 - accuracy),
                    100 * best_wer);
    else if (!std::isnan(accuracy))
      std::snprintf(acc, sizeof acc, "  held-out %.1f%%", 100 * accuracy);
    std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  %.1f steps/s  RSS %.1f MiB%s%s",
                 tty ? "\r\033[K" : "", static_cast<long long>(step), static_cast<long long>(steps),
                 loss, static_cast<double>(step - first_step) / std::max(seconds, 1e-9),
                 static_cast<double>(rss_kib()) / 1024, acc, tty ? "" : "\n");
    std::fflush(stderr);
  }
  const Usage usage_end = usage();
  figures.steps = run.steps_taken();
  figures.sitting_steps = figures.steps - first_step;
  figures.cpu_seconds = usage_end.cpu_seconds - usage_start.cpu_seconds - aside_cpu_seconds;
  figures.page_faults = usage_end.page_faults - usage_start.page_faults - aside_faults;
  figures.allocator = ag::allocator_stats();
  figures.allocator.hits -= allocator_start.hits;
  figures.allocator.misses -= allocator_start.misses;
  figures.seconds = run.seconds();  // every sitting's steps
  // The training loss of one batch is noisy: loss_tail averages the last
  // tenth of the steps (the ablation compares it between two models).
  const std::vector<double>& losses = run.losses();
  const auto taken = static_cast<int64_t>(losses.size());
  const int64_t tail_steps = std::max<int64_t>(1, taken / 10);
  figures.loss_tail = 0;
  for (int64_t s = 1; s <= taken; ++s)
    if (s > taken - tail_steps)
      figures.loss_tail += losses[static_cast<size_t>(s - 1)] / static_cast<double>(tail_steps);
  figures.loss_last = losses.empty() ? std::nan("") : losses.back();
  if (tty) std::fprintf(stderr, "\n");
  std::fprintf(stderr,
               "trained %lld steps in %.1f s (%.1f steps/s; %.1f CPU s, %.1f steps per CPU s; "
               "evaluation excluded); training loss %.4f (mean of the last %lld steps)\n",
               static_cast<long long>(figures.steps), figures.seconds,
               figures.steps / std::max(figures.seconds, 1e-9), figures.cpu_seconds,
               figures.sitting_steps / std::max(figures.cpu_seconds, 1e-9), figures.loss_tail,
               static_cast<long long>(tail_steps));
  if (figures.steps < steps)
    std::fprintf(stderr, "stopped at step %lld: %lld evaluations without a better dev WER\n",
                 static_cast<long long>(figures.steps), static_cast<long long>(o.patience));
  const TrainingRun::End end = run.finish();
  if (end.average)
    std::fprintf(
        stderr, "the mean of the last %lld evaluations' parameters: dev WER %.2f%%, PER %.2f%%\n",
        static_cast<long long>(std::min(o.average_last, static_cast<int64_t>(run.curve().size()))),
        100 * (1 - end.average->accuracy), 100 * end.average->pronunciation.per);
  figures.averaged = end.averaged;
  figures.best_step = end.best_step >= 0 ? end.best_step : figures.steps;
  if (end.best_step >= 0) {
    if (figures.averaged > 0)
      std::fprintf(stderr, "kept the mean of the last %lld evaluations' parameters\n",
                   static_cast<long long>(figures.averaged));
    else
      std::fprintf(stderr, "kept the parameters of step %lld (best dev WER %.2f%%)\n",
                   static_cast<long long>(figures.best_step), 100 * end.best_score);
  }
  if (!o.curve.empty()) write_curve(o.curve, run);
  return figures;
}

// 3. The held-out figures, measured once: dev (g2p) and test after training,
//    or of a loaded model for --stats (an untrained model's, with --steps 0,
//    would say nothing).
void score_splits(Translator& translator, LazyDataset& data, const Options& o, bool trained,
                  Scores& scores) {
  if (!trained && !(o.stats && o.evaluate.empty() && !o.load.empty())) return;
  const Dataset& d = data.get(translator.task);
  if (!d.dev().empty()) {
    scores.dev = evaluate(translator, d.dev(), 1000, o.beam);
    print_summary("dev", *scores.dev, translator.task);
  }
  if (o.skip_test && trained) return;
  scores.test = evaluate(translator, d.heldout(), 1000, o.beam);
  print_summary(translator.task == Task::G2p ? "test" : "held-out", *scores.test, translator.task);
}

// 4. --dump-heldout: the first N held-out examples with the model's outputs.
void dump_heldout(Translator& translator, LazyDataset& data, const Options& o) {
  const auto& heldout = data.get(translator.task).heldout();
  const size_t n = std::min(heldout.size(), static_cast<size_t>(o.dump_count));
  const std::vector<Example> examples(heldout.begin(), heldout.begin() + static_cast<long>(n));
  const Evaluation e = evaluate(translator, examples, 1000, o.beam);
  std::ofstream out(o.dump_path);
  if (!out) throw ag::Error("--dump-heldout: cannot write '" + o.dump_path + "'");
  for (size_t k = 0; k < n; ++k)
    out << examples[k].source << '\t' << examples[k].target << '\t' << e.outputs[k] << '\n';
}

// 5. --predict: each text's output with its alignment (a table, or JSON), its
//    beam's candidates, and --heatmap's pictures.
void predict_texts(Translator& translator, const Options& o) {
  const std::vector<Translation> translations =
      translate(translator, model_inputs(translator.task, o.predict), 1000, o.beam);
  const bool transformer = translator.config.model == "transformer";
  for (size_t k = 0; k < translations.size(); ++k) {
    const Translation& t = translations[k];
    const std::optional<TransformerMaps> maps =
        transformer && (o.json || !o.heatmap.empty())
            ? std::optional<TransformerMaps>(transformer_maps(translator, t))
            : std::nullopt;
    if (o.json) {
      std::cout << translation_json(t, maps ? &*maps : nullptr) << '\n';
    } else {
      std::cout << t.input << "  ->  " << t.output
                << (t.output_tokens.empty() || t.output_tokens.back() != "<eos>"
                        ? "   (no <eos> within the model's length)"
                        : "")
                << "\n"
                << alignment_table(t) << "\n";
      for (size_t i = 0; i < t.beam.size(); ++i)  // beam search: every candidate
        std::printf("  beam %zu: %-30s score %.4f  log P %.4f%s\n", i + 1, t.beam[i].output.c_str(),
                    t.beam[i].score, t.beam[i].log_prob, t.beam[i].finished ? "" : "  (no <eos>)");
      if (!t.beam.empty()) std::printf("\n");
    }
    if (!o.heatmap.empty()) {
      const std::string path = with_index(o.heatmap, k, translations.size());
      alignment_heatmap(t, path);
      if (maps)
        for (const std::string& written : transformer_heatmaps(t, *maps, path))
          std::fprintf(stderr, "wrote %s\n", written.c_str());
    }
  }
}

// 6. --predict-file. g2p: each word's pronunciations (the Pronouncer: a
//    lexicon first, the model's n best); a word that cannot be read is
//    reported with its line and skipped. Other tasks: a line per text.
//    Returns how many lines were skipped.
int64_t predict_file(Translator translator, const Options& o, PredictFigures& figures) {
  const std::vector<ListedWord> lines = read_words(o.predict_file);
  if (translator.task != Task::G2p) {
    if (o.nbest > 0 || !o.lexicons.empty())
      throw ag::Error("--nbest, --pmass and --lexicon pronounce words: the model in " +
                      o.load.front() + " was trained on '" + task_name(translator.task) + "'");
    std::vector<std::string> texts;
    for (const ListedWord& line : lines) texts.push_back(line.text);
    const std::vector<Translation> translations = translate(translator, texts, 1000, o.beam);
    for (const Translation& t : translations)
      std::cout << (o.json ? translation_json(t) : t.input + '\t' + t.output) << '\n';
    return 0;
  }
  Pronouncer pronouncer(std::move(translator));
  for (const std::string& path : o.lexicons) pronouncer.add_lexicon(path);
  std::vector<ListedWord> readable;
  for (const ListedWord& line : lines) {
    if (const std::optional<std::string> why = pronouncer.problem(Pronouncer::normalize(line.text)))
      std::fprintf(stderr, "attograd-translate: %s:%lld: %s; skipped\n", o.predict_file.c_str(),
                   static_cast<long long>(line.line), why->c_str());
    else
      readable.push_back(line);
  }
  std::vector<std::string> words;
  for (const ListedWord& line : readable) words.push_back(line.text);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Pronunciation> answers =
      words.empty() ? std::vector<Pronunciation>{}
                    : pronouncer.pronounce(words, {.nbest = std::max<int64_t>(o.nbest, 1),
                                                   .beam = o.beam,
                                                   .pmass = o.pmass.value_or(1.0)});
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  figures.words = static_cast<int64_t>(answers.size());
  figures.skipped = static_cast<int64_t>(lines.size() - readable.size());
  for (size_t k = 0; k < answers.size(); ++k) {
    figures.from_lexicon += answers[k].source == PronunciationSource::Lexicon;
    std::cout << (o.json ? pronunciation_json(words[k], answers[k]) + '\n'
                         : pronunciation_lines(words[k], answers[k]));
  }
  if (figures.skipped > 0)
    std::fprintf(stderr, "attograd-translate: %lld of %zu words skipped\n",
                 static_cast<long long>(figures.skipped), lines.size());
  return figures.skipped;
}

// 7. --stats: "key value" lines.
void print_stats(const Options& o, const TrainingFigures& f, const Scores& scores,
                 const PredictFigures& predicted, Task task, int64_t parameters) {
  std::cout << "steps " << f.steps << "\nparameters " << parameters << "\ntrain_seconds "
            << f.seconds << "\nsteps_per_sec " << (f.seconds > 0 ? f.steps / f.seconds : 0)
            << "\ntrain_cpu_seconds " << f.cpu_seconds << "\nsteps_per_cpu_sec "
            << (f.cpu_seconds > 0 ? f.sitting_steps / f.cpu_seconds : 0) << "\nloss_last "
            << f.loss_last << "\nloss_tail " << f.loss_tail << "\nbatch " << o.batch << "\nlr "
            << o.lr << "\ntrain_page_faults " << f.page_faults << "\ntrain_allocator_hits "
            << f.allocator.hits << "\ntrain_allocator_misses " << f.allocator.misses
            << "\nallocator_bytes_cached " << f.allocator.bytes_cached;
  if (scores.test) {
    std::cout << "\naccuracy " << scores.test->accuracy << "\nbleu " << scores.test->bleu;
    if (task == Task::Dates) std::cout << "\nalignment " << scores.test->alignment;
    if (task == Task::G2p)
      std::cout << "\ntest_wer " << scores.test->pronunciation.wer << "\ntest_per "
                << scores.test->pronunciation.per << "\ntest_words "
                << scores.test->pronunciation.words;
  }
  if (scores.dev)
    std::cout << "\ndev_wer " << scores.dev->pronunciation.wer << "\ndev_per "
              << scores.dev->pronunciation.per << "\ndev_words " << scores.dev->pronunciation.words
              << "\nbest_step " << f.best_step << "\naveraged_checkpoints " << f.averaged;
  if (scores.dict)
    std::cout << "\neval_wer " << scores.dict->pronunciation.wer << "\neval_per "
              << scores.dict->pronunciation.per << "\neval_words "
              << scores.dict->pronunciation.words;
  if (scores.attention)
    std::cout << "\neval_entropy " << scores.attention->entropy << "\neval_monotonic "
              << scores.attention->monotonic << "\neval_alignment_agreement "
              << scores.agreement->agreement << "\neval_alignment_phonemes "
              << scores.agreement->phonemes;
  if (!o.predict_file.empty())
    std::cout << "\npredict_words " << predicted.words << "\npredict_lexicon_words "
              << predicted.from_lexicon << "\npredict_skipped " << predicted.skipped
              << "\npredict_seconds " << predicted.seconds << "\npredict_words_per_sec "
              << (predicted.seconds > 0 ? predicted.words / predicted.seconds : 0);
  std::cout << "\nrss_kib_first " << (f.rss_first ? f.rss_first : rss_kib()) << "\nrss_kib_last "
            << rss_kib() << "\n";
}

// --alignment-reference: on --evaluate's words, the greedy answers' rows'
// entropy and monotonicity, and how often a phoneme's most-weighted letter
// spells it in the reference alignment (teacher-forced on the reference's
// pronunciations).
void measure_attention(Translator& translator, const Options& o, Scores& scores) {
  std::vector<std::string> words;
  for (const Example& e : cmudict_examples(read_cmudict(o.evaluate))) words.push_back(e.source);
  scores.attention = attention_measures(translate(translator, words, 1000, 1));
  scores.agreement =
      alignment_agreement(translator, read_alignment_reference(o.alignment_reference), words);
  std::fprintf(stderr,
               "attention on %zu words: row entropy %.4f nats, monotonic %.4f, alignment "
               "agreement %.4f (%lld phonemes, %lld pronunciations skipped)\n",
               words.size(), scores.attention->entropy, scores.attention->monotonic,
               scores.agreement->agreement, static_cast<long long>(scores.agreement->phonemes),
               static_cast<long long>(scores.agreement->skipped));
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
  const Cmudict dict = read_cmudict(o.evaluate);
  const std::vector<Example> examples = cmudict_examples(dict);
  std::vector<std::string> outputs;
  int64_t missing = 0;
  for (const Example& e : examples) {
    const auto it = answers.find(e.source);
    missing += it == answers.end();
    outputs.push_back(it == answers.end() ? "" : it->second);
  }
  Evaluation scored;
  scored.pronunciation = score_pronunciations(outputs, examples);
  print_summary(o.score_outputs.c_str(), scored, Task::G2p);
  if (missing > 0)
    std::fprintf(stderr, "%lld of the dictionary's words have no answer in %s (counted wrong)\n",
                 static_cast<long long>(missing), o.score_outputs.c_str());
  if (o.stats)
    std::cout << "eval_wer " << scored.pronunciation.wer << "\neval_per "
              << scored.pronunciation.per << "\neval_words " << scored.pronunciation.words
              << "\neval_missing " << missing << "\n";
  return 0;
}

int run(const Options& o) {
  if (!o.score_outputs.empty()) return score_outputs(o);
  ag::set_num_threads(static_cast<int>(o.threads));
  ag::manual_seed(o.seed);
  LazyDataset data(o);
  Translator translator = load_or_make(o, data);
  const int64_t steps = o.load.empty() ? o.steps.value_or(o.defaults.steps) : 0;
  TrainingFigures trained;
  if (steps > 0) trained = train_model(translator, data.get(translator.task), o, steps);
  Scores scores;
  score_splits(translator, data, o, steps > 0, scores);
  if (!o.save.empty()) {
    save_translator(o.save, translator);
    std::fprintf(stderr, "saved %s\n", o.save.c_str());
  }
  if (!o.evaluate.empty()) scores.dict = evaluate_dictionary(translator, o.evaluate, o.beam);
  if (!o.alignment_reference.empty()) measure_attention(translator, o, scores);
  if (o.dump_count > 0) dump_heldout(translator, data, o);
  if (!o.predict.empty()) predict_texts(translator, o);
  const Task task = translator.task;
  int64_t parameters = 0;
  for (const auto& [name, value] : translator.model->state_dict()) parameters += value.numel();
  PredictFigures predicted;
  int64_t skipped = 0;
  if (!o.predict_file.empty()) skipped = predict_file(std::move(translator), o, predicted);
  if (o.stats) print_stats(o, trained, scores, predicted, task, parameters);
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
